package torture

import (
	"fmt"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// checkAnswers checks every answer given: one acknowledged (a click
// answered HTTP 200, an attempt JetStream stored) is decided exactly
// once, settling its question as it asked or refused for a reason that
// holds. It sorts the clicks cut by a kill by where the kill came.
func (r *run) checkAnswers(rep *Report, rb *readBack) {
	for _, a := range r.attempts {
		if !a.sent {
			continue
		}
		if a.click != nil && a.click.cut {
			classifyCut(rep, a, rb.stored)
		}
		k := a.q.key()
		ds := rb.byAttempt[a.id]
		if len(ds) > 1 {
			rep.violate("%s on %s decided %d times: %s", a.desc(), k, len(ds), seqs(ds, evDesc))
		}
		if len(ds) == 0 {
			if into := r.foldedInto(a, rb); into != nil {
				rep.ClicksFolded++
				continue
			}
			if a.acked {
				rep.Lost++
				rep.violate("%s on %s was acknowledged at %s but never decided (no answered, declined or refused event for attempt %s; %s); question events: %s%s",
					a.desc(), k, clock(a.ackedAt), a.id, storedDesc(rb.stored, a.id), seqs(rb.events[k], evDesc), a.trail()+r.otherClicks(a))
			}
			continue
		}
		if !a.acked {
			continue // decided although its acknowledgement never reached us
		}
		r.checkDecision(rep, rb, a, ds[0])
	}
}

// checkDecision checks how an acknowledged answer was decided.
func (r *run) checkDecision(rep *Report, rb *readBack, a *attempt, d streamMsg) {
	k := a.q.key()
	v := rb.views[k]
	switch d.ev.Type {
	case bridge.EventRefused:
		rep.Refused++
		rep.RefusedBy[d.ev.Reason]++
		switch {
		case d.ev.Reason == bridge.RefusedNotPending:
			if v.State == bridge.StatePending {
				rep.violate("%s on %s refused as not pending, yet the question is pending", a.desc(), k)
			}
		case d.ev.Reason == bridge.RefusedInvalid && a.answer == "green":
		default:
			rep.violate("%s (%s %q) on %s refused as %s: %s", a.desc(), a.action, a.answer, k, d.ev.Reason, d.ev.Text)
		}
	case bridge.EventAnswered, bridge.EventDeclined:
		rep.Settled++
		want := bridge.StateAnswered
		if a.action == bridge.ActionDecline {
			want = bridge.StateDeclined
		}
		if v.State != want || d.ev.Type != want {
			rep.violate("%s (%s) on %s settled it as %s, but it ended %s", a.desc(), a.action, k, d.ev.Type, v.State)
		}
		if rs := rb.resumes[k]; len(rs) != 1 || rs[0].res.By != a.by {
			rep.violate("%s by %s settled %s but its resumes are: %s", a.desc(), a.by, k, seqs(rs, resDesc))
		}
	}
}

// foldedInto returns the click a click was folded into, if any: the same
// person's click on the same button made while that one's claim held
// (bots/slack foldClick, clickFold: in the bucket, from its first
// handling, and in the replica's memory, from the first such click the
// replica saw), which was decided or was itself folded into one that was.
// The folded click's own attempt was never made: it published the other
// one's again.
func (r *run) foldedInto(a *attempt, rb *readBack) *attempt {
	return r.foldRoot(a, rb, map[*attempt]bool{})
}

func (r *run) foldRoot(a *attempt, rb *readBack, seen map[*attempt]bool) *attempt {
	c := a.click
	if c == nil || !a.acked || seen[a] {
		return nil
	}
	seen[a] = true
	if _, stored := rb.stored[a.id]; stored {
		return nil
	}
	for _, b := range r.attempts {
		bc := b.click
		if b == a || bc == nil || !b.acked || b.q != a.q || bc.value != c.value {
			continue
		}
		// b's claim was made between its first request and its answer,
		// and holds clickFold from then; a was handled between its last
		// request and its answer. Requests in flight together are handled
		// in either order: a sent first can still come second.
		if a.ackedAt.Before(b.sentAt) || c.lastReqAt.Sub(bc.lastReqAt) > clickFold+foldSlack {
			continue
		}
		if len(rb.byAttempt[b.id]) > 0 {
			return b
		}
		if root := r.foldRoot(b, rb, seen); root != nil {
			return root
		}
	}
	return nil
}

// clickFold is how long the Slack adapter folds a person's click into
// the same click made before (bots/slack clickFold); foldSlack allows for
// the time between a request's start and its handling, and for a claim's
// key outliving its TTL a little (the server expires keys on a timer).
const (
	clickFold = 10 * time.Second
	foldSlack = 2 * time.Second
)

// classifyCut counts where the kill that cut a click came: before the
// replica claimed it, between the claim and the attempt's publication, or
// after the publication (the attempt was stored before the retry went).
func classifyCut(rep *Report, a *attempt, stored map[string]time.Time) {
	c := a.click
	at, ok := stored[a.id]
	switch {
	case c.retryAt.IsZero() || !ok:
		// Never retried, or never stored: nothing to tell.
	case at.Before(c.retryAt):
		rep.CutAfterPublish++
	case c.claimed:
		rep.CutBetween++
	default:
		rep.CutBeforeClaim++
	}
}

// checkOrder checks that the first acknowledged answer wins: a question is
// not settled by an answer sent after another valid answer to it was
// acknowledged (docs/contract.md).
func (r *run) checkOrder(rep *Report, rb *readBack) {
	byQ := map[*question][]*attempt{}
	for _, a := range r.attempts {
		if a.sent && a.acked && a.answer != "green" && len(rb.byAttempt[a.id]) > 0 {
			byQ[a.q] = append(byQ[a.q], a)
		}
	}
	for q, as := range byQ {
		var won *attempt
		for _, a := range as {
			if ds := rb.byAttempt[a.id]; len(ds) > 0 && ds[0].ev.Type != bridge.EventRefused {
				won = a
			}
		}
		if won == nil {
			continue
		}
		for _, a := range as {
			if a != won && a.ackedAt.Before(won.sentAt) {
				rep.OutOfOrder++
				rep.violate("question %s was settled by %s, sent at %s, though %s was acknowledged before, at %s",
					q.key(), won.desc(), clock(won.sentAt), a.desc(), clock(a.ackedAt))
				break
			}
		}
	}
}

// otherClicks describes the other clicks on a click's question, for a
// sentence.
func (r *run) otherClicks(a *attempt) string {
	var out []string
	for _, b := range r.attempts {
		if b == a || b.q != a.q || b.click == nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s sent %s acked %t at %s", b.desc(), clock(b.sentAt), b.acked, clock(b.ackedAt)))
	}
	if len(out) == 0 {
		return ""
	}
	return "; other clicks on it: " + strings.Join(out, "; ")
}

// storedDesc says whether and when an attempt reached the answers stream.
func storedDesc(stored map[string]time.Time, id string) string {
	if at, ok := stored[id]; ok {
		return "stored in " + bridge.StreamAnswers + " at " + clock(at)
	}
	return "not in " + bridge.StreamAnswers
}

// trail is a click's requests, for a sentence; "" for a NATS attempt.
func (a *attempt) trail() string {
	if a.click == nil {
		return ""
	}
	return "; its requests: " + strings.Join(a.click.trail, "; ")
}

// desc names an answer in a sentence.
func (a *attempt) desc() string {
	if c := a.click; c != nil {
		s := "click " + c.trigger + " (" + a.answer + ", attempt " + a.id
		if c.cut {
			s += ", cut by a kill"
		}
		return s + ")"
	}
	return "attempt " + a.id
}

// clock is a time of day to the millisecond, for violation sentences.
func clock(t time.Time) string { return t.Format("15:04:05.000") }
