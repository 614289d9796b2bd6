package engine

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// replica is one adapter process: its own NATS connection to the rig's
// server, and a loop on the adapters' shared consumer (bridge.EventConsumer,
// pinned).
type replica struct {
	name string
	nats *bridge.NATS
	stop func()
}

// replicaConsumer is the consumer the replicas share: bridge.EventConsumer
// as the adapters make it, under a name of its own, with its pinned TTL
// and AckWait when set (a test of a replica that dies does not wait a
// minute).
func replicaConsumer(ttl, ackWait time.Duration) bridge.Durable {
	cfg := bridge.EventConsumer("engine-replicas")
	if ttl > 0 {
		cfg.PinnedTTL = ttl
	}
	if ackWait > 0 {
		cfg.AckWait = ackWait
	}
	return bridge.Durable{Stream: bridge.StreamEvents, Config: cfg}
}

// replicaHandler handles an event on the replica named.
type replicaHandler func(ctx context.Context, replica string, ev *bridge.Event) error

// startReplica connects anew to r's server and runs a loop with handle,
// which is told the replica's name.
func (r *rig) startReplica(name string, d bridge.Durable, handle replicaHandler) *replica {
	r.t.Helper()
	n, err := bridge.ConnectNATS(context.Background(), bridge.NATSOptions{URL: r.nats.Server.ClientURL(), Name: name, ConnOptions: []nats.Option{r.nats.Admin()}})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(n.Close)
	d.NATS = n
	d.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	l := &Loop{Name: name, Events: &d, Logger: d.Logger,
		Backoff: func(uint64) time.Duration { return 20 * time.Millisecond },
		Handle: func(ctx context.Context, ev *bridge.Event, _ Delivery) error {
			return handle(ctx, name, ev)
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					r.t.Errorf("%s: Run: %v", name, err)
				}
			case <-time.After(testenv.Patience):
				r.t.Errorf("%s: Run did not return after its context ended", name)
			}
		})
	}
	r.t.Cleanup(stop)
	return &replica{name: name, nats: n, stop: stop}
}

// handled records, per event, which replicas handled it to the end, and
// each job's events in the order they were handled.
type handled struct {
	mu    sync.Mutex
	by    map[string][]string // question → replicas that handled it
	order map[string][]string // job → questions
}

func newHandled() *handled {
	return &handled{by: map[string][]string{}, order: map[string][]string{}}
}

func (h *handled) add(replica string, ev *bridge.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.by[ev.QuestionID] = append(h.by[ev.QuestionID], replica)
	h.order[ev.JobID] = append(h.order[ev.JobID], ev.QuestionID)
}

// waitAll waits until every question of want was handled, then checks
// each was handled once and each job's in the order published.
func (h *handled) waitAll(t *testing.T, want map[string][]string) {
	t.Helper()
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		for job, qs := range want {
			for _, q := range qs {
				if len(h.by[q]) == 0 {
					return fmt.Errorf("%s %s not handled yet", job, q)
				}
			}
		}
		return nil
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	for job, qs := range want {
		for _, q := range qs {
			if by := h.by[q]; len(by) != 1 {
				t.Errorf("%s %s handled by %v, want once", job, q, by)
			}
		}
		if got := h.order[job]; !slices.Equal(got, qs) {
			t.Errorf("%s handled in the order %v, want %v (by %v)", job, got, qs, h.by)
		}
	}
}

// handle records ev as handled by replica.
func (h *handled) handle(_ context.Context, replica string, ev *bridge.Event) error {
	h.add(replica, ev)
	return nil
}

// stuckOn is a handler that records events as h.handle does, except
// question's, which it holds until its context ends (a platform call that
// outlives the replica), closing stuck when it begins.
func (h *handled) stuckOn(question string, stuck chan struct{}) replicaHandler {
	var once sync.Once
	return func(ctx context.Context, replica string, ev *bridge.Event) error {
		if ev.QuestionID == question {
			once.Do(func() { close(stuck) })
			<-ctx.Done()
			return ctx.Err()
		}
		h.add(replica, ev)
		return nil
	}
}

// waitHandled waits until each of questions was handled.
func (h *handled) waitHandled(t *testing.T, questions ...string) {
	t.Helper()
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, q := range questions {
			if len(h.replicasOf(q)) == 0 {
				return fmt.Errorf("%s not handled yet", q)
			}
		}
		return nil
	})
}

