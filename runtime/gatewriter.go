package runtime

import (
	"context"
	"errors"
	"sync"

	"github.com/askbridge/askbridge/store/record"
)

// gateBatch bounds the decisions one transaction writes.
const gateBatch = 512

var errGateStopped = errors.New("runtime: the gate has stopped")

// gateWriter writes the gate's decisions with group commit: one goroutine
// takes every decision that arrived while the previous transaction ran
// and writes them all in the next, so a commit's fsync is shared by all
// of them (docs/design.md, "The gate").
type gateWriter struct {
	st   gateStore
	in   chan gateWrite
	done chan struct{}
	// mu guards closing in against writes in flight.
	mu     sync.RWMutex
	closed bool
}

// gateWrite is a decision waiting for its commit; err says how it went.
type gateWrite struct {
	w   record.GateWrite
	err chan error
}

func newGateWriter(st gateStore) *gateWriter {
	w := &gateWriter{st: st, in: make(chan gateWrite, gateInFlight), done: make(chan struct{})}
	go w.run()
	return w
}

// write hands a decision to the writer and waits until it is committed.
// It does not give up on a context: an execute's outcome is known only
// once its transaction has ended.
func (w *gateWriter) write(gw record.GateWrite) error {
	x := gateWrite{w: gw, err: make(chan error, 1)}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return errGateStopped
	}
	w.in <- x
	w.mu.RUnlock()
	return <-x.err
}

func (w *gateWriter) run() {
	defer close(w.done)
	batch := make([]gateWrite, 0, gateBatch)
	writes := make([]record.GateWrite, 0, gateBatch)
	for first := range w.in {
		batch = append(batch[:0], first)
	more:
		for len(batch) < gateBatch {
			select {
			case x, ok := <-w.in:
				if !ok {
					break more
				}
				batch = append(batch, x)
			default:
				break more
			}
		}
		writes = writes[:0]
		for _, x := range batch {
			writes = append(writes, x.w)
		}
		// Not the runtime's context: what was decided is written even
		// while the runtime stops.
		err := w.st.GateCommit(context.Background(), writes)
		for _, x := range batch {
			x.err <- err
		}
	}
}

// stop writes what was handed over and stops the writer.
func (w *gateWriter) stop() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.in)
	}
	w.mu.Unlock()
	<-w.done
}
