package slack

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
)

// decisions lets a click wait for the runtime's decision on its attempt.
// With a JetStream that does not fsync every write, Slack is answered only
// once the decision is committed (fsynced) in the runtime's store and
// announced, so an acknowledged click survives a power cut.
type decisions struct {
	mu      sync.Mutex
	waiting map[string]chan struct{}
	sub     *nats.Subscription
}

// watchDecisions subscribes to every event; only attempt ids are read.
func watchDecisions(nc *nats.Conn) (*decisions, error) {
	d := &decisions{waiting: map[string]chan struct{}{}}
	sub, err := nc.Subscribe(bridge.PrefixEvent+".>", func(m *nats.Msg) {
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

// expect registers an attempt before it is published; the returned wait
// blocks until the attempt is decided or ctx ends, and reports which.
func (d *decisions) expect(attemptID string) (wait func(context.Context) bool) {
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

// forget drops an attempt that will not be published after all.
func (d *decisions) forget(attemptID string) {
	d.mu.Lock()
	delete(d.waiting, attemptID)
	d.mu.Unlock()
}
