package engine

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The adapters' consumer has a short AckWait (bridge.EventAckWait), so
// that an event a dead replica held comes to another within seconds. A
// live replica keeps every event it holds: from the moment the loop reads
// it to its acknowledgement, whether it waits in a worker's queue, is
// being handled (a Slack 429 waited out included), is put aside with its
// job (Hold) or waits for its acknowledgement (AckAfter), the loop tells
// JetStream it is still in hand (InProgress) every third of the AckWait
// (docs/design.md, "Failover").

// inFlight is the events a loop holds, kept in progress.
type inFlight struct {
	mu   sync.Mutex
	msgs map[*held]struct{}
	next uint64
}

// held is an event in hand: its acknowledgement, negative or not, lets
// it go from the loop's inFlight.
type held struct {
	jetstream.Msg
	f *inFlight
	n uint64 // the order it was read in
}

func newInFlight() *inFlight { return &inFlight{msgs: map[*held]struct{}{}} }

// hold tracks m until it is acknowledged.
func (f *inFlight) hold(m jetstream.Msg) *held {
	f.mu.Lock()
	f.next++
	h := &held{Msg: m, f: f, n: f.next}
	f.msgs[h] = struct{}{}
	f.mu.Unlock()
	return h
}

func (f *inFlight) done(h *held) {
	f.mu.Lock()
	delete(f.msgs, h)
	f.mu.Unlock()
}

// len is how many events are in hand.
func (f *inFlight) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.msgs)
}

// keep tells JetStream every event in hand is still being handled, every
// interval, until ctx ends.
func (f *inFlight) keep(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.progress()
	}
}

// progress tells JetStream every event in hand is still being handled, in
// the order read: each event's AckWait then runs out after the one before
// it, and were this replica to die, JetStream would hand them on in their
// order. It holds the lock throughout, so an acknowledgement (which lets
// its event go first) never goes out before a progress sent for it: a
// progress after a Nak would restart the event's AckWait, and the event
// handed back would come again only then.
func (f *inFlight) progress() {
	f.mu.Lock()
	defer f.mu.Unlock()
	msgs := make([]*held, 0, len(f.msgs))
	for h := range f.msgs {
		msgs = append(msgs, h)
	}
	slices.SortFunc(msgs, func(a, b *held) int { return cmp.Compare(a.n, b.n) })
	for _, h := range msgs {
		_ = h.Msg.InProgress()
	}
}

func (h *held) Ack() error                          { h.f.done(h); return h.Msg.Ack() }
func (h *held) DoubleAck(ctx context.Context) error { h.f.done(h); return h.Msg.DoubleAck(ctx) }
func (h *held) Nak() error                          { h.f.done(h); return h.Msg.Nak() }
func (h *held) NakWithDelay(d time.Duration) error  { h.f.done(h); return h.Msg.NakWithDelay(d) }
func (h *held) Term() error                         { h.f.done(h); return h.Msg.Term() }
func (h *held) TermWithReason(r string) error       { h.f.done(h); return h.Msg.TermWithReason(r) }

// progressEvery is how often the events in hand are kept in progress on a
// consumer with AckWait ackWait: a third of it, so one lost message of
// progress does not lose the event.
func progressEvery(ackWait time.Duration) time.Duration {
	if ackWait <= 0 {
		ackWait = 30 * time.Second // JetStream's default
	}
	return max(ackWait/3, 100*time.Millisecond)
}

// queue is a worker's events in order, without a bound: the loop reads
// every event JetStream hands it at once, so none waits unseen in the pull
// subscription's buffer while its AckWait runs (the consumer's
// MaxAckPending bounds them all). A feeder passes them on to the worker.
type queue struct {
	mu     sync.Mutex
	msgs   []jetstream.Msg
	closed bool
	ready  chan struct{} // a message or the close is there
}

func newQueue() *queue { return &queue{ready: make(chan struct{}, 1)} }

func (q *queue) push(m jetstream.Msg) {
	q.mu.Lock()
	q.msgs = append(q.msgs, m)
	q.mu.Unlock()
	q.signal()
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// feed passes the queue's events on to out in order, and closes out once
// the queue is closed and empty.
func (q *queue) feed(out chan<- jetstream.Msg) {
	defer close(out)
	for {
		q.mu.Lock()
		msgs, closed := q.msgs, q.closed
		q.msgs = nil
		q.mu.Unlock()
		for _, m := range msgs {
			out <- m
		}
		if closed && len(msgs) == 0 {
			return
		}
		if len(msgs) == 0 {
			<-q.ready
		}
	}
}
