package runtime

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// attemptStore is what deciding answer attempts needs: one transaction
// deciding a batch, each attempt on what the ones before it left.
type attemptStore interface {
	DecideEach(ctx context.Context, n int, decide func(i int, l record.Lookup) (record.Decision, error)) ([]error, error)
}

// refusal is a decided "no" to an attempt; the question keeps waiting.
type refusal struct {
	reason string
	text   string
	fields map[string]string
}

// attemptItem is one attempt of a batch on its way to a decision.
type attemptItem struct {
	a      bridge.AnswerAttempt
	tenant string
	job    string
	seq    uint64 // the answers stream's sequence (attemptOrder)
	// delivered counts the times the consumer handed it out.
	delivered uint64
	msg       jetstream.Msg
	// also are the batch's other messages of the same attempt: the same
	// stored message delivered again (its AckWait ran out while it was
	// queued here) or the attempt published twice. They go where msg
	// goes: acknowledging one hands in the stored message.
	also []jetstream.Msg
	// key is the store's record of the attempt (AttemptKey), by which it
	// is decided once.
	key     string
	rec     *record.Record
	refs    []bridge.MessageRef // the messages showing the question
	checked *bridge.CheckedAnswer
	ref     *refusal
	settle  *record.Settlement
	// step, on an approval's approve or deny, is what the policy makes of
	// it (proposals.go); approve is set when it is recorded, not settled.
	step    *approvalStep
	approve *record.ApprovalRecord
	// delegate and snooze are a delegate's or a snooze's record (delegate.go).
	delegate *record.Delegation
	snooze   *record.Snooze
	notify   []string // subjects to tell once decided (bridge.HeaderDecidedTo)
}

// msgs are every message of the batch that carries the attempt.
func (it *attemptItem) msgs() []jetstream.Msg {
	return append([]jetstream.Msg{it.msg}, it.also...)
}

// decideAttempts decides a batch. The checks run in the order the
// contract gives: known question, still pending, task version current,
// answerer allowed, right kind, fields valid. Accepted attempts settle
// their question, resume the job and announce it; refused ones tell the
// answerer. All of it runs in one write transaction, each attempt decided
// on the state the attempts before it left, so a second answer to the same
// question in one batch is refused naming the first. Attempts are decided
// in the stream's order; one that must wait for an earlier attempt held
// elsewhere is handed back (orderAttempts).
func (r *Runtime) decideAttempts(ctx context.Context, msgs []jetstream.Msg) error {
	now := r.stamp()
	items := r.parseAttempts(msgs)
	if len(items) == 0 {
		r.order.decidedHere(streamSeqs(msgs, nil))
		return nil
	}
	waiting, err := r.orderAttempts(ctx, items)
	if err != nil {
		return err
	}
	if len(waiting) > 0 {
		items = slices.DeleteFunc(items, func(it *attemptItem) bool { return waiting[it] })
		for it := range waiting {
			r.log.Info("answer attempt waits for an earlier one of its question", "tenant", it.tenant, "job", it.job, "question", it.a.QuestionID, "seq", it.seq)
			// Handed back, with every copy of it in the batch: the
			// batch's Ack of them is then refused (bridge.Held) and
			// sends nothing.
			for _, m := range it.msgs() {
				_ = m.NakWithDelay(attemptRetry)
			}
		}
	}
	if err := r.decideInOrder(ctx, items, now); err != nil {
		return err
	}
	r.order.decidedHere(streamSeqs(msgs, waiting))
	return nil
}

