package runtime

import "time"

// Clock tells the runtime the time of questions: when one is asked,
// decided or ended, and when its ladder steps and timeout fall due, which
// is when the ladder wakes. Tests give the runtime a clock they move by
// hand, so a timeout needs no real wait. Work paced by NATS and the disk
// (the relay, the lease, heal, pruning) keeps the real clock, as
// JetStream's own timers do.
type Clock interface {
	Now() time.Time
	// At sends the time on the channel once the clock reaches t, at once
	// when it has.
	At(t time.Time) <-chan time.Time
}

// realClock is the system's clock.
type realClock struct{}

func (realClock) Now() time.Time                  { return time.Now() }
func (realClock) At(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }

// stamp is the time now as the store keeps it, in UTC to the millisecond:
// the at of an event or resume is then the settled_at and audit time that
// show gives for the same step.
func (r *Runtime) stamp() time.Time { return r.clock.Now().UTC().Truncate(time.Millisecond) }
