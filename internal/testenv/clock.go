package testenv

import (
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/runtime"
)

// Clock is a runtime.Clock a test moves by hand (Options.Clock): ladder
// steps and timeouts fall due when the test advances it, with no real wait.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []clockWaiter
}

var _ runtime.Clock = (*Clock)(nil)

// clockWaiter is an At waiting for its time.
type clockWaiter struct {
	at time.Time
	ch chan time.Time
}

// NewClock starts a clock at the real time: the runtime compares question
// deadlines with the times NATS gives messages, which stay real.
func NewClock() *Clock { return &Clock{now: time.Now()} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// At sends the clock's time once it has been advanced to t, at once when
// it has.
func (c *Clock) At(t time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !t.After(c.now) {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, clockWaiter{at: t, ch: ch})
	return ch
}

// Advance moves the clock on by d and wakes every At now due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	waiting := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			waiting = append(waiting, w)
			continue
		}
		w.ch <- c.now
	}
	clear(c.waiters[len(waiting):])
	c.waiters = waiting
}

// AdvanceUntil moves the clock on by step between polls of f until f
// returns nil, and fails the test with f's last error after timeout of
// real time. The runtime works between steps, so what falls due at one
// time is handled before the next.
func (c *Clock) AdvanceUntil(t testing.TB, step, timeout time.Duration, f func() error) {
	t.Helper()
	CheckFor(t, timeout, time.Millisecond, func() error {
		err := f()
		if err != nil {
			c.Advance(step)
		}
		return err
	})
}
