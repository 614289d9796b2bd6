package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// ladderStore is what the ladder needs: the steps due, the question each
// belongs to and where it is shown, and firing a step or the timeout.
type ladderStore interface {
	NextDue(ctx context.Context) (time.Time, bool, error)
	DueSteps(ctx context.Context, now time.Time, limit int) ([]record.DueStep, error)
	Get(ctx context.Context, id int64) (*record.Record, error)
	Messages(ctx context.Context, question int64) ([]bridge.MessageRef, error)
	Settle(ctx context.Context, st record.Settlement) error
	ProposalOf(ctx context.Context, question int64) (*record.Proposal, error)
	Snoozes(ctx context.Context, question int64, now time.Time) (map[string]time.Time, error)
	SnoozeOf(ctx context.Context, question int64, step int) (string, time.Time, error)
}

// ladder sleeps until the next due step, fires every step that is due, and
// sleeps again. Adding a question wakes it to re-read the next due time, so
// it never scans pending questions and is idle between steps. With a
// shared store, a step another replica scheduled wakes it too (DueWatcher):
// each replica's ladder races for each due step, and the store's
// compare-and-set lets one take it.
func (r *Runtime) ladder(ctx context.Context) {
	for {
		next := r.fireDue(ctx)
		select {
		case <-ctx.Done():
			return
		case <-r.clock.At(next):
		case <-r.ladWake:
		case <-r.dueChanged:
		}
	}
}

// maxLadderSleep bounds a sleep so that another replica's new questions
// are picked up in reasonable time when its store cannot say (no
// DueWatcher).
const maxLadderSleep = 30 * time.Second

// fireDue fires due steps and returns when to look again: when the next
// falls due, or sooner.
func (r *Runtime) fireDue(ctx context.Context) time.Time {
	for ctx.Err() == nil {
		now := r.stamp()
		due, err := r.steps.DueSteps(ctx, now, 100)
		if err != nil {
			if ctx.Err() == nil { // a stop is no error
				r.log.Error("ladder: read due steps", "err", err)
			}
			return r.clock.Now().Add(time.Second)
		}
		jobs, err := r.ladderJobs(ctx, due)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Error("ladder: read due steps' questions", "err", err)
			}
			return r.clock.Now().Add(time.Second)
		}
		failed, held := r.firePass(ctx, jobs, now)
		if failed {
			return r.clock.Now().Add(time.Second)
		}
		if held {
			return r.clock.Now().Add(answerWaitRetry)
		}
		if len(due) < 100 {
			break
		}
	}
	next, ok, err := r.steps.NextDue(ctx)
	if err != nil {
		if ctx.Err() == nil { // a stop is no error
			r.log.Error("ladder: next due", "err", err)
		}
		return r.clock.Now().Add(time.Second)
	}
	latest := r.clock.Now().Add(maxLadderSleep)
	if !ok || next.After(latest) {
		return latest
	}
	return next
}

// fireStep times a question out; its reminders and escalations fire in
// rounds (fireRound).
func (r *Runtime) fireStep(ctx context.Context, rec *record.Record, now time.Time) error {
	if rec.State != bridge.StatePending {
		return nil
	}
	return r.timeOut(ctx, rec, decodeBody(rec), now)
}

// stepTargets are the identities step d reminds: a snooze's end reminds
// its snoozer alone (when their snooze is still on record), and the
// answerers step skips whoever snoozed past now (docs/contract.md
// "Delegate and snooze").
func (r *Runtime) stepTargets(ctx context.Context, rec *record.Record, q *bridge.Question, d record.DueStep, now time.Time) ([]string, error) {
	switch d.Target {
	case record.StepSnooze:
		id, _, err := r.steps.SnoozeOf(ctx, rec.ID, d.Index)
		if errors.Is(err, record.ErrNotFound) {
			return nil, nil
		}
		return []string{id}, err
	case bridge.TargetAnswerers:
		snoozed, err := r.steps.Snoozes(ctx, rec.ID, now)
		if err != nil || len(snoozed) == 0 {
			return r.targets(q, d.Target), err
		}
		// A person's snooze holds whichever of their identities the
		// reminder would go to.
		dir := r.people.directory()
		held := map[string]bool{}
		for id := range snoozed {
			held[dir.key(id)] = true
		}
		return slices.DeleteFunc(r.targets(q, d.Target), func(id string) bool { return held[dir.key(id)] }), nil
	}
	return r.targets(q, d.Target), nil
}

// targets are the identities a step reminds. Without named answerers the
// operators are reminded; without a question owner the configured owners.
// Each person is reminded once, at one identity (people.reach).
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
	return r.people.reach(out)
}

