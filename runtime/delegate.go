package runtime

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// The job log's bodies of a delegation and a snooze (docs/design.md "The
// trace").
type (
	delegatedLogBody struct {
		By          string `json:"by"`
		ByName      string `json:"by_name"`
		To          string `json:"to"`
		Via         string `json:"via"`
		AttemptID   string `json:"attempt_id"`
		TaskVersion int64  `json:"task_version"`
	}
	snoozedLogBody struct {
		By          string    `json:"by"`
		Snooze      string    `json:"snooze"`
		Until       time.Time `json:"until"`
		Via         string    `json:"via"`
		AttemptID   string    `json:"attempt_id"`
		TaskVersion int64     `json:"task_version"`
	}
)

// isRequest says an action asks something of a pending question without
// answering it: delegate or snooze (docs/contract.md "Delegate and
// snooze"). Those who may answer may ask it.
func isRequest(action string) bool {
	return action == bridge.ActionDelegate || action == bridge.ActionSnooze
}

// request is the decision on a delegate or a snooze its sender may make,
// or why it is refused.
func (r *Runtime) request(it *attemptItem, now time.Time) (record.Decision, *refusal) {
	if it.checked.Action == bridge.ActionDelegate {
		d, ref := r.delegation(it, now)
		it.delegate = d
		return record.Decision{Delegate: d}, ref
	}
	s, ref := r.snooze(it, now)
	it.snooze = s
	return record.Decision{Snooze: s}, ref
}

// delegation makes a.Delegate an answerer of the question: the question
// is written anew with them among its answerers, and the delegated event
// redraws its cards and DMs them (Targets).
func (r *Runtime) delegation(it *attemptItem, now time.Time) (*record.Delegation, *refusal) {
	a, rec := &it.a, it.rec
	q := decodeBody(rec)
	to := strings.TrimSpace(a.Delegate)
	dir := r.people.directory()
	// One person, whichever of their identities (ASK_PEOPLE) is named.
	named := func(id string) bool { return dir.same(id, to) }
	switch err := bridge.CheckIdentity(to); {
	case to == "":
		return nil, &refusal{reason: bridge.RefusedInvalid, text: "delegate: name the person to ask, such as slack:U0DANA."}
	case err != nil:
		return nil, &refusal{reason: bridge.RefusedInvalid, text: "delegate: " + err.Error()}
	case named(a.By):
		return nil, &refusal{reason: bridge.RefusedInvalid, text: "You may answer this question yourself: ask someone else."}
	case slices.ContainsFunc(q.Answerers, named) || named(q.Owner):
		return nil, &refusal{reason: bridge.RefusedInvalid, text: to + " is already asked to answer this question."}
	}
	via := cmpVia(a)
	q.Answerers = append(q.Answerers, to)
	q.Delegations = append(q.Delegations, bridge.Delegation{By: a.By, ByName: a.ByName, To: to, At: now.UTC()})
	body, _ := json.Marshal(q)
	text := bridge.DelegatedText(a.By, a.ByName, to)
	ev := eventFor(rec, bridge.EventDelegated, now)
	ev.EventID += "." + a.AttemptID
	ev.Question, ev.State, ev.Messages = q, bridge.StatePending, it.refs
	ev.By, ev.ByName, ev.Via, ev.Delegate, ev.Text = a.By, a.ByName, via, to, text
	ev.Targets = []string{to} // the DM that asks them
	ev.AttemptID, ev.ReplyTo = a.AttemptID, a.ReplyTo
	lb, _ := json.Marshal(delegatedLogBody{By: a.By, ByName: a.ByName, To: to, Via: via, AttemptID: a.AttemptID, TaskVersion: rec.TaskVersion})
	return &record.Delegation{AttemptID: it.key, Question: rec.ID, Body: body, By: a.By, Via: via, Reason: text, At: now,
		Outbox: []record.Message{eventMsg(ev)},
		Log:    []record.LogEntry{{Tenant: rec.Tenant, JobID: rec.JobID, Kind: record.LogDelegated, QuestionID: rec.QuestionID, Body: lb, At: now}},
	}, nil
}

// snooze moves the sender's next reminder of the question: until then
// the ladder's reminders skip them, and at the end one reminds them
// (ladder.go). Neither the timeout nor anyone else's reminders move.
func (r *Runtime) snooze(it *attemptItem, now time.Time) (*record.Snooze, *refusal) {
	a, rec := &it.a, it.rec
	until, ok := SnoozeUntil(a.Snooze, now, r.o.TimeZone)
	if !ok {
		return nil, &refusal{reason: bridge.RefusedInvalid, text: fmt.Sprintf("snooze: must be 1h, 4h or tomorrow, not %q", a.Snooze)}
	}
	dir := r.people.directory()
	if !slices.ContainsFunc(r.targets(decodeBody(rec), bridge.TargetAnswerers), func(id string) bool { return dir.same(id, a.By) }) {
		// Nothing to move: a snooze's end would remind someone never reminded.
		return nil, &refusal{reason: bridge.RefusedInvalid, text: "You are not reminded of this question, so there is no reminder to move: " +
			"its answerers are (or the operators, when it names none)."}
	}
	via := cmpVia(a)
	text := bridge.SnoozedText(until, rec.Deadline, r.o.TimeZone)
	ev := eventFor(rec, bridge.EventSnoozed, now)
	ev.EventID += "." + a.AttemptID
	ev.State, ev.Messages = bridge.StatePending, it.refs
	ev.By, ev.ByName, ev.Via, ev.To, ev.Until, ev.Text = a.By, a.ByName, via, a.By, until.UTC(), text
	ev.AttemptID, ev.ReplyTo = a.AttemptID, a.ReplyTo
	lb, _ := json.Marshal(snoozedLogBody{By: a.By, Snooze: a.Snooze, Until: until.UTC(), Via: via, AttemptID: a.AttemptID, TaskVersion: rec.TaskVersion})
	return &record.Snooze{AttemptID: it.key, Question: rec.ID, Identity: a.By, Until: until, Via: via, Reason: text, At: now,
		Outbox: []record.Message{eventMsg(ev)},
		Log:    []record.LogEntry{{Tenant: rec.Tenant, JobID: rec.JobID, Kind: record.LogSnoozed, QuestionID: rec.QuestionID, Body: lb, At: now}},
	}, nil
}

// SnoozeUntil is when a snooze of kind sent at now ends: an hour or four
// later, or tomorrow at 09:00 in loc (UTC when nil).
func SnoozeUntil(kind string, now time.Time, loc *time.Location) (time.Time, bool) {
	switch kind {
	case bridge.SnoozeHour:
		return now.Add(time.Hour), true
	case bridge.SnoozeHours4:
		return now.Add(4 * time.Hour), true
	case bridge.SnoozeTomorrow:
		if loc == nil {
			loc = time.UTC
		}
		y, m, d := now.In(loc).Date()
		return time.Date(y, m, d+1, 9, 0, 0, 0, loc), true
	}
	return time.Time{}, false
}

func cmpVia(a *bridge.AnswerAttempt) string {
	if a.Via != "" {
		return a.Via
	}
	return platformOf(a.By)
}