// decideInOrder decides items, sorted by stream sequence, in one
// transaction.
func (r *Runtime) decideInOrder(ctx context.Context, items []*attemptItem, now time.Time) error {
	if len(items) == 0 {
		return nil
	}
	errs, err := r.deciding.DecideEach(ctx, len(items), func(i int, l record.Lookup) (record.Decision, error) {
		if i == 0 {
			if err := l.Prefetch(ctx, attemptKeys(items)); err != nil {
				return record.Decision{}, err
			}
		}
		it := items[i]
		if err := r.decideItem(ctx, l, it, now); err != nil {
			return record.Decision{}, err
		}
		if it.ref == nil && isRequest(it.checked.Action) {
			d, ref := r.request(it, now)
			if ref == nil {
				return d, nil
			}
			it.ref, it.delegate, it.snooze = ref, nil, nil
		}
		if it.ref != nil {
			ref := r.refusal(it.rec, &it.a, it.ref, now)
			ref.AttemptID = it.key
			return record.Decision{Refuse: ref}, nil
		}
		if it.step != nil && !it.step.settles {
			it.approve = r.approvalRecord(it.rec, it.refs, it.step, &it.a, now)
			it.approve.AttemptID = it.key
			return record.Decision{Approve: it.approve}, nil
		}
		var status *bridge.ProposalStatus
		if it.step != nil {
			status = r.stepStatus(it.step, it.step.state(it.checked.Action))
		}
		it.settle = r.settlement(it.rec, it.refs, &it.a, it.checked, status, now)
		it.settle.AttemptID = it.key
		if it.step != nil {
			it.settle.Proposal = it.step.decision(it.checked.Action)
			it.settle.Log = append(it.settle.Log, approvalLog(it.rec, it.step, &it.a, it.settle.Via, now))
		}
		return record.Decision{Settle: it.settle}, nil
	})
	if err != nil {
		return err
	}
	for i, it := range items {
		if err := r.decided(it, errs[i], now); err != nil {
			return err
		}
	}
	r.wakeRelay()
	r.notifyDecided(items)
	return nil
}

// decided counts and logs one decided attempt of a batch; err is its
// outcome in the store.
func (r *Runtime) decided(it *attemptItem, err error, now time.Time) error {
	switch {
	case errors.Is(err, record.ErrDuplicate):
		return nil // decided before; its outcome was announced then
	case err != nil:
		// The question was read pending in this very transaction; if
		// that ever fails, deciding the batch again reads it anew.
		return fmt.Errorf("runtime: attempt %s: %w", it.a.AttemptID, err)
	}
	r.metrics.attempts.WithLabelValues(r.metrics.viaOf(&it.a)).Inc()
	switch {
	case it.approve != nil:
		r.log.Info("approval recorded", "tenant", it.rec.Tenant, "job", it.rec.JobID, "question", it.rec.QuestionID,
			"by", it.a.By, "approvals", len(it.step.approvals), "required", it.step.required)
	case it.delegate != nil || it.snooze != nil:
		r.log.Info("question "+it.checked.Action+"d", "tenant", it.rec.Tenant, "job", it.rec.JobID, "question", it.rec.QuestionID,
			"by", it.a.By, "delegate", it.a.Delegate, "snooze", it.a.Snooze)
	case it.settle != nil:
		r.metrics.settled.WithLabelValues(it.settle.State).Inc()
		r.metrics.latency.Observe(now.Sub(it.rec.AskedAt).Seconds())
		r.log.Info("question settled", "tenant", it.rec.Tenant, "job", it.rec.JobID, "question", it.rec.QuestionID,
			"state", it.settle.State, "by", it.a.By, "via", it.settle.Via)
	default:
		r.metrics.refusals.WithLabelValues(it.ref.reason).Inc()
		r.log.Info("answer refused", "tenant", it.a.Tenant, "job", it.a.JobID, "question", it.a.QuestionID, "by", it.a.By, "reason", it.ref.reason)
	}
	return nil
}

// decideItem runs the checks of one attempt not refused on sight, and for
// an approval's approve or deny the policy's (weighApproval).
func (r *Runtime) decideItem(ctx context.Context, l record.Lookup, it *attemptItem, now time.Time) error {
	if it.ref != nil {
		return nil
	}
	var err error
	it.rec, it.refs, it.checked, it.ref, err = r.decide(ctx, l, &it.a, it.tenant, it.job)
	if err != nil || it.ref != nil || it.rec.Kind != bridge.KindApproval {
		return err // a question's body is not read twice on the answer path
	}
	q := decodeBody(it.rec)
	if act := it.checked.Action; !q.IsApproval() || q.Proposal == nil || (act != bridge.ActionApprove && act != bridge.ActionDeny) {
		return nil // a decline leaves the proposal undecided
	}
	a := it.a
	a.Action = it.checked.Action
	it.step, it.ref, err = r.weighApproval(ctx, l, it.rec, q, &a, now)
	return err
}