func (h *handled) replicasOf(q string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.by[q])
}

// publishJobs publishes each of jobs events, round by round, and returns
// each job's questions in order.
func (r *rig) publishJobs(prefix string, jobs, each int) map[string][]string {
	r.t.Helper()
	want := map[string][]string{}
	for i := range each {
		for j := range jobs {
			job, q := fmt.Sprintf("job-%d", j), fmt.Sprintf("%s-%d-%02d", prefix, j, i)
			r.publish(job, q)
			want[job] = append(want[job], q)
		}
	}
	return want
}

// TestReplicasShareTheEventsOnePinned checks two replicas of an adapter on
// one consumer: every event is handled once, by the one replica JetStream
// pinned, each job's events in order.
func TestReplicasShareTheEventsOnePinned(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := newHandled()
	d := replicaConsumer(0, 0)
	r.startReplica("a", d, h.handle)
	r.startReplica("b", d, h.handle)
	want := r.publishJobs("q", 5, 12)
	h.waitAll(t, want)
	first := h.replicasOf("q-0-00")[0]
	for _, qs := range want {
		for _, q := range qs {
			if by := h.replicasOf(q); by[0] != first {
				t.Fatalf("%s handled by %s, the rest by %s: both replicas handled events", q, by[0], first)
			}
		}
	}
}

// TestStoppedReplicaHandsItsEventsOver checks a replica that stops with
// events in its hands: the other replica takes over at once (the pin
// released, not lapsed: its TTL here is an hour), gets those events before
// the job's later ones, and every event is handled once, each job's in
// order.
func TestStoppedReplicaHandsItsEventsOver(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := newHandled()
	d := replicaConsumer(time.Hour, 0)
	stuck := make(chan struct{})
	a := r.startReplica("a", d, h.stuckOn("q-1-02", stuck))
	want := r.publishJobs("q", 3, 5) // job-1: q-1-00 … q-1-04
	<-stuck
	h.waitHandled(t, "q-0-04", "q-2-04", "q-1-01")
	// b stands by: a holds the pin, and what comes now is a's too.
	r.startReplica("b", d, h.handle)
	r.publish("job-0", "q-0-05")
	want["job-0"] = append(want["job-0"], "q-0-05")
	h.waitHandled(t, "q-0-05")
	if by := h.replicasOf("q-0-05"); by[0] != "a" {
		t.Fatalf("q-0-05 handled by %v while a held the pin", by)
	}
	a.stop()
	r.publish("job-1", "q-1-05")
	want["job-1"] = append(want["job-1"], "q-1-05")
	h.waitAll(t, want)
	for _, q := range []string{"q-1-02", "q-1-03", "q-1-04", "q-1-05"} {
		if by := h.replicasOf(q); by[0] != "b" {
			t.Errorf("%s handled by %v, want b after a stopped", q, by)
		}
	}
}

// TestDeadReplicaHandsItsEventsOver checks a replica that dies (its
// connection gone, no stop): once its pin lapses (PinnedTTL) the other
// replica gets the new events, and the events the dead one held come to
// it after the consumer's AckWait; none is lost, and none the dead one
// had handled comes again.
func TestDeadReplicaHandsItsEventsOver(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := newHandled()
	d := replicaConsumer(time.Second, 2*time.Second)
	stuck := make(chan struct{})
	a := r.startReplica("a", d, h.stuckOn("q-1-02", stuck))
	want := r.publishJobs("q", 3, 3)
	<-stuck
	h.waitHandled(t, "q-0-02", "q-2-02", "q-1-01")
	r.startReplica("b", d, h.handle)
	a.nats.Conn.Close() // dies: nothing handed back, the pin kept
	r.publish("job-0", "q-0-03")
	want["job-0"] = append(want["job-0"], "q-0-03")
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, q := range []string{"q-1-02", "q-0-03"} {
			if len(h.by[q]) == 0 {
				return fmt.Errorf("%s not handled yet", q)
			}
		}
		return nil
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	for job, qs := range want {
		for _, q := range qs {
			if by := h.by[q]; len(by) != 1 {
				t.Errorf("%s %s handled by %v, want once", job, q, by)
			}
		}
	}
	for _, q := range []string{"q-1-02", "q-0-03"} {
		if by := h.by[q]; len(by) != 1 || by[0] != "b" {
			t.Errorf("%s handled by %v, want b once a died", q, by)
		}
	}
}
