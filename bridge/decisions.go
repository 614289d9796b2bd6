package bridge

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/nats-io/nats.go"
)

// Decisions lets a front-end wait for the runtime's decision on an attempt
// it proposed. With a JetStream that does not fsync every write, a chat
// platform is answered only once the decision is committed (fsynced) in the
// runtime's store and announced, so an acknowledged click survives a power
// cut.
type Decisions struct {
	mu      sync.Mutex
	waiting map[string]chan struct{}
	sub     *nats.Subscription
}

// WatchDecisions subscribes to every event; only attempt ids are read.
func WatchDecisions(nc *nats.Conn) (*Decisions, error) {
	d := &Decisions{waiting: map[string]chan struct{}{}}
	sub, err := nc.Subscribe(PrefixEvent+".>", func(m *nats.Msg) {
		var ev struct {
			AttemptID string `json:"attempt_id"`
		}
		if json.Unmarshal(m.Data, &ev) != nil || ev.AttemptID == "" {
			return
		}
		d.mu.Lock()
		ch := d.waiting[ev.AttemptID]
		delete(d.waiting, ev.AttemptID)
		d.mu.Unlock()
		if ch != nil {
			close(ch)
		}
	})
	if err != nil {
		return nil, err
	}
	d.sub = sub
	return d, nil
}

// Expect registers an attempt before it is published; the returned wait
// blocks until the attempt is decided or ctx ends, and reports which.
func (d *Decisions) Expect(attemptID string) (wait func(context.Context) bool) {
	ch := make(chan struct{})
	d.mu.Lock()
	d.waiting[attemptID] = ch
	d.mu.Unlock()
	return func(ctx context.Context) bool {
		select {
		case <-ch:
			return true
		case <-ctx.Done():
			d.mu.Lock()
			delete(d.waiting, attemptID)
			d.mu.Unlock()
			return false
		}
	}
}

// Forget drops an attempt that will not be published after all.
func (d *Decisions) Forget(attemptID string) {
	d.mu.Lock()
	delete(d.waiting, attemptID)
	d.mu.Unlock()
}
