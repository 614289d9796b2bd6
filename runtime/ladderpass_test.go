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
