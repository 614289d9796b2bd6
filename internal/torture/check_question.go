package torture

import (
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// checkQuestion checks one question: stored if its publish was
// acknowledged, asked once, resumed at most once and as it ended, each
// ladder step at most once and every step before a timeout. It says
// whether the question ended (its audit trail may be sampled).
func (r *run) checkQuestion(rep *Report, rb *readBack, q *question) bool {
	k := q.key()
	v, stored := rb.views[k]
	evs, rs := rb.events[k], rb.resumes[k]
	if !stored {
		if q.acked {
			rep.Lost++
			rep.violate("question %s: its publish was acknowledged but the service does not know it", k)
		}
		if len(rs) > 0 {
			rep.violate("question %s: not stored, yet resumed: %s", k, seqs(rs, resDesc))
		}
		return false
	}
	switch v.State {
	case bridge.StateAnswered:
		rep.Answered++
	case bridge.StateDeclined:
		rep.Declined++
	case bridge.StateTimedOut:
		rep.TimedOut++
	case bridge.StateFailed:
		rep.Failed++
	case bridge.StatePending:
		rep.Pending++
	}
	var asked, terminal []streamMsg
	steps := map[string][]streamMsg{}
	stepIDs := map[string]int{}
	for _, m := range evs {
		switch {
		case m.ev.Type == bridge.EventAsked:
			asked = append(asked, m)
		case m.ev.Type == bridge.EventReminded || m.ev.Type == bridge.EventEscalated:
			steps[m.ev.Step] = append(steps[m.ev.Step], m)
			stepIDs[m.ev.EventID]++
			rep.LadderSteps++
		case isTerminal(&m.ev):
			terminal = append(terminal, m)
		}
	}
	if len(asked) != 1 {
		rep.violate("question %s: %d asked events (%s)", k, len(asked), seqs(asked, evDesc))
	}
	if len(rs) > 1 {
		rep.Duplicates += len(rs) - 1
		rep.violate("question %s (%s): resumed %d times: %s; events: %s", k, v.State, len(rs), seqs(rs, resDesc), seqs(evs, evDesc))
	}
	ended := v.State != bridge.StatePending
	if ended {
		checkEnded(rep, k, v.State, evs, terminal, rs)
	} else {
		if len(terminal) > 0 || len(rs) > 0 {
			rep.violate("question %s is pending, yet ended on the streams: %s; resumes: %s", k, seqs(terminal, evDesc), seqs(rs, resDesc))
		}
		if q.short {
			rep.violate("question %s is still pending %v after its %v deadline", k, time.Since(v.Deadline).Round(time.Second), q.timeout)
		}
	}
	checkLadder(rep, q, v.State, evs, terminal, steps, stepIDs)
	return ended
}

// checkEnded checks an ended question: one terminal event, one resume
// whose outcome is its state's.
func checkEnded(rep *Report, k, state string, evs, terminal, rs []streamMsg) {
	if len(terminal) != 1 {
		rep.violate("question %s (%s): %d terminal events: %s", k, state, len(terminal), seqs(evs, evDesc))
	}
	if len(rs) == 0 {
		rep.Lost++
		rep.violate("question %s ended %s but no resume reached the stream; events: %s", k, state, seqs(evs, evDesc))
	}
	for _, m := range rs {
		if m.res.Outcome != outcomeOf(state) {
			rep.violate("question %s ended %s but resumed %s (seq %d)", k, state, m.res.Outcome, m.seq)
		}
	}
}

// checkLadder checks a question's ladder: each step (and event) at most
// once, none with the ladder off, every step before a timeout.
func checkLadder(rep *Report, q *question, state string, evs, terminal []streamMsg, steps map[string][]streamMsg, stepIDs map[string]int) {
	k := q.key()
	for id, n := range stepIDs {
		if n > 1 {
			rep.violate("question %s: ladder event %s published %d times", k, id, n)
		}
	}
	for step, ms := range steps {
		if len(ms) > 1 {
			rep.violate("question %s: ladder step %s fired %d times: %s", k, step, len(ms), seqs(ms, evDesc))
		}
	}
	if !q.ladder && len(steps) > 0 {
		rep.violate("question %s has its ladder off, yet: %s", k, seqs(evs, evDesc))
	}
	timedOut := state == bridge.StateTimedOut || (state == bridge.StateFailed && q.fail && len(terminal) == 1 && terminal[0].ev.Type == bridge.EventTimedOut)
	if q.ladder && timedOut {
		for _, step := range []string{bridge.TargetAnswerers, bridge.TargetOwner, bridge.TargetAdmins} {
			if len(steps[step]) == 0 {
				rep.violate("question %s timed out without its %s step: %s", k, step, seqs(evs, evDesc))
			}
		}
	}
}
