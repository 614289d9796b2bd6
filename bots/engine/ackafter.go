package engine

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// AckAfter asks the loop to acknowledge the event ctx handles no sooner
// than at, if its handler succeeds: what the handler published went to a
// stream JetStream syncs to disk only every so often, and until then a
// crash must bring the event back to be handled again. The event's job is
// not held meanwhile. Outside a Loop it does nothing.
func AckAfter(ctx context.Context, at time.Time) {
	if r := ReservedOf(ctx); r != nil {
		r.mu.Lock()
		if at.After(r.ackAt) {
			r.ackAt = at
		}
		r.mu.Unlock()
	}
}

// ackAt is when the event of r may be acknowledged (zero: at once).
func (r *Reserved) ackTime() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ackAt
}

// delayedAcks acknowledges events at their instants, and the ones left
// when the loop stops at once: a stop is not a crash, and what they wait
// for is synced as the server stops.
type delayedAcks struct {
	mu      sync.Mutex
	pending map[jetstream.Msg]*time.Timer
	stopped bool
}

// ack acknowledges m at at.
func (d *delayedAcks) ack(m jetstream.Msg, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		_ = m.Ack()
		return
	}
	if d.pending == nil {
		d.pending = map[jetstream.Msg]*time.Timer{}
	}
	d.pending[m] = time.AfterFunc(time.Until(at), func() {
		d.mu.Lock()
		_, ok := d.pending[m]
		delete(d.pending, m)
		d.mu.Unlock()
		if ok {
			_ = m.Ack()
		}
	})
}

// stop acknowledges every event still waiting, and waits for the server
// to confirm each: the connection may close right after.
func (d *delayedAcks) stop() {
	d.mu.Lock()
	d.stopped = true
	pending := d.pending
	d.pending = nil
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), stopAckWait)
	defer cancel()
	for m, t := range pending {
		if t.Stop() {
			_ = m.DoubleAck(ctx)
		}
	}
}

// stopAckWait bounds how long a stop waits for its acknowledgements.
const stopAckWait = 5 * time.Second
