package torture

import (
	"math/rand/v2"
	"sync"
	"time"
)

// live is which services (the one server, or the replicas) are ready, as
// the run last saw them: a service is down from the moment it is killed
// until its /readyz answers 200 again. It keeps the windows when none was
// ready: a card cannot be posted, nor a click answered, then, and the
// card check does not count them against the product.
type live struct {
	mu      sync.Mutex
	ready   []bool
	n       int       // how many are ready
	since   time.Time // when the last one went down, while none is ready
	windows []window  // the closed windows when none was ready
}

// window is a span of time [from, to).
type window struct{ from, to time.Time }

func newLive(services int) *live {
	return &live{ready: make([]bool, services)}
}

// set records service i ready or down now.
func (l *live) set(i int, ready bool) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ready[i] == ready {
		return
	}
	l.ready[i] = ready
	switch {
	case ready:
		if !l.since.IsZero() {
			l.windows = append(l.windows, window{l.since, now})
			l.since = time.Time{}
		}
		l.n++
	default:
		l.n--
		if l.n == 0 {
			l.since = now
		}
	}
}

// isReady says whether service i is ready.
func (l *live) isReady(i int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ready[i]
}

// pick returns a random ready service other than not, else not itself
// when it is ready, else -1: a retry goes to another replica when there
// is one.
func (l *live) pick(not int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var up []int
	for i, ok := range l.ready {
		if ok && i != not {
			up = append(up, i)
		}
	}
	switch {
	case len(up) > 0:
		return up[rand.IntN(len(up))]
	case not >= 0 && not < len(l.ready) && l.ready[not]:
		return not
	}
	return -1
}

// down returns the windows when no service was ready, the one still open
// (if any) closed at now.
func (l *live) down() []window {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]window(nil), l.windows...)
	if l.n == 0 && !l.since.IsZero() {
		out = append(out, window{l.since, time.Now()})
	}
	return out
}

// overlap is how much of [from, to) falls in ws.
func overlap(ws []window, from, to time.Time) time.Duration {
	var d time.Duration
	for _, w := range ws {
		a, b := later(w.from, from), earlier(w.to, to)
		if b.After(a) {
			d += b.Sub(a)
		}
	}
	return d
}

// due is the instant budget after from, not counting time in ws (sorted,
// disjoint): when a card asked at from is late.
func due(ws []window, from time.Time, budget time.Duration) time.Time {
	t, left := from, budget
	for _, w := range ws {
		if !w.to.After(t) {
			continue
		}
		if w.from.After(t) {
			gap := w.from.Sub(t)
			if gap >= left {
				return t.Add(left)
			}
			left -= gap
		}
		t = w.to
	}
	return t.Add(left)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
