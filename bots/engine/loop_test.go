package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// rig is a real embedded NATS with the events stream and a loop on a
// durable consumer of it.
type rig struct {
	t    *testing.T
	nats *bridge.NATS
	// logs are the loops' logs, shown when the test fails.
	logs *testenv.LockedBuffer
}

func newRig(t *testing.T) *rig {
	t.Helper()
	n, err := bridge.ConnectNATS(context.Background(), bridge.NATSOptions{Listen: "127.0.0.1:0", StoreDir: filepath.Join(t.TempDir(), "nats")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	// The events stream drops an event no consumer is there for: the
	// consumer exists before anything is published, as in the service.
	if _, err := n.JS.CreateOrUpdateConsumer(context.Background(), bridge.StreamEvents, rigConsumer); err != nil {
		t.Fatal(err)
	}
	logs := &testenv.LockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the loops' logs:\n%s", logs)
		}
	})
	return &rig{t: t, nats: n, logs: logs}
}

var rigConsumer = jetstream.ConsumerConfig{
	Durable: "engine-test", FilterSubject: bridge.PrefixEvent + ".>", AckPolicy: jetstream.AckExplicitPolicy,
	AckWait: 2 * time.Minute, MaxAckPending: 256, DeliverPolicy: jetstream.DeliverAllPolicy,
}

// start runs a loop with handle (and the loop's other settings from l)
// until the returned stop is called; stop waits for Run to return.
func (r *rig) start(l Loop) (stop func()) {
	r.t.Helper()
	l.Name = "test"
	l.Logger = slog.New(slog.NewTextHandler(r.logs, nil))
	if l.Events == nil {
		l.Events = &bridge.Durable{NATS: r.nats, Stream: bridge.StreamEvents, Config: rigConsumer}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					r.t.Errorf("Run: %v", err)
				}
			case <-time.After(testenv.Patience):
				r.t.Errorf("Run did not return after its context ended")
			}
		})
	}
	r.t.Cleanup(stop)
	return stop
}

func (r *rig) publish(job, question string) {
	r.t.Helper()
	ev := bridge.Event{Type: bridge.EventReminded, EventID: job + "-" + question, Tenant: "acme", JobID: job, QuestionID: question}
	if err := bridge.Publish(context.Background(), r.nats.JS, bridge.EventSubject("acme", job), ev.EventID, ev); err != nil {
		r.t.Fatal(err)
	}
}

// seen records what a handler was given.
type seen struct {
	mu    sync.Mutex
	order map[string][]string // job → questions, in the order handled
	tries map[string][]time.Time
}

func newSeen() *seen { return &seen{order: map[string][]string{}, tries: map[string][]time.Time{}} }

func (s *seen) add(ev *bridge.Event) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.order[ev.JobID] = append(s.order[ev.JobID], ev.QuestionID)
	s.tries[ev.QuestionID] = append(s.tries[ev.QuestionID], time.Now())
	return len(s.tries[ev.QuestionID])
}

func (s *seen) triesOf(q string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.tries[q]...)
}

