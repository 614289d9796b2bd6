package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestDeadReplicaHoldingAnEventHandsItOver checks failover with the
// adapters' own timings (bridge.EventAckWait, bridge.EventPinnedTTL): a
// replica dies (its connection gone, no stop) while it holds a job's
// event in its handler, as one posting a card; the other replica handles
// that event and the job's event behind it, in order, and an event
// published after the death, each once. The deadline only detects a
// hang: the takeover takes the AckWait (docs/design.md, "Failover").
func TestDeadReplicaHoldingAnEventHandsItOver(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := newHandled()
	d := replicaConsumer(0, 0)
	stuck := make(chan struct{})
	a := r.startReplica("a", d, h.stuckOn("q-1-01", stuck))
	want := r.publishJobs("q", 3, 3) // job-1: q-1-00 … q-1-02
	<-stuck
	h.waitHandled(t, "q-0-02", "q-2-02", "q-1-00")
	r.startReplica("b", d, h.handle)
	a.nats.Conn.Close() // dies: nothing handed back, the pin kept
	r.publish("job-0", "q-0-03")
	want["job-0"] = append(want["job-0"], "q-0-03")
	testenv.CheckFor(t, time.Minute, 10*time.Millisecond, func() error {
		if len(h.replicasOf("q-1-02")) == 0 {
			return fmt.Errorf("q-1-02 not handled yet (q-1-01 by %v)", h.replicasOf("q-1-01"))
		}
		return nil
	})
	h.waitAll(t, want)
	for _, q := range []string{"q-1-01", "q-1-02", "q-0-03"} {
		if by := h.replicasOf(q); len(by) != 1 || by[0] != "b" {
			t.Errorf("%s handled by %v, want b once a died", q, by)
		}
	}
}

// TestLiveReplicaKeepsAnEventPastTheAckWait checks the other side: a live
// replica whose handler holds an event longer than the consumer's AckWait
// (a Slack 429 waited out) keeps it, telling JetStream it is in progress;
// the other replica standing by is not given it, and it is handled once.
func TestLiveReplicaKeepsAnEventPastTheAckWait(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := newHandled()
	d := replicaConsumer(0, 0)
	// Progress acknowledgements of the consumer's events, as they go by:
	// the most any one event had.
	var mu sync.Mutex
	progress := map[string]int{}
	most := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, c := range progress {
			n = max(n, c)
		}
		return n
	}
	sub, err := r.nats.Conn.Subscribe("$JS.ACK."+bridge.StreamEvents+"."+d.Config.Durable+".>", func(m *nats.Msg) {
		if string(m.Data) == "+WPI" {
			mu.Lock()
			progress[m.Subject]++
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	// Past the AckWait: a progress every third of it, so four of them
	// span more than one AckWait.
	held := make(chan struct{})
	var once sync.Once
	slow := func(ctx context.Context, replica string, ev *bridge.Event) error {
		if ev.QuestionID == "q-1-01" {
			once.Do(func() { close(held) })
			testenv.CheckFor(t, time.Minute, 10*time.Millisecond, func() error {
				if n := most(); n < 4 {
					return fmt.Errorf("%d progress acknowledgements", n)
				}
				return nil
			})
		}
		h.add(replica, ev)
		return nil
	}
	r.startReplica("a", d, slow)
	want := r.publishJobs("q", 2, 3)
	<-held
	r.startReplica("b", d, h.handle)
	h.waitAll(t, want)
	for _, qs := range want {
		for _, q := range qs {
			if by := h.replicasOf(q); len(by) != 1 || by[0] != "a" {
				t.Errorf("%s handled by %v, want a once: it held the pin and its events", q, by)
			}
		}
	}
	c, err := r.nats.JS.Consumer(context.Background(), bridge.StreamEvents, d.Config.Durable)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.NumRedelivered != 0 || info.Config.AckWait != bridge.EventAckWait {
		t.Errorf("consumer: %d redelivered (AckWait %v), want none: the event held was kept in progress", info.NumRedelivered, info.Config.AckWait)
	}
}
