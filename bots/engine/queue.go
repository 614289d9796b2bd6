package engine

import (
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// The adapters' consumer has a short AckWait (bridge.EventAckWait), so
// that an event a dead replica held comes to another within seconds. A
// live replica keeps every event it holds: from the moment the loop reads
// it to its acknowledgement, whether it waits in a worker's queue, is
// being handled (a Slack 429 waited out included), is put aside with its
// job (Hold) or waits for its acknowledgement (AckAfter), the loop tells
// JetStream it is still in hand (InProgress) every third of the AckWait
// (bridge.InHand; docs/design.md, "Failover").

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