func TestEventsOfAJobAreHandledInOrder(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	s := newSeen()
	const jobs, each = 6, 15
	r.start(Loop{Handle: func(ctx context.Context, ev *bridge.Event, d Delivery) error {
		s.add(ev)
		time.Sleep(time.Millisecond) // a platform call: the workers overlap
		return nil
	}})
	for i := range each {
		for j := range jobs {
			r.publish(fmt.Sprintf("job-%d", j), fmt.Sprintf("q-%02d", i))
		}
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		for j := range jobs {
			if got := len(s.order[fmt.Sprintf("job-%d", j)]); got != each {
				return fmt.Errorf("job-%d: %d events handled, want %d", j, got, each)
			}
		}
		return nil
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	for job, qs := range s.order {
		for i, q := range qs {
			if want := fmt.Sprintf("q-%02d", i); q != want {
				t.Fatalf("%s: event %d was %s, want %s (order %v)", job, i, q, want, qs)
			}
		}
	}
}

func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	errRateLimited := errors.New("rate limited")
	errBroken := errors.New("broken for good")
	classify := func(err error) Verdict {
		switch {
		case errors.Is(err, errRateLimited):
			return Verdict{Kind: RateLimited, RetryAfter: 400 * time.Millisecond}
		case errors.Is(err, errBroken):
			return Verdict{Kind: Permanent}
		}
		return Verdict{Kind: Transient}
	}
	for _, tc := range []struct {
		name string
		// fail is the handler's error on a try (nil: handled).
		fail      func(try int, d Delivery) error
		wantTries int
		// minGap is the least time between two tries.
		minGap time.Duration
	}{
		{name: "transient errors are tried again", wantTries: 3,
			fail: func(try int, d Delivery) error { return errIf(try < 3, errors.New("flaky")) }},
		{name: "a rate limit is waited out", wantTries: 2, minGap: 400 * time.Millisecond,
			fail: func(try int, d Delivery) error { return errIf(try < 2, fmt.Errorf("post: %w", errRateLimited)) }},
		{name: "a permanent error is dropped", wantTries: 1,
			fail: func(try int, d Delivery) error { return errBroken }},
		{name: "a deferred event outlives its last delivery", wantTries: 5,
			fail: func(try int, d Delivery) error {
				if try >= 3 && !d.Last {
					return errors.New("the last try was not said to be the last")
				}
				return errIf(try < 5, &Later{After: 10 * time.Millisecond, Why: "another replica"})
			}},
		{name: "errors after the last try give up in the end", wantTries: 4,
			fail: func(try int, d Delivery) error { return errors.New("the store is away") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			s := newSeen()
			r.start(Loop{MaxDeliveries: 3, GiveUpAfter: 4, Classify: classify,
				Backoff: func(uint64) time.Duration { return 5 * time.Millisecond },
				Handle: func(ctx context.Context, ev *bridge.Event, d Delivery) error {
					try := s.add(ev)
					if uint64(try) != d.Attempt {
						return fmt.Errorf("try %d delivered as attempt %d", try, d.Attempt)
					}
					return tc.fail(try, d)
				}})
			r.publish("job-1", "q-1")
			testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
				if got := len(s.triesOf("q-1")); got < tc.wantTries {
					return fmt.Errorf("%d tries, want %d", got, tc.wantTries)
				}
				return nil
			})
			// Nothing more comes once the consumer holds nothing unacknowledged.
			testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
				c, err := r.nats.JS.Consumer(context.Background(), bridge.StreamEvents, "engine-test")
				if err != nil {
					return err
				}
				info, err := c.Info(context.Background())
				if err != nil || info.NumAckPending > 0 || info.NumPending > 0 {
					return fmt.Errorf("the event is not acknowledged yet: %v", err)
				}
				return nil
			})
			tries := s.triesOf("q-1")
			if len(tries) != tc.wantTries {
				t.Fatalf("%d tries, want %d", len(tries), tc.wantTries)
			}
			for i := 1; i < len(tries); i++ {
				if gap := tries[i].Sub(tries[i-1]); gap < tc.minGap {
					t.Fatalf("try %d came %v after the one before, want at least %v", i+1, gap, tc.minGap)
				}
			}
		})
	}
}

func errIf(cond bool, err error) error {
	if cond {
		return err
	}
	return nil
}

// TestStopHandsEventsBackOnceUnsubscribed checks events a stop cuts short
// (the one in hand, those queued behind it) reach the next loop at once
// and in order, stop after stop: handed back only once the stopped loop
// no longer pulls, not redelivered to its dead pull request and left
// there until the consumer's AckWait (two minutes here). It runs on the
// adapters' consumer, which pins one loop: without a pin a stop hands
// each event back on a timer of its own (NakWithDelay), which under load
// can reach the dead pull request or come back out of order.
func TestStopHandsEventsBackOnceUnsubscribed(t *testing.T) {
	t.Parallel()
	config := bridge.EventConsumer("engine-pinned")
	config.AckWait = 2 * time.Minute
	r := newRig(t)
	if _, err := r.nats.JS.CreateOrUpdateConsumer(context.Background(), bridge.StreamEvents, config); err != nil {
		t.Fatal(err)
	}
	events := func() *bridge.Durable {
		return &bridge.Durable{NATS: r.nats, Stream: bridge.StreamEvents, Config: config, Logger: slog.New(slog.NewTextHandler(r.logs, nil))}
	}
	s := newSeen()
	stuck := func(ctx context.Context, ev *bridge.Event, d Delivery) error {
		s.add(ev)
		<-ctx.Done() // a platform call the stop cuts short
		return ctx.Err()
	}
	r.publish("job-1", "q-1")
	r.publish("job-1", "q-2") // queued behind q-1
	for i := range 4 {
		// Stopped once it holds both: an event the server has yet to
		// hand this loop again when it stops comes to the next one
		// before those it hands back (docs/design.md, "Failover").
		var read atomic.Int64
		stop := r.start(Loop{Handle: stuck, Workers: 1, Events: events(), onRead: func(jetstream.Msg) { read.Add(1) }})
		testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
			if got := len(s.triesOf("q-1")); got != i+1 || read.Load() < 2 {
				return fmt.Errorf("loop %d: q-1 tried %d times, want %d; %d of 2 events read", i, got, i+1, read.Load())
			}
			return nil
		})
		stop()
	}
	done := newSeen()
	r.start(Loop{Events: events(), Handle: func(ctx context.Context, ev *bridge.Event, d Delivery) error {
		done.add(ev)
		return nil
	}})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		done.mu.Lock()
		defer done.mu.Unlock()
		if got := done.order["job-1"]; len(got) != 2 || got[0] != "q-1" || got[1] != "q-2" {
			return fmt.Errorf("handled %v after the stops, want q-1 then q-2", got)
		}
		return nil
	})
}
