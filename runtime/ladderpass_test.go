package runtime_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/store/record"
)

// TestOneJobsSlowRoundHoldsBackNoOtherJob: the ladder fires the jobs of a
// pass at once, so a round that waits on the record (a slow read on a
// loaded cluster) holds back no other job's reminder.
func TestOneJobsSlowRoundHoldsBackNoOtherJob(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	held := &heldQueue{job: "job-slow", entered: make(chan struct{}), release: make(chan struct{})}
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock, WrapStore: held.wrap})
	slow := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-slow")
	fast := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-fast")
	for _, job := range []string{"job-slow", "job-fast"} {
		q := ladderQuestion(job, "")
		q.Timeout = "40s" // the answerers' reminder at 10 s
		ask(t, env, q)
	}
	held.armed.Store(true)
	clock.Advance(11 * time.Second) // both reminders due, in one pass

	select {
	case <-held.entered:
	case <-time.After(testenv.Patience):
		t.Fatal("the ladder never read job-slow's queue for its reminder")
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := fast.EventTypes(); got != "asked,reminded" {
			return fmt.Errorf("while job-slow's round waits, job-fast's events = %s; want its reminder", got)
		}
		return nil
	})
	if got := slow.EventTypes(); got != "asked" {
		t.Fatalf("job-slow's events = %s while its round waits", got)
	}
	close(held.release)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := slow.EventTypes(); got != "asked,reminded" {
			return fmt.Errorf("job-slow's events = %s once its round goes on; want its reminder", got)
		}
		return nil
	})
}

// heldQueue is the record with one job's queue read held until release,
// once armed.
type heldQueue struct {
	record.Backend
	job     string
	armed   atomic.Bool
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (h *heldQueue) wrap(b record.Backend) record.Backend {
	h.Backend = b
	return h
}

func (h *heldQueue) JobQueue(ctx context.Context, tenant, job string) ([]record.Queued, error) {
	if job == h.job && h.armed.Load() {
		h.once.Do(func() { close(h.entered) })
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.Backend.JobQueue(ctx, tenant, job)
}

// TestTimeoutWaitsForADroppedRoundsSteps: when the record refuses a
// job's round whole (another replica's round or timeout took one of its
// steps first), the steps that did not fire are still due, and a question
// whose timeout is due in the same pass times out only after its steps
// have fired.
func TestTimeoutWaitsForADroppedRoundsSteps(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	lost := &lostRound{target: bridge.TargetAdmins}
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock, WrapStore: lost.wrap})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-dropped")
	q := ladderQuestion("job-dropped", "")
	ask(t, env, q)
	clock.Advance(5 * time.Second) // every step and the timeout due, in one pass
	clock.AdvanceUntil(t, 100*time.Millisecond, testenv.Patience, func() error {
		if got := events.EventTypes(); got != "asked,reminded,escalated,escalated,timed_out" {
			return fmt.Errorf("events = %s; want every step before the timeout", got)
		}
		return nil
	})
	if lost.dropped.Load() != 1 {
		t.Fatalf("%d admins rounds refused; the test wants the first one refused", lost.dropped.Load())
	}
}

// lostRound is the record refusing the first round of one step kind with
// record.ErrStepGone, as it does when another replica fired one of its
// steps first.
type lostRound struct {
	record.Backend
	target  string
	dropped atomic.Int32
}

func (l *lostRound) wrap(b record.Backend) record.Backend {
	l.Backend = b
	return l
}

func (l *lostRound) FireRound(ctx context.Context, steps []record.RoundStep, at time.Time, msgs []record.Message) error {
	if len(steps) > 0 && steps[0].Target == l.target && l.dropped.CompareAndSwap(0, 1) {
		return record.ErrStepGone
	}
	return l.Backend.FireRound(ctx, steps, at, msgs)
}
