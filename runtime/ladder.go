package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store"
)

// ladder sleeps until the next due step, fires every step that is due, and
// sleeps again. Adding a question wakes it to re-read the next due time, so
// it never scans pending questions and is idle between steps.
func (r *Runtime) ladder(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := r.fireDue(ctx)
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-r.ladWake:
		}
	}
}

// maxLadderSleep bounds a sleep so that another replica's new questions
// (which cannot wake this one) are picked up in reasonable time.
const maxLadderSleep = 30 * time.Second

// fireDue fires due steps and returns how long to sleep until the next.
func (r *Runtime) fireDue(ctx context.Context) time.Duration {
	for ctx.Err() == nil {
		now := time.Now().UTC()
		due, err := r.st.DueSteps(ctx, now, 100)
		if err != nil {
			r.log.Error("ladder: read due steps", "err", err)
			return time.Second
		}
		for _, d := range due {
			if err := r.fireStep(ctx, d, now); err != nil && ctx.Err() == nil {
				r.log.Error("ladder: fire step", "question", d.Question, "step", d.Target, "err", err)
				return time.Second
			}
		}
		if len(due) < 100 {
			break
		}
	}
	next, ok, err := r.st.NextDue(ctx)
	if err != nil {
		r.log.Error("ladder: next due", "err", err)
		return time.Second
	}
	if !ok {
		return maxLadderSleep
	}
	wait := time.Until(next)
	if wait < 0 {
		wait = 0
	}
	return min(wait, maxLadderSleep)
}

// fireStep sends one reminder or escalation, or times the question out.
func (r *Runtime) fireStep(ctx context.Context, d store.DueStep, now time.Time) error {
	rec, err := r.st.Get(ctx, d.Question)
	if err != nil {
		return err
	}
	if rec.State != bridge.StatePending {
		return nil
	}
	q := decodeBody(rec)
	if d.Target == store.StepTimeout {
		return r.timeOut(ctx, rec, q, now)
	}
	targets := r.targets(q, d.Target)
	typ := bridge.EventEscalated
	if d.Target == bridge.TargetAnswerers {
		typ = bridge.EventReminded
	}
	refs, err := r.st.Messages(ctx, rec.ID)
	if err != nil {
		return err
	}
	ev := eventFor(rec, typ, now)
	ev.EventID = fmt.Sprintf("%s.%d", ev.EventID, d.Index)
	ev.Question = q
	ev.State = bridge.StatePending
	ev.Step = d.Target
	ev.Targets = targets
	ev.Messages = refs
	reason := fmt.Sprintf("%s %s: %v", typ, d.Target, targets)
	err = r.st.FireStep(ctx, d, now, reason, []store.Message{eventMsg(ev)})
	if errors.Is(err, store.ErrStepGone) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		r.log.Warn("ladder step has nobody to remind", "tenant", rec.Tenant, "job", rec.JobID, "question", rec.QuestionID, "step", d.Target)
	}
	r.metrics.ladder.WithLabelValues(d.Target).Inc()
	r.wakeRelay()
	return nil
}

// targets are the identities a step reminds. Without named answerers the
// operators are reminded; without a question owner the configured owners.
func (r *Runtime) targets(q *bridge.Question, target string) []string {
	var out []string
	switch target {
	case bridge.TargetAnswerers:
		out = q.Answerers
		if len(out) == 0 {
			out = inTenant(r.o.Roles.Operators, q.Tenant)
		}
	case bridge.TargetOwner:
		if q.Owner != "" {
			out = []string{q.Owner}
		} else {
			out = inTenant(r.o.Roles.Owners, q.Tenant)
		}
	case bridge.TargetAdmins:
		out = inTenant(r.o.Roles.Admins, q.Tenant)
		if len(out) == 0 {
			out = inTenant(r.o.Roles.Owners, q.Tenant)
		}
	}
	return slices.Clone(out)
}

// timeOut ends a question nobody answered: outcome timed_out, or failed
// with code QuestionTimedOut when the question asked for that.
func (r *Runtime) timeOut(ctx context.Context, rec *store.Record, q *bridge.Question, now time.Time) error {
	timeout := q.TimeoutDuration()
	text := bridge.TimedOutText(timeout)
	refs, err := r.st.Messages(ctx, rec.ID)
	if err != nil {
		return err
	}
	ev := eventFor(rec, bridge.EventTimedOut, now)
	ev.Text = text
	ev.Messages = refs
	res := resumeFor(rec, bridge.OutcomeTimedOut, text, now)
	state := bridge.StateTimedOut
	if q.OnTimeout == bridge.OnTimeoutFail {
		state = bridge.StateFailed
		res.Outcome = bridge.OutcomeFailed
		res.Code = bridge.CodeQuestionTimedOut
		res.Failure = &bridge.Failure{
			Code: bridge.CodeQuestionTimedOut, Dependency: "people", Operation: "answer_question", Retryable: true,
			SafeFallback: "ask again later or choose a safe default", OperatorMessage: text,
		}
	}
	ev.State = state
	err = r.st.Settle(ctx, store.Settlement{
		Question: rec.ID, State: state, Text: text, Reason: "timed out", At: now,
		Outbox: []store.Message{eventMsg(ev), resumeMsg(res)},
	})
	if errors.Is(err, store.ErrNotPending) {
		return nil
	}
	if err != nil {
		return err
	}
	r.metrics.ladder.WithLabelValues(store.StepTimeout).Inc()
	r.metrics.settled.WithLabelValues(state).Inc()
	r.wakeRelay()
	r.log.Info("question timed out", "tenant", rec.Tenant, "job", rec.JobID, "question", rec.QuestionID, "state", state)
	return nil
}
