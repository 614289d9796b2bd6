package slack

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/askbridge/askbridge/bots/engine"
)

// pacer spaces calls per channel: Slack allows about one message a second
// in a channel, with short bursts. A 429 blocks the channel for its
// Retry-After: no call goes to it before that instant, even one whose
// slot was reserved before the 429 came.
type pacer struct {
	mu    sync.Mutex
	gap   time.Duration
	burst int
	next  map[string]time.Time // earliest time the next call may start
	// blocked is the instant the channel's last 429 named.
	blocked map[string]time.Time
	pruned  time.Time
	now     func() time.Time
}

func newPacer(gap time.Duration, burst int) *pacer {
	return &pacer{gap: gap, burst: burst, next: map[string]time.Time{}, blocked: map[string]time.Time{}, now: time.Now}
}

// heldError says a channel is held (by a rate limit, or by a queue of
// calls) for longer than a call may wait for it.
type heldError struct{ left time.Duration }

func (e *heldError) Error() string { return fmt.Sprintf("held by a rate limit for %v", e.left) }

// take returns once a call may go to channel, having used one of its
// slots. Handling an event (engine.ReservedOf(ctx) is set), it never
// sleeps: when the slot is still to come it keeps it in the event's
// reservations and returns an *engine.Hold until then, so the worker
// serves other jobs meanwhile. Otherwise it sleeps up to longest for the
// slot, or returns a *heldError at once, reserving nothing.
func (p *pacer) take(ctx context.Context, channel string, longest time.Duration) error {
	if channel == "" {
		channel = "-"
	}
	res := engine.ReservedOf(ctx)
	for {
		now := p.now()
		p.mu.Lock()
		at, ok := time.Time{}, false
		if res != nil {
			at, ok = res.Take(channel)
		}
		if !ok || at.Before(p.blocked[channel]) {
			// No slot yet, or one a 429 since has voided.
			if res == nil {
				if left := p.slotLocked(channel, now).Sub(now); left > longest {
					p.mu.Unlock()
					return &heldError{left: left}
				}
			}
			at = p.reserveLocked(channel, now)
		}
		p.mu.Unlock()
		left := at.Sub(now)
		if left <= 0 {
			return nil
		}
		if res != nil {
			res.Put(channel, at)
			return &engine.Hold{Until: at, Why: "slack: waiting for channel " + channel + "'s turn"}
		}
		t := time.NewTimer(left)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		p.mu.Lock()
		voided := at.Before(p.blocked[channel])
		p.mu.Unlock()
		if !voided {
			return nil
		}
	}
}

// ready reserves the event's next slot on channel, and returns an
// *engine.Hold when it is still to come: a handler asks before it claims
// work that a wait would leave claimed. The call then uses the slot,
// which no other job can take meanwhile.
func (p *pacer) ready(ctx context.Context, channel string) error {
	res := engine.ReservedOf(ctx)
	if res == nil {
		return nil
	}
	if channel == "" {
		channel = "-"
	}
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := res.Take(channel)
	if !ok || at.Before(p.blocked[channel]) {
		at = p.reserveLocked(channel, now)
	}
	res.Put(channel, at)
	if at.After(now) {
		return &engine.Hold{Until: at, Why: "slack: waiting for channel " + channel + "'s turn"}
	}
	return nil
}

// readyPair is ready for a job's first question in channel, which posts
// twice (the thread parent, then the card): it reserves two slots in a
// row, so the card follows its parent rather than every other job's
// parent; next hands the second slot to the card's post.
func (p *pacer) readyPair(ctx context.Context, channel string) error {
	res := engine.ReservedOf(ctx)
	if res == nil {
		return nil
	}
	if channel == "" {
		channel = "-"
	}
	p.mu.Lock()
	if second, ok := res.Take(channel + pairKey); ok {
		res.Put(channel+pairKey, second) // reserved by an earlier try
	} else {
		now := p.now()
		first, has := res.Take(channel)
		if !has || first.Before(p.blocked[channel]) {
			first = p.reserveLocked(channel, now)
		}
		res.Put(channel, first)
		res.Put(channel+pairKey, p.reserveLocked(channel, now))
	}
	p.mu.Unlock()
	return p.ready(ctx, channel)
}

// handOn hands the second slot readyPair reserved on channel to the call
// after the one the first slot served.
func (p *pacer) handOn(ctx context.Context, channel string) {
	res := engine.ReservedOf(ctx)
	if res == nil {
		return
	}
	if channel == "" {
		channel = "-"
	}
	if at, ok := res.Take(channel + pairKey); ok {
		res.Put(channel, at)
	}
}

// pairKey names, in an event's reservations, the second slot of a pair.
const pairKey = " second"

// slotLocked is when the next call to channel may start.
func (p *pacer) slotLocked(channel string, now time.Time) time.Time {
	n := p.next[channel]
	// A burst: the schedule may lag "now" by up to burst gaps.
	if floor := now.Add(-time.Duration(p.burst-1) * p.gap); n.Before(floor) {
		n = floor
	}
	return n
}

// reserveLocked takes the next slot of channel.
func (p *pacer) reserveLocked(channel string, now time.Time) time.Time {
	n := p.slotLocked(channel, now)
	p.next[channel] = n.Add(p.gap)
	if len(p.next) > 10000 && now.Sub(p.pruned) > time.Minute { // forget idle channels
		p.pruned = now
		for k, v := range p.next {
			if v.Before(now) {
				delete(p.next, k)
			}
		}
		for k, v := range p.blocked {
			if v.Before(now) {
				delete(p.blocked, k)
			}
		}
	}
	return n
}

// block keeps every call on channel waiting for d from now.
func (p *pacer) block(channel string, d time.Duration) {
	if channel == "" {
		channel = "-"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	until := p.now().Add(d)
	if p.next[channel].Before(until) {
		p.next[channel] = until
	}
	if p.blocked[channel].Before(until) {
		p.blocked[channel] = until
	}
}