// attemptKeys are the questions a batch's attempts name, as decide looks
// them up.
func attemptKeys(items []*attemptItem) []record.Key {
	keys := make([]record.Key, 0, len(items))
	for _, it := range items {
		if it.ref == nil {
			keys = append(keys, record.Key{Tenant: it.tenant, JobID: it.job, QuestionID: it.a.QuestionID, TaskVersion: it.a.TaskVersion})
		}
	}
	return keys
}

// notifyDecided tells the front-ends that asked (bridge.HeaderDecidedTo)
// that their attempts are decided and committed, duplicates included. It
// is best effort: the decision's event tells them too.
func (r *Runtime) notifyDecided(items []*attemptItem) {
	for _, it := range items {
		for _, to := range it.notify {
			typ, text := it.decision()
			msg := &nats.Msg{Subject: to, Data: []byte(it.a.AttemptID), Header: nats.Header{}}
			msg.Header.Set(bridge.HeaderDecision, typ)
			if text != "" {
				msg.Header.Set(bridge.HeaderDecisionText, text)
			}
			if err := r.nc.PublishMsg(msg); err != nil {
				r.log.Debug("tell a front-end its attempt is decided", "attempt", it.a.AttemptID, "err", err)
			}
		}
	}
}

// decision is what became of the attempt, as the event it caused says
// (its type and the text a person reads); empty for a duplicate decided
// before.
func (it *attemptItem) decision() (typ, text string) {
	if it.ref != nil {
		return bridge.EventRefused, it.ref.text
	}
	var rows []record.Message
	switch {
	case it.approve != nil:
		rows = it.approve.Outbox
	case it.delegate != nil:
		rows = it.delegate.Outbox
	case it.snooze != nil:
		rows = it.snooze.Outbox
	case it.settle != nil:
		rows = it.settle.Outbox
	}
	for _, m := range rows {
		var ev bridge.Event
		if strings.HasPrefix(m.Subject, bridge.PrefixEvent+".") && json.Unmarshal(m.Data, &ev) == nil && ev.AttemptID == it.a.AttemptID {
			return ev.Type, ev.Text
		}
	}
	return "", ""
}

// decide runs the checks; it returns the question and the messages
// showing it (when known) and either the checked answer or the refusal.
func (r *Runtime) decide(ctx context.Context, l record.Lookup, a *bridge.AnswerAttempt, tenant, job string) (*record.Record, []bridge.MessageRef, *bridge.CheckedAnswer, *refusal, error) {
	r.people.seen(a.By)
	if a.Tenant != tenant || a.JobID != job || !bridge.ValidToken(a.QuestionID) {
		return nil, nil, nil, &refusal{reason: bridge.RefusedUnknown, text: fmt.Sprintf("There is no question %q in job %s.", a.QuestionID, job)}, nil
	}
	key := record.Key{Tenant: tenant, JobID: job, QuestionID: a.QuestionID, TaskVersion: a.TaskVersion}
	found, err := l.FindAnswerable(ctx, key)
	if errors.Is(err, record.ErrNotFound) && a.TaskVersion != 0 {
		key.TaskVersion = 0
		latest, lerr := l.Find(ctx, key)
		if lerr == nil {
			if ref := strangerRefusal(a, r.o.Roles.accessFor(tenant, a.By, a.Roles, decodeBody(latest))); ref != nil {
				return latest, nil, nil, ref, nil
			}
			return latest, nil, nil, staleRefusal(a.TaskVersion, latest.TaskVersion), nil
		}
		if !errors.Is(lerr, record.ErrNotFound) {
			return nil, nil, nil, nil, lerr
		}
	}
	if errors.Is(err, record.ErrNotFound) {
		return nil, nil, nil, &refusal{reason: bridge.RefusedUnknown, text: fmt.Sprintf("There is no question %s in job %s.", a.QuestionID, job)}, nil
	}
	if err != nil {
		return nil, nil, nil, nil, err
	}
	rec := found.Record
	q := decodeBody(rec)
	acc := r.approverAccess(tenant, a, q, r.o.Roles.accessFor(tenant, a.By, a.Roles, q))
	if ref := strangerRefusal(a, acc); ref != nil {
		return rec, nil, nil, ref, nil
	}
	if a.ExactVersion && a.TaskVersion == 0 && rec.TaskVersion != 0 {
		return rec, nil, nil, staleRefusal(0, rec.TaskVersion), nil
	}
	if rec.State != bridge.StatePending {
		return rec, nil, nil, notPending(rec), nil
	}
	if found.JobVersion > rec.TaskVersion {
		return rec, nil, nil, staleRefusal(rec.TaskVersion, found.JobVersion), nil
	}
	action := a.Action
	if action == "" {
		action = bridge.ActionAnswer
	}
	if !(acc.Answer || (acc.Decline && action == bridge.ActionDecline)) {
		return rec, nil, nil, &refusal{reason: bridge.RefusedForbidden, text: forbiddenText(a.By, acc, action, q)}, nil
	}
	if isRequest(action) {
		return rec, found.Messages, &bridge.CheckedAnswer{Action: action}, nil, nil
	}
	checked, aerr := bridge.CheckAnswer(q, a.Action, a.Answer, a.Comment)
	if aerr != nil {
		return rec, nil, nil, &refusal{reason: aerr.Reason, text: aerr.Text, fields: aerr.Fields}, nil
	}
	return rec, found.Messages, checked, nil, nil
}

