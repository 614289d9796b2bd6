package bench

import (
	"math"
	"sync"
	"time"
)

// SlackLimits is the rate limit Slack puts on chat.postMessage, as a fake
// Slack enforces it: about one message a second in each channel, after a
// short burst. A call over the limit is refused with a Retry-After of
// whole seconds, as Slack's HTTP 429 carries; a call to a channel before
// the instant its last refusal named is an early retry, which Slack may
// punish and a well-behaved client never makes.
type SlackLimits struct {
	gap   time.Duration
	burst int
	now   func() time.Time

	mu       sync.Mutex
	channels map[string]*channelLimit
}

// channelLimit is one channel's state, a generic cell rate algorithm: tat
// is the theoretical arrival time of the next call at the steady pace.
type channelLimit struct {
	tat       time.Time
	notBefore time.Time // the instant the last 429 named
	accepted  int
	limited   int
	early     int
}

// NewSlackLimits allows burst calls a channel at once and one every gap
// after them. now is the clock (time.Now outside tests).
func NewSlackLimits(gap time.Duration, burst int, now func() time.Time) *SlackLimits {
	return &SlackLimits{gap: gap, burst: max(burst, 1), now: now, channels: map[string]*channelLimit{}}
}

// Take admits one chat.postMessage to channel, or refuses it: retryAfter
// is then the whole seconds to send in Retry-After (at least 1), and early
// says the call came before the instant an earlier refusal named.
func (l *SlackLimits) Take(channel string) (retryAfter int, early bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	c := l.channels[channel]
	if c == nil {
		c = &channelLimit{}
		l.channels[channel] = c
	}
	if now.Before(c.notBefore) {
		c.early++
		c.limited++
		return wholeSeconds(c.notBefore.Sub(now)), true
	}
	tat := c.tat
	if tat.Before(now) {
		tat = now
	}
	if wait := tat.Sub(now) - time.Duration(l.burst-1)*l.gap; wait > 0 {
		secs := wholeSeconds(wait)
		c.notBefore = now.Add(time.Duration(secs) * time.Second)
		c.limited++
		return secs, false
	}
	c.tat = tat.Add(l.gap)
	c.accepted++
	return 0, false
}

func wholeSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// SlackLimitStats counts what a SlackLimits answered.
type SlackLimitStats struct {
	Channels int // channels called
	Accepted int // calls admitted
	Limited  int // calls refused with 429
	// EarlyRetries are calls before the instant a 429 named, in
	// EarlyChannels channels.
	EarlyRetries, EarlyChannels int
	// Floor is how long the busiest channel's accepted calls take at
	// Slack's pace alone (a burst, then one every gap): no client can
	// show them sooner.
	Floor time.Duration
}

// Stats counts the calls so far.
func (l *SlackLimits) Stats() SlackLimitStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := SlackLimitStats{Channels: len(l.channels)}
	for _, c := range l.channels {
		s.Accepted += c.accepted
		s.Limited += c.limited
		s.EarlyRetries += c.early
		if c.early > 0 {
			s.EarlyChannels++
		}
		s.Floor = max(s.Floor, time.Duration(c.accepted-l.burst)*l.gap)
	}
	return s
}
