package bridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
)

// ReplayAge is how old (by its at) an asked event must be for a front-end
// to treat it as a replay: the runtime publishes an event as it happens,
// so only a consumer reading the stream from long ago (a first start, a
// long outage) sees one this old.
const ReplayAge = 30 * time.Second

// Replayed says ev, seen at now, is older than ReplayAge. An event
// without at is not.
func Replayed(ev *Event, now time.Time) bool {
	return !ev.At.IsZero() && now.Sub(ev.At) > ReplayAge
}

// stateTimeout bounds QuestionState.
const stateTimeout = 2 * time.Second

// QuestionState asks the runtime, as a trusted program (ask.v1.api.show
// without as), for the state of ev's question at ev's task version. An
// error means the runtime did not say; a front-end then shows the question
// (shown twice is better than a pending question hidden).
func QuestionState(ctx context.Context, nc *nats.Conn, ev *Event) (string, error) {
	v, err := ShowQuestion(ctx, nc, ev)
	if err != nil {
		return "", err
	}
	return v.State, nil
}

// ErrNotShown is the runtime's refusal of a show request (it does not
// know the question): asking again will not change it.
var ErrNotShown = errors.New("the runtime does not show the question")

// ShowQuestion asks the runtime, as a trusted program (ask.v1.api.show
// without as), for ev's question at ev's task version, within 2 s. A
// refusal wraps ErrNotShown; any other error means the runtime did not
// answer.
func ShowQuestion(ctx context.Context, nc *nats.Conn, ev *Event) (*QuestionView, error) {
	ctx, cancel := context.WithTimeout(ctx, stateTimeout)
	defer cancel()
	var reply ShowReply
	req := ShowRequest{Tenant: ev.Tenant, JobID: ev.JobID, QuestionID: ev.QuestionID, TaskVersion: ev.TaskVersion}
	if err := Request(ctx, nc, APIShow, req, &reply); err != nil {
		return nil, err
	}
	if reply.Error != "" {
		return nil, fmt.Errorf("%s: %w: %s", APIShow, ErrNotShown, reply.Error)
	}
	v := reply.Question
	if v == nil || v.Tenant != ev.Tenant || v.JobID != ev.JobID || v.QuestionID != ev.QuestionID || v.TaskVersion != ev.TaskVersion {
		return nil, fmt.Errorf("%s: %w: the reply is about another question", APIShow, ErrNotShown)
	}
	return v, nil
}

// StaleReminder says a reminder or escalation event, seen at now, should
// no longer reach anyone: its question's deadline has passed, or the event
// is a replay (a new consumer reads up to EventRetention back) and the
// runtime says the question no longer waits. When the runtime does not
// say, the reminder goes out: late is better than never.
func StaleReminder(ctx context.Context, nc *nats.Conn, ev *Event, now time.Time) bool {
	if !ev.Deadline.IsZero() && now.After(ev.Deadline) {
		return true
	}
	if !Replayed(ev, now) {
		return false
	}
	state, err := QuestionState(ctx, nc, ev)
	return err == nil && state != StatePending
}

// ReminderShowsQuestion says whether the reminder or escalation DM of ev
// to target may carry q's content. A restricted question's content is for
// its answerers, its owner, admins and owners (docs/contract.md "Who may
// do what"): the owner and admins steps remind only such people, but the
// answerers step reminds the tenant's operators when q names no
// answerers, and they may not read it.
func ReminderShowsQuestion(ev *Event, q *Question, target string) bool {
	switch {
	case q == nil || !q.Restricted():
		return true
	case target == q.Owner || slices.Contains(q.Answerers, target):
		return true
	case ev.Persons[target] != "":
		// People, not accounts: the owner's or an answerer's other
		// identity, or an answerer named as person:<name>.
		person := ev.Persons[target]
		if person == ev.Persons[q.Owner] || slices.Contains(q.Answerers, PersonPrefix+person) ||
			slices.ContainsFunc(q.Answerers, func(a string) bool { return ev.Persons[a] == person }) {
			return true
		}
	}
	return ev.Step == TargetOwner || ev.Step == TargetAdmins
}

// EndedEvent is the event that ended the question v shows, as far as the
// runtime's record tells it (nil while it waits): what a front-end that
// missed the event draws the card's outcome from. The record's states and
// the events share their names, but for a failure, which a timeout is
// when its text says so.
func (v *QuestionView) EndedEvent() *Event {
	if v.State == StatePending {
		return nil
	}
	typ := v.State
	if typ == StateFailed {
		typ = EventDeliveryFailed
		if v.Question != nil && v.Text == TimedOutText(v.Question.TimeoutDuration()) {
			typ = EventTimedOut
		}
	}
	return &Event{Type: typ, Tenant: v.Tenant, JobID: v.JobID, QuestionID: v.QuestionID, TaskVersion: v.TaskVersion,
		Question: v.Question, State: v.State, AskedAt: v.AskedAt, Deadline: v.Deadline, By: v.By, ByName: v.ByName, Via: v.Via,
		Answer: v.Answer, AnswerText: v.AnswerText, Comment: v.Comment, Text: v.Text, Messages: v.Messages, At: v.SettledAt}
}
