package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// ackPending is how many events the test consumer handed out and has not
// had acknowledged.
func (r *rig) ackPending() int {
	r.t.Helper()
	c, err := r.nats.JS.Consumer(context.Background(), bridge.StreamEvents, "engine-test")
	if err != nil {
		r.t.Fatal(err)
	}
	info, err := c.Info(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	return info.NumAckPending
}

// TestAckAfterDelaysTheAckNotTheJob checks an event whose handler asks to
// be acknowledged later stays unacknowledged (a crash would bring it
// back) until then, while the job's next event is handled at once; and
// that a stop acknowledges what still waits.
func TestAckAfterDelaysTheAckNotTheJob(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	s := newSeen()
	const wait = 500 * time.Millisecond
	var mu sync.Mutex
	var ackAt time.Time // the instant q-1's handler named
	stop := r.start(Loop{Handle: func(ctx context.Context, ev *bridge.Event, d Delivery) error {
		s.add(ev)
		if ev.QuestionID != "q-2" {
			at := time.Now().Add(wait)
			if ev.QuestionID == "q-1" {
				mu.Lock()
				ackAt = at
				mu.Unlock()
			}
			AckAfter(ctx, at)
		}
		return nil
	}})
	q1AckAt := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return ackAt
	}
	r.publish("job-1", "q-1")
	r.publish("job-1", "q-2")
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if got := s.order["job-1"]; len(got) != 2 {
			return fmt.Errorf("handled %v, want q-1 and q-2", got)
		}
		return nil
	})
	// Order, not time: seen before q-1's instant, once q-2's ack has
	// landed, q-1 is still unacknowledged (seen after it, nothing can be
	// told: the machine may have been slow).
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		n := r.ackPending()
		if !time.Now().Before(q1AckAt()) {
			return nil
		}
		if n > 1 {
			return fmt.Errorf("q-2 handled, its ack not there yet (%d unacknowledged)", n)
		}
		if n != 1 {
			t.Fatalf("%d events unacknowledged, want q-1's until its instant", n)
		}
		return nil
	})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if n := r.ackPending(); n != 0 {
			return fmt.Errorf("%d events unacknowledged after the wait", n)
		}
		return nil
	})
	if seen := time.Now(); seen.Before(q1AckAt()) {
		t.Fatalf("q-1 acknowledged %v before the instant it asked for", q1AckAt().Sub(seen))
	}
	// A stop acknowledges what still waits.
	r.publish("job-2", "q-3")
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.order["job-2"]) != 1 {
			return fmt.Errorf("q-3 not handled yet")
		}
		return nil
	})
	stop()
	if n := r.ackPending(); n != 0 {
		t.Fatalf("%d events unacknowledged after a stop, want none", n)
	}
}
