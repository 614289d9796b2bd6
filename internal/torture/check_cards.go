package torture

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// checkCards checks every stored question's card on the fake Slack:
// posted once, and within Options.CardWithin of the question's acknowledged
// publish, not counting the windows when no replica was ready (nothing
// could post then). A question that ended before its card was due may
// have none: there was nothing left to show.
func (r *run) checkCards(rep *Report, rb *readBack) {
	var delays []time.Duration
	lookups, lastLookup := r.slack.lookedUp()
	rep.Lookups = lookups
	for _, q := range r.questions {
		k := q.key()
		v, stored := rb.views[k]
		if !stored || !q.acked {
			continue
		}
		cs := rb.cards[k]
		if len(cs) > 1 {
			rep.CardDuplicates += len(cs) - 1
			rep.violate("question %s: its card was posted %d times (ts %s)", k, len(cs), cardTSs(cs))
		}
		late := due(rb.down, q.ackedAt, r.o.CardWithin)
		if len(cs) == 0 {
			if end, ok := endOf(rb.events[k], v.Deadline); ok && end.Before(late) {
				rep.NoCard++
				continue
			}
			rep.CardsMissing++
			rep.violate("question %s (%s) has no card at the end: its publish was acknowledged at %s, so its card was due by %s (%v later, %v of it when no replica was ready)%s; %s",
				k, v.State, clock(q.ackedAt), clock(late), late.Sub(q.ackedAt).Round(time.Millisecond), overlap(rb.down, q.ackedAt, late).Round(time.Millisecond),
				r.killsWithin(q.ackedAt.Add(-r.o.CardWithin), late), lookupsSaid(lookups, lastLookup))
			continue
		}
		first := cs[0].at
		down := overlap(rb.down, q.ackedAt, first)
		delays = append(delays, max(0, first.Sub(q.ackedAt)-down))
		if first.After(late) {
			rep.CardsLate++
			rep.violate("question %s: its card came at %s, %v after its publish was acknowledged at %s; less the %v when no replica was ready, %v: more than %v%s",
				k, clock(first), first.Sub(q.ackedAt).Round(time.Millisecond), clock(q.ackedAt), down.Round(time.Millisecond),
				(first.Sub(q.ackedAt) - down).Round(time.Millisecond), r.o.CardWithin, r.killsWithin(q.ackedAt.Add(-r.o.CardWithin), first))
		}
	}
	r.writeCards(rb)
	rep.CardDelayP50, rep.CardDelayP99, rep.CardDelayMax = spread(delays)
}

// lookupsSaid says how many lookups for cards the adapters made, and when
// the last came: a backlog of them, paced one a second, holds cards back.
func lookupsSaid(n int, last time.Time) string {
	if n == 0 {
		return "the adapters looked for no card"
	}
	return fmt.Sprintf("the adapters looked for cards %d times, the last at %s", n, clock(last))
}

// killsWithin names the kills between from and to, for a sentence.
func (r *run) killsWithin(from, to time.Time) string {
	var ks []string
	for _, k := range r.killLog {
		if !k.at.Before(from) && !k.at.After(to) {
			ks = append(ks, k.what+" at "+clock(k.at))
		}
	}
	if len(ks) == 0 {
		return ""
	}
	return fmt.Sprintf("; kills from %v before the publish on: ", r.o.CardWithin) + strings.Join(ks, ", ")
}

// endOf is when an ended question stopped waiting for a person: its
// deadline, or its terminal event when that came first. (A timeout is
// recorded a little after the deadline; the adapters no longer show a
// question past it.)
func endOf(evs []streamMsg, deadline time.Time) (time.Time, bool) {
	for _, m := range evs {
		if isTerminal(&m.ev) {
			if !deadline.IsZero() && deadline.Before(m.ev.At) {
				return deadline, true
			}
			return m.ev.At, true
		}
	}
	return time.Time{}, false
}

// spread sorts ds and returns their median, 99th percentile and maximum,
// to the millisecond.
func spread(ds []time.Duration) (p50, p99, most time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	return percentile(ds, 50), percentile(ds, 99), ds[len(ds)-1].Round(time.Millisecond)
}

// percentile is the p-th percentile of sorted ds, to the millisecond.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := (len(ds)*p + 99) / 100
	if i > 0 {
		i--
	}
	return ds[i].Round(time.Millisecond)
}

func cardTSs(cs []card) string {
	s := ""
	for i, c := range cs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s at %s in thread %s", c.ts, clock(c.at), cmp.Or(c.thread, "none"))
	}
	return s
}

// writeCards writes each question's acknowledged publish and card times
// to <DataDir>/cards.tsv, for a look at a run that found late cards.
func (r *run) writeCards(rb *readBack) {
	var b strings.Builder
	b.WriteString("question\tacked\tcard\tdelay\tstate\n")
	for _, q := range r.questions {
		if !q.acked {
			continue
		}
		at, delay := "-", "-"
		if cs := rb.cards[q.key()]; len(cs) > 0 {
			at, delay = clock(cs[0].at), cs[0].at.Sub(q.ackedAt).Round(time.Millisecond).String()
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\n", q.key(), clock(q.ackedAt), at, delay, rb.views[q.key()].State)
	}
	if err := os.WriteFile(filepath.Join(r.o.DataDir, "cards.tsv"), []byte(b.String()), 0o640); err != nil {
		r.logf("could not write cards.tsv: %v", err)
	}
}