// timeOut ends a question nobody answered: outcome timed_out, or failed
// with code QuestionTimedOut when the question asked for that.
func (r *Runtime) timeOut(ctx context.Context, rec *record.Record, q *bridge.Question, now time.Time) error {
	if now.Sub(rec.Deadline) < maxAnswerHold {
		if waiting, err := r.answerWaiting(ctx, rec); err != nil {
			return err
		} else if waiting {
			return errAnswerWaiting
		}
	}
	text := bridge.TimedOutText(q.TimeoutDuration())
	status, decision, err := r.proposalAtTimeout(ctx, rec, q)
	if err != nil {
		return err
	}
	if decision != nil {
		text = bridge.ProposalExpiredText(q.Proposal.ID, q.Proposal.ExpiresAt)
	}
	refs, err := r.steps.Messages(ctx, rec.ID)
	if err != nil {
		return err
	}
	ev := eventFor(rec, bridge.EventTimedOut, now)
	ev.Text = text
	ev.Messages = refs
	ev.Proposal = status
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
	err = r.steps.Settle(ctx, record.Settlement{
		Question: rec.ID, State: state, Text: text, Reason: "timed out", At: now,
		Outbox: []record.Message{eventMsg(ev), resumeMsg(res)}, Proposal: decision,
	})
	if errors.Is(err, record.ErrNotPending) {
		return nil
	}
	if err != nil {
		return err
	}
	r.metrics.ladder.WithLabelValues(record.StepTimeout).Inc()
	r.metrics.settled.WithLabelValues(state).Inc()
	r.wakeRelay()
	r.log.Info("question timed out", "tenant", rec.Tenant, "job", rec.JobID, "question", rec.QuestionID, "state", state)
	return nil
}

// proposalAtTimeout is an approval's proposal as its timeout leaves it:
// expired, with the decision that records it, when the proposal's
// expires_at is what ended the question; still pending (to be asked again
// by a later question) when its timeout did.
func (r *Runtime) proposalAtTimeout(ctx context.Context, rec *record.Record, q *bridge.Question) (*bridge.ProposalStatus, *record.ProposalDecision, error) {
	if !q.IsApproval() || q.Proposal == nil {
		return nil, nil, nil
	}
	p, err := r.steps.ProposalOf(ctx, rec.ID)
	if err != nil && !errors.Is(err, record.ErrNotFound) {
		return nil, nil, err
	}
	if !expiresFirst(q, rec.Deadline) {
		return r.proposalStatus(q, p), nil, nil
	}
	status := r.proposalStatus(q, p)
	status.State = bridge.ProposalExpired
	status.MayApprove = nil
	return status, &record.ProposalDecision{Tenant: rec.Tenant, ID: q.Proposal.ID, State: bridge.ProposalExpired}, nil
}

// errAnswerWaiting holds a timeout: an answer to the job published before
// the deadline waits to be decided, and it must win.
var errAnswerWaiting = errors.New("runtime: an answer published before the deadline waits to be decided")

const (
	// answerWaitRetry is how soon a held timeout is looked at again.
	answerWaitRetry = 250 * time.Millisecond
	// maxAnswerHold bounds how long past its deadline a timeout waits for
	// answers to be decided, so a stuck consumer never keeps a question
	// from ending.
	maxAnswerHold = 2 * time.Minute
	// maxAnswerWaitAtStart bounds awaitAnswers.
	maxAnswerWaitAtStart = 30 * time.Second
)

// answerWaiting reports whether an answer attempt for rec's job, published
// before rec's deadline, is in the answers stream and not yet decided (past
// the runtime's consumer's ack floor): under a backlog of answers, or right
// after a restart, the ladder must not time out a question that was
// answered in time.
func (r *Runtime) answerWaiting(ctx context.Context, rec *record.Record) (bool, error) {
	cons, err := r.js.Consumer(ctx, bridge.StreamAnswers, r.durable(answersConsumer))
	if err != nil {
		return false, fmt.Errorf("runtime: answers consumer: %w", err)
	}
	// One request: the consumer's info comes with it.
	m, err := r.answers.GetMsg(ctx, cons.CachedInfo().AckFloor.Stream+1, jetstream.WithGetMsgSubject(bridge.AnswerSubject(rec.Tenant, rec.JobID)))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("runtime: look for answers before a timeout: %w", err)
	}
	return !m.Time.After(rec.Deadline), nil
}

// awaitAnswers holds the ladder at start until the answers published
// before it (while the runtime was down) are decided, so that neither a
// reminder nor a timeout overtakes an answer given in time. It gives up
// after maxAnswerWaitAtStart; timeOut still checks for waiting answers.
func (r *Runtime) awaitAnswers(ctx context.Context, last uint64) {
	if last == 0 {
		return
	}
	cons, err := r.js.Consumer(ctx, bridge.StreamAnswers, r.durable(answersConsumer))
	if err != nil {
		r.log.Warn("ladder: cannot see the answers consumer; not waiting for answers", "err", err)
		return
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	giveUp := time.After(maxAnswerWaitAtStart)
	for {
		if info, err := cons.Info(ctx); err == nil && info.AckFloor.Stream >= last {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-giveUp:
			r.log.Warn("ladder: starting before the answers waiting at start are all decided")
			return
		case <-tick.C:
		}
	}
}

// wakeLadder makes the ladder read the next due time again.
func (r *Runtime) wakeLadder() {
	select {
	case r.ladWake <- struct{}{}:
	default:
	}
}
