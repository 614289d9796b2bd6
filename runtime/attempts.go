package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store"
)

// refusal is a decided "no" to an attempt; the question keeps waiting.
type refusal struct {
	reason string
	text   string
	fields map[string]string
}

// handleAttempt decides one answer attempt. The checks run in the order
// the contract gives: known question, still pending, task version current,
// answerer allowed, right kind, fields valid. Then one transaction settles
// the question, resumes the job and announces it.
func (r *Runtime) handleAttempt(ctx context.Context, msg jetstream.Msg) error {
	tenant, job, ok := subjectKey(msg.Subject(), bridge.PrefixAnswer)
	if !ok {
		r.log.Warn("answer attempt on a subject without a valid tenant and job; dropped", "subject", msg.Subject())
		return nil
	}
	var a bridge.AnswerAttempt
	if err := json.Unmarshal(msg.Data(), &a); err != nil {
		r.log.Warn("malformed answer attempt dropped", "subject", msg.Subject(), "err", err)
		return nil
	}
	if a.Tenant == "" {
		a.Tenant = tenant
	}
	if a.JobID == "" {
		a.JobID = job
	}
	if a.AttemptID == "" {
		if meta, err := msg.Metadata(); err == nil {
			a.AttemptID = fmt.Sprintf("seq-%d", meta.Sequence.Stream)
		}
	}
	if err := bridge.CheckIdentity(a.By); err != nil {
		r.log.Warn("answer attempt without a valid identity dropped", "subject", msg.Subject(), "attempt", a.AttemptID)
		return nil
	}
	seen, err := r.st.SeenAttempt(ctx, a.AttemptID)
	if err != nil {
		return err
	}
	if seen {
		return nil
	}
	now := time.Now().UTC()
	rec, checked, ref := r.decide(ctx, &a, tenant, job)
	if ref == nil {
		err := r.settle(ctx, rec, &a, checked, now)
		if errors.Is(err, store.ErrNotPending) {
			// Someone settled it between our read and our write.
			if fresh, ferr := r.st.Get(ctx, rec.ID); ferr == nil {
				rec, ref = fresh, notPending(fresh)
			} else {
				return ferr
			}
		} else if errors.Is(err, store.ErrDuplicate) {
			return nil
		} else if err != nil {
			return err
		}
	}
	if ref == nil {
		return nil
	}
	return r.refuse(ctx, rec, &a, ref, now)
}

// decide runs the checks; it returns the question (when known) and either
// the checked answer or the refusal.
func (r *Runtime) decide(ctx context.Context, a *bridge.AnswerAttempt, tenant, job string) (*store.Record, *bridge.CheckedAnswer, *refusal) {
	if a.Tenant != tenant || a.JobID != job || !bridge.ValidToken(a.QuestionID) {
		return nil, nil, &refusal{reason: bridge.RefusedUnknown, text: fmt.Sprintf("There is no question %q in job %s.", a.QuestionID, job)}
	}
	key := store.Key{Tenant: tenant, JobID: job, QuestionID: a.QuestionID, TaskVersion: a.TaskVersion}
	rec, err := r.st.Find(ctx, key)
	if errors.Is(err, store.ErrNotFound) && a.TaskVersion != 0 {
		key.TaskVersion = 0
		if latest, lerr := r.st.Find(ctx, key); lerr == nil {
			return latest, nil, staleRefusal(a.TaskVersion, latest.TaskVersion)
		}
	}
	if err != nil {
		return nil, nil, &refusal{reason: bridge.RefusedUnknown, text: fmt.Sprintf("There is no question %s in job %s.", a.QuestionID, job)}
	}
	if rec.State != bridge.StatePending {
		return rec, nil, notPending(rec)
	}
	if current, err := r.st.JobVersion(ctx, tenant, job); err == nil && current > rec.TaskVersion {
		return rec, nil, staleRefusal(rec.TaskVersion, current)
	}
	q := decodeBody(rec)
	acc := r.o.Roles.accessFor(a.By, a.Roles, q)
	action := a.Action
	if action == "" {
		action = bridge.ActionAnswer
	}
	if !(acc.Answer || (acc.Decline && action == bridge.ActionDecline)) {
		return rec, nil, &refusal{reason: bridge.RefusedForbidden, text: forbiddenText(a.By, acc, action)}
	}
	checked, aerr := bridge.CheckAnswer(q, a.Action, a.Answer, a.Comment)
	if aerr != nil {
		return rec, nil, &refusal{reason: aerr.Reason, text: aerr.Text, fields: aerr.Fields}
	}
	return rec, checked, nil
}

func staleRefusal(had, current int64) *refusal {
	return &refusal{reason: bridge.RefusedStale, text: fmt.Sprintf(
		"This answer is stale: it belongs to task version %d, and the task is now at version %d.", had, current)}
}