// strangerRefusal refuses someone who may not even know the question
// exists (no role in its tenant, not its owner or an answerer) before
// anything else: who settled it, when, or the task's version is not theirs
// to learn.
func strangerRefusal(a *bridge.AnswerAttempt, acc access) *refusal {
	if acc.Exists {
		return nil
	}
	action := a.Action
	if action == "" {
		action = bridge.ActionAnswer
	}
	return &refusal{reason: bridge.RefusedForbidden, text: forbiddenText(a.By, acc, action, nil)}
}

func staleRefusal(had, current int64) *refusal {
	return &refusal{reason: bridge.RefusedStale, text: fmt.Sprintf(
		"This answer is stale: it belongs to task version %d, and the task is now at version %d.", had, current)}
}

// notPending says who settled the question and when.
func notPending(rec *record.Record) *refusal {
	state := rec.State
	q := decodeBody(rec)
	expired := expiresFirst(q, rec.Deadline) && rec.Text == bridge.ProposalExpiredText(q.Proposal.ID, q.Proposal.ExpiresAt)
	if state == bridge.StateFailed && (expired || rec.Text == bridge.TimedOutText(q.TimeoutDuration())) {
		// on_timeout: fail ends a question failed, but to the person
		// clicking its card it timed out like any other.
		state = bridge.StateTimedOut
	}
	reason, text := bridge.NotPendingText(state, rec.By, rec.ByName, rec.SettledAt, rec.TaskVersion)
	return &refusal{reason: reason, text: text}
}

