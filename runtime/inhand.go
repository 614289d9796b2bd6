package runtime

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// inHand is the messages the runtime's consumers handed it and it has not
// acknowledged yet: queued for a batch, being decided, waiting for a
// commit. The consumers' AckWait is short (consumerAckWait), so that what
// a dead replica held comes to another within seconds; a live runtime
// keeps what it holds however long it takes, telling JetStream each is in
// progress every third of the AckWait (docs/design.md, "Failover").
type inHand struct {
	mu   sync.Mutex
	msgs map[jetstream.Msg]struct{}
}

func newInHand() *inHand { return &inHand{msgs: map[jetstream.Msg]struct{}{}} }

// hold tracks m until done.
func (h *inHand) hold(m jetstream.Msg) {
	h.mu.Lock()
	h.msgs[m] = struct{}{}
	h.mu.Unlock()
}

// done stops tracking m, before it is acknowledged or handed back.
func (h *inHand) done(m jetstream.Msg) {
	h.mu.Lock()
	delete(h.msgs, m)
	h.mu.Unlock()
}

// len is how many messages are in hand.
func (h *inHand) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.msgs)
}

// progressEvery is how often each message in hand is told in progress.
const progressEvery = consumerAckWait / 3

// keep tells JetStream, every progressEvery until ctx ends, that each
// message in hand is still being worked on.
func (h *inHand) keep(ctx context.Context) {
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		h.progress()
	}
}

// progress tells JetStream each message in hand is still being worked on.
// It holds the lock throughout, and a message is let go (done) before its
// acknowledgement, so no progress goes out after a Nak: it would restart
// the message's AckWait, and the message handed back would come again
// only then.
func (h *inHand) progress() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for m := range h.msgs {
		_ = m.InProgress()
	}
}
