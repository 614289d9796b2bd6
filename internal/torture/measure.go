package torture

import (
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// measure fills in the report's figures of how long a person waits
// besides for a card: each acknowledged answer that settled its question,
// from its first request (a click) or publish (a NATS attempt) to its
// question's resume on ASK_RESUMES; and each ladder step (a reminder, an
// escalation, the timeout), from its due instant to its event on
// ASK_EVENTS, a step taken along early counting as on time. Neither
// counts the windows when no replica was ready, as for cards. They are
// figures for docs/deploy.md, not checks.
func (r *run) measure(rep *Report, rb *readBack) {
	var resumes, lates []time.Duration
	for _, a := range r.attempts {
		if d, ok := resumeDelay(rb, a); ok {
			resumes = append(resumes, d)
		}
	}
	for _, q := range r.questions {
		lates = append(lates, ladderLateness(rb, q)...)
	}
	rep.ResumesMeasured, rep.StepsMeasured = len(resumes), len(lates)
	rep.ResumeDelayP50, rep.ResumeDelayP99, rep.ResumeDelayMax = spread(resumes)
	rep.LadderLateP50, rep.LadderLateP99, rep.LadderLateMax = spread(lates)
}

// resumeDelay is how long after a was first sent its question resumed,
// when a was acknowledged and settled the question.
func resumeDelay(rb *readBack, a *attempt) (time.Duration, bool) {
	if !a.sent || !a.acked {
		return 0, false
	}
	ds := rb.byAttempt[a.id]
	if len(ds) == 0 || ds[0].ev.Type != bridge.EventAnswered && ds[0].ev.Type != bridge.EventDeclined {
		return 0, false
	}
	rs := rb.resumes[a.q.key()]
	if len(rs) == 0 || rs[0].res.By != a.by {
		return 0, false
	}
	return waited(rb.down, a.sentAt, rs[0].at), true
}

// ladderLateness is how late each ladder step of q reached the events
// stream: a reminder or escalation past its instant (its fraction of the
// timeout after the question was asked), the timeout past the deadline.
func ladderLateness(rb *readBack, q *question) []time.Duration {
	v, ok := rb.views[q.key()]
	timeout := v.Deadline.Sub(v.AskedAt)
	if !ok || timeout <= 0 {
		return nil
	}
	ladder := bridge.DefaultLadder // as the run asks them
	if v.Question != nil {
		ladder = v.Question.Ladder()
	} else if !q.ladder {
		ladder = nil
	}
	at := map[string]float64{}
	for _, s := range ladder {
		at[s.To] = s.At
	}
	var out []time.Duration
	for _, m := range rb.events[q.key()] {
		var due time.Time
		switch m.ev.Type {
		case bridge.EventReminded, bridge.EventEscalated:
			f, ok := at[m.ev.Step]
			if !ok {
				continue
			}
			due = v.AskedAt.Add(time.Duration(float64(timeout) * f))
		case bridge.EventTimedOut:
			due = v.Deadline
		default:
			continue
		}
		out = append(out, waited(rb.down, due, m.at))
	}
	return out
}

// waited is the time from from to to, less the windows in down; never
// below zero: a step its job's round took along before its instant
// (docs/contract.md, "The queue and nudges") counts as on time.
func waited(down []window, from, to time.Time) time.Duration {
	return max(0, to.Sub(from)-overlap(down, from, to))
}
