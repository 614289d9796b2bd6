package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestAHeldJobLeavesItsWorkerToOthers checks a job put aside (Hold) does
// not hold the one worker: another job's events are handled meanwhile,
// the held job's later event waits behind the held one, the held event
// comes back no sooner than its instant with what it reserved, and a
// Hold is not a failed delivery.
func TestAHeldJobLeavesItsWorkerToOthers(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	s := newSeen()
	const wait = 600 * time.Millisecond
	var (
		mu         sync.Mutex
		until      time.Time
		kept       time.Time
		attempts   []uint64
		handledAll []string
	)
	r.start(Loop{Workers: 1, Handle: func(ctx context.Context, ev *bridge.Event, d Delivery) error {
		n := s.add(ev)
		mu.Lock()
		defer mu.Unlock()
		handledAll = append(handledAll, ev.QuestionID)
		if ev.QuestionID != "q-held" {
			return nil
		}
		attempts = append(attempts, d.Attempt)
		res := ReservedOf(ctx)
		if res == nil {
			return fmt.Errorf("no reservations in a loop's context")
		}
		if n == 1 {
			until = time.Now().Add(wait)
			res.Put("C1", until)
			return &Hold{Until: until, Why: "channel C1's turn"}
		}
		kept, _ = res.Take("C1")
		return nil
	}})
	r.publish("job-held", "q-held")
	r.publish("job-held", "q-after")
	r.publish("job-other", "q-other")
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if len(s.triesOf("q-after")) == 0 {
			return fmt.Errorf("q-after not handled yet")
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"q-held", "q-other", "q-held", "q-after"}; !slices.Equal(handledAll, want) {
		t.Errorf("handled %v, want %v: the other job meanwhile, the held job in order", handledAll, want)
	}
	if again := s.triesOf("q-held")[1]; again.Before(until) {
		t.Errorf("the held event came back %v before its instant", until.Sub(again))
	}
	if !kept.Equal(until) {
		t.Errorf("the second try found reserved %v, want %v", kept, until)
	}
	if !slices.Equal(attempts, []uint64{1, 1}) {
		t.Errorf("deliveries %v, want both tries on the first delivery", attempts)
	}
}

// TestStopHandsHeldEventsBack checks the events of a job put aside are
// handed back when the loop stops, to be handled by the next one.
func TestStopHandsHeldEventsBack(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	first := newSeen()
	stop := r.start(Loop{Workers: 1, Handle: func(ctx context.Context, ev *bridge.Event, d Delivery) error {
		first.add(ev)
		return &Hold{Until: time.Now().Add(time.Hour), Why: "a long wait"}
	}})
	r.publish("job-1", "q-1")
	r.publish("job-1", "q-2")
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if len(first.triesOf("q-1")) == 0 {
			return fmt.Errorf("q-1 not handled yet")
		}
		return nil
	})
	stop()
	next := newSeen()
	r.start(Loop{Workers: 1, Handle: func(ctx context.Context, ev *bridge.Event, d Delivery) error {
		next.add(ev)
		return nil
	}})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		next.mu.Lock()
		defer next.mu.Unlock()
		if got := next.order["job-1"]; !slices.Equal(got, []string{"q-1", "q-2"}) {
			return fmt.Errorf("the next loop handled %v, want [q-1 q-2]", got)
		}
		return nil
	})
}
