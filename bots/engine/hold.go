package engine

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Hold asks the loop to put the event's job aside until Until, when the
// event is handled again: the job's later events wait behind it in order,
// and the worker serves other jobs meanwhile. A platform's pacing returns
// it when a channel's next send slot is still to come (docs/design.md,
// ordering rules).
type Hold struct {
	Until time.Time
	Why   string
}

func (e *Hold) Error() string { return "held until " + e.Until.Format(time.RFC3339Nano) + ": " + e.Why }

// Reserved keeps what the tries of one event put aside share, instants
// by key: the send slots its handler reserved (by channel), so that the
// event, when it comes back, uses its slot instead of queueing again at
// the end; or the instant of a claim the handler keeps while it waits.
type Reserved struct {
	mu sync.Mutex
	at map[string]time.Time
	// ackAt: see AckAfter.
	ackAt time.Time
}

type reservedKey struct{}

// ReservedOf returns the slots of the event ctx handles, or nil outside
// a Loop (a caller then waits for its slot itself).
func ReservedOf(ctx context.Context) *Reserved {
	r, _ := ctx.Value(reservedKey{}).(*Reserved)
	return r
}

// WithReserved returns ctx carrying r, as the loop gives each event's
// handler (a test drives a platform's pacing with it).
func WithReserved(ctx context.Context, r *Reserved) context.Context {
	return context.WithValue(ctx, reservedKey{}, r)
}

// Take removes and returns the slot reserved for key.
func (r *Reserved) Take(key string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.at[key]
	delete(r.at, key)
	return at, ok
}

// Put keeps the slot at for key until the event's next try.
func (r *Reserved) Put(key string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at = map[string]time.Time{}
	}
	r.at[key] = at
}

// inHand is an event a worker holds, with what its tries share.
type inHand struct {
	m        jetstream.Msg
	reserved Reserved
}

// heldJob is a job put aside until its instant: its events in order, the
// first the one that asked to wait.
type heldJob struct {
	until time.Time
	msgs  []*inHand
}

// worker handles the events of the jobs of one queue, in order per job,
// putting a job aside while it waits for its instant.
type worker struct {
	l            *Loop
	ctx          context.Context
	held         map[string]*heldJob // by event subject (one per job)
	unsubscribed <-chan struct{}
}

func (w *worker) run(in <-chan jetstream.Msg) {
	w.held = map[string]*heldJob{}
	wake := time.NewTimer(time.Hour)
	defer wake.Stop()
	for {
		if next, ok := w.earliest(); ok {
			wake.Reset(time.Until(next))
		} else {
			wake.Stop()
		}
		select {
		case m, ok := <-in:
			if !ok {
				w.handBackHeld()
				return
			}
			if j := w.held[m.Subject()]; j != nil {
				j.msgs = append(j.msgs, &inHand{m: m})
				continue
			}
			w.serve(m.Subject(), []*inHand{{m: m}})
		case <-wake.C:
			now := time.Now()
			for subject, j := range w.held {
				if !j.until.After(now) {
					delete(w.held, subject)
					w.serve(subject, j.msgs)
				}
			}
		}
	}
}

// serve handles a job's events in order until one asks to wait; that one
// and those behind it are put aside.
func (w *worker) serve(subject string, msgs []*inHand) {
	for i, h := range msgs {
		if until, held := w.l.handle(w.ctx, h, w.unsubscribed); held {
			w.held[subject] = &heldJob{until: until, msgs: msgs[i:]}
			return
		}
	}
}

// earliest is the first instant a job put aside comes back.
func (w *worker) earliest() (time.Time, bool) {
	var next time.Time
	for _, j := range w.held {
		if next.IsZero() || j.until.Before(next) {
			next = j.until
		}
	}
	return next, !next.IsZero()
}

// handBackHeld returns the events of jobs put aside when the loop stops.
func (w *worker) handBackHeld() {
	for subject, j := range w.held {
		for _, h := range j.msgs {
			w.l.handBack(h.m, w.unsubscribed)
		}
		delete(w.held, subject)
	}
}