// settlement builds the settlement of an accepted attempt: the new state,
// the event for the front-ends and the resume for the agent.
// proposal, on an approval, is its proposal as the settlement leaves it.
func (r *Runtime) settlement(rec *record.Record, refs []bridge.MessageRef, a *bridge.AnswerAttempt, checked *bridge.CheckedAnswer, proposal *bridge.ProposalStatus, now time.Time) *record.Settlement {
	raw := a.Answer
	a.Action, a.Answer = checked.Action, checked.Value
	display := checked.Display
	via := a.Via
	if via == "" {
		via = platformOf(a.By)
	}
	st := record.Settlement{
		Question: rec.ID, Action: a.Action, AnswerRaw: raw, Answer: a.Answer, AnswerText: display,
		Comment: a.Comment, By: a.By, ByName: a.ByName, Via: via, At: now, AttemptID: a.AttemptID,
	}
	ev := eventFor(rec, bridge.EventAnswered, now)
	res := resumeFor(rec, bridge.OutcomeAnswered, "", now)
	// Who answered is a person when ASK_PEOPLE links the identity.
	person := r.people.directory().personOf(a.By)
	switch a.Action {
	case bridge.ActionDecline:
		st.State = bridge.StateDeclined
		st.Text = bridge.DeclinedText(a.By, cmp.Or(person, a.ByName), a.Comment)
		ev.Type, ev.EventID = bridge.EventDeclined, eventID(rec, bridge.EventDeclined)
		res.Outcome = bridge.OutcomeDeclined
	case bridge.ActionDeny:
		st.State = bridge.StateAnswered
		st.Text = bridge.DeniedText(a.Comment)
	default:
		st.State = bridge.StateAnswered
		st.Text = bridge.AnsweredText(a.Answer)
	}
	ev.State = st.State
	ev.By, ev.ByName, ev.Via, ev.Person = a.By, a.ByName, via, person
	ev.Answer, ev.AnswerText, ev.Comment, ev.Text = a.Answer, display, a.Comment, st.Text
	ev.AttemptID, ev.ReplyTo, ev.Messages = a.AttemptID, a.ReplyTo, refs
	ev.Proposal = proposal
	res.Text, res.Answer, res.Comment = st.Text, a.Answer, a.Comment
	res.By, res.ByName, res.Via, res.Person = a.By, a.ByName, via, person
	st.Outbox = []record.Message{eventMsg(ev), resumeMsg(res)}
	return &st
}

// refusal builds the record of a refused attempt and the event telling the
// answerer; the question waits on.
func (r *Runtime) refusal(rec *record.Record, a *bridge.AnswerAttempt, ref *refusal, now time.Time) *record.Refusal {
	ev := bridge.Event{
		Type: bridge.EventRefused, Tenant: a.Tenant, JobID: a.JobID, QuestionID: a.QuestionID, TaskVersion: a.TaskVersion,
		To: a.By, By: a.By, ByName: a.ByName, Via: a.Via, Reason: ref.reason, Text: ref.text, FieldErrors: ref.fields,
		AttemptID: a.AttemptID, ReplyTo: a.ReplyTo, At: now,
	}
	var question int64
	if rec != nil {
		question = rec.ID
		if ev.TaskVersion == 0 {
			ev.TaskVersion = rec.TaskVersion
		}
		ev.State = rec.State
		ev.AskedAt, ev.Deadline = rec.AskedAt, rec.Deadline
	}
	ev.EventID = fmt.Sprintf("%s.%s.%s.refused.%s", a.Tenant, a.JobID, a.QuestionID, a.AttemptID)
	return &record.Refusal{AttemptID: a.AttemptID, Question: question, At: now, Outbox: []record.Message{eventMsg(ev)},
		Log: []record.LogEntry{refusedLog(a, ref, ev.TaskVersion, now)}}
}

// refusedLog records a refused attempt in its job's log, so the trace
// shows it (docs/design.md "The trace"). The subject named the job; a
// question id that is no token is kept out of the entry's column.
func refusedLog(a *bridge.AnswerAttempt, ref *refusal, version int64, now time.Time) record.LogEntry {
	action := a.Action
	if action == "" {
		action = bridge.ActionAnswer
	}
	body, _ := json.Marshal(refusedLogBody{By: bridge.Truncate(a.By, 200), Action: bridge.Truncate(action, 40),
		Reason: ref.reason, Text: ref.text, AttemptID: bridge.Truncate(a.AttemptID, 200), TaskVersion: version})
	e := record.LogEntry{Tenant: a.Tenant, JobID: a.JobID, Kind: record.LogRefused, Body: body, At: now}
	if bridge.ValidToken(a.QuestionID) {
		e.QuestionID = a.QuestionID
	}
	return e
}

// viaOf is the front-end an attempt came through, for the metrics: its
// via when known, or else the platform of its answerer's identity.
func (m *metrics) viaOf(a *bridge.AnswerAttempt) string {
	if v := m.frontEnd(a.Via); v != otherFrontEnd {
		return v
	}
	return m.frontEnd(platformOf(a.By))
}

func platformOf(id string) string {
	for i := 0; i < len(id); i++ {
		if id[i] == ':' {
			return id[:i]
		}
	}
	return ""
}