// notPending says who settled the question and when.
func notPending(rec *store.Record) *refusal {
	at := rec.SettledAt.UTC().Format(time.RFC3339)
	var text string
	switch rec.State {
	case bridge.StateAnswered:
		text = fmt.Sprintf("This question was already answered by %s at %s.", bridge.DisplayIdentity(rec.By, rec.ByName), at)
	case bridge.StateDeclined:
		text = fmt.Sprintf("This question was already declined by %s at %s.", bridge.DisplayIdentity(rec.By, rec.ByName), at)
	case bridge.StateTimedOut:
		text = fmt.Sprintf("This question timed out at %s; nobody answered it in time.", at)
	case bridge.StateCancelled:
		text = fmt.Sprintf("This question was cancelled at %s.", at)
	case bridge.StateSuperseded:
		return &refusal{reason: bridge.RefusedStale, text: fmt.Sprintf(
			"This answer is stale: the question belongs to task version %d, which a newer version of the task replaced at %s.", rec.TaskVersion, at)}
	default:
		text = fmt.Sprintf("This question is no longer waiting for an answer (%s at %s).", rec.State, at)
	}
	return &refusal{reason: bridge.RefusedNotPending, text: text}
}

// settle commits an accepted attempt with its event and resume.
func (r *Runtime) settle(ctx context.Context, rec *store.Record, a *bridge.AnswerAttempt, checked *bridge.CheckedAnswer, now time.Time) error {
	raw := a.Answer
	a.Action, a.Answer = checked.Action, checked.Value
	display := checked.Display
	refs, err := r.st.Messages(ctx, rec.ID)
	if err != nil {
		return err
	}
	via := a.Via
	if via == "" {
		via = platformOf(a.By)
	}
	st := store.Settlement{
		Question: rec.ID, Action: a.Action, AnswerRaw: raw, Answer: a.Answer, AnswerText: display,
		Comment: a.Comment, By: a.By, ByName: a.ByName, Via: via, At: now, AttemptID: a.AttemptID,
	}
	ev := eventFor(rec, bridge.EventAnswered, now)
	res := resumeFor(rec, bridge.OutcomeAnswered, "", now)
	switch a.Action {
	case bridge.ActionDecline:
		st.State = bridge.StateDeclined
		st.Text = bridge.DeclinedText(a.By, a.ByName, a.Comment)
		ev = eventFor(rec, bridge.EventDeclined, now)
		res.Outcome = bridge.OutcomeDeclined
	case bridge.ActionDeny:
		st.State = bridge.StateAnswered
		st.Text = bridge.DeniedText(a.Comment)
	default:
		st.State = bridge.StateAnswered
		st.Text = bridge.AnsweredText(a.Answer)
	}
	ev.State = st.State
	ev.By, ev.ByName, ev.Via = a.By, a.ByName, via
	ev.Answer, ev.AnswerText, ev.Comment, ev.Text = a.Answer, display, a.Comment, st.Text
	ev.AttemptID, ev.ReplyTo, ev.Messages = a.AttemptID, a.ReplyTo, refs
	res.Text, res.Answer, res.Comment = st.Text, a.Answer, a.Comment
	res.By, res.ByName, res.Via = a.By, a.ByName, via
	st.Outbox = []store.Message{eventMsg(ev), resumeMsg(res)}
	if err := r.st.Settle(ctx, st); err != nil {
		return err
	}
	r.metrics.settled.WithLabelValues(st.State).Inc()
	r.metrics.latency.Observe(now.Sub(rec.AskedAt).Seconds())
	r.wakeRelay()
	r.log.Info("question settled", "tenant", rec.Tenant, "job", rec.JobID, "question", rec.QuestionID, "state", st.State, "by", a.By, "via", via)
	return nil
}

// refuse records the refusal and tells the answerer; the question waits on.
func (r *Runtime) refuse(ctx context.Context, rec *store.Record, a *bridge.AnswerAttempt, ref *refusal, now time.Time) error {
	ev := bridge.Event{
		Type: bridge.EventRefused, Tenant: a.Tenant, JobID: a.JobID, QuestionID: a.QuestionID, TaskVersion: a.TaskVersion,
		To: a.By, By: a.By, ByName: a.ByName, Via: a.Via, Reason: ref.reason, Text: ref.text, FieldErrors: ref.fields,
		AttemptID: a.AttemptID, ReplyTo: a.ReplyTo, At: now,
	}
	var question int64
	if rec != nil {
		question = rec.ID
		ev.TaskVersion = rec.TaskVersion
		ev.State = rec.State
		ev.AskedAt, ev.Deadline = rec.AskedAt, rec.Deadline
	}
	ev.EventID = fmt.Sprintf("%s.%s.%s.refused.%s", a.Tenant, a.JobID, a.QuestionID, a.AttemptID)
	err := r.st.Refuse(ctx, a.AttemptID, question, now, []store.Message{eventMsg(ev)})
	if errors.Is(err, store.ErrDuplicate) {
		return nil
	}
	if err != nil {
		return err
	}
	r.metrics.refusals.WithLabelValues(ref.reason).Inc()
	r.wakeRelay()
	r.log.Info("answer refused", "tenant", a.Tenant, "job", a.JobID, "question", a.QuestionID, "by", a.By, "reason", ref.reason)
	return nil
}

func platformOf(id string) string {
	for i := 0; i < len(id); i++ {
		if id[i] == ':' {
			return id[:i]
		}
	}
	return ""
}
