package torture

import (
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// TestCheckMeasuresResumesAndLadderSteps: an answer's delay runs from its
// first request to its question's resume, a ladder step's lateness from
// its instant (its fraction of the timeout; the deadline for the timeout)
// to its event, each less the time when no replica was ready.
func TestCheckMeasuresResumesAndLadderSteps(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 6, 20, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	answered := &question{tenant: "acme", job: "job-1", id: "q-1", ladder: true, acked: true}
	timedOut := &question{tenant: "acme", job: "job-1", id: "q-2", ladder: true, short: true, acked: true}
	click := &attempt{id: "a-1", q: answered, by: "slack:U1", sent: true, acked: true, sentAt: at(1000), ackedAt: at(1100)}
	refused := &attempt{id: "a-2", q: answered, by: "slack:U2", sent: true, acked: true, sentAt: at(1050), ackedAt: at(1150)}
	ev := func(typ, step string, ms int) streamMsg {
		return streamMsg{at: at(ms), ev: bridge.Event{Type: typ, Step: step}}
	}
	r := &run{questions: []*question{answered, timedOut}, attempts: []*attempt{click, refused}}
	rb := &readBack{
		views: map[string]bridge.QuestionView{
			answered.key(): {AskedAt: t0, Deadline: at(3_600_000)},
			timedOut.key(): {AskedAt: t0, Deadline: at(4000), Question: &bridge.Question{}},
		},
		byAttempt: map[string][]streamMsg{
			"a-1": {ev(bridge.EventAnswered, "", 1300)},
			"a-2": {ev(bridge.EventRefused, "", 1400)},
		},
		resumes: map[string][]streamMsg{answered.key(): {{at: at(1500), res: bridge.Resume{By: "slack:U1"}}}},
		events: map[string][]streamMsg{timedOut.key(): {
			ev(bridge.EventAsked, "", 5),
			ev(bridge.EventReminded, bridge.TargetAnswerers, 1030), // due at 1000
			ev(bridge.EventEscalated, bridge.TargetOwner, 2400),    // due at 2000, 300 ms of it down
			ev(bridge.EventEscalated, bridge.TargetAdmins, 2990),   // due at 3000: taken along early
			ev(bridge.EventTimedOut, "", 4700),                     // due at 4000
		}},
		down: []window{{from: at(1200), to: at(1300)}, {from: at(2050), to: at(2350)}},
	}
	rep := &Report{}
	r.measure(rep, rb)
	// The click: 500 ms to its resume, 100 of them down.
	if rep.ResumesMeasured != 1 || rep.ResumeDelayMax != 400*time.Millisecond {
		t.Errorf("resumes: %d measured, max %v; want 1 of 400ms", rep.ResumesMeasured, rep.ResumeDelayMax)
	}
	// Steps late by 30, 100, 0 and 700 ms.
	if rep.StepsMeasured != 4 || rep.LadderLateP50 != 30*time.Millisecond || rep.LadderLateMax != 700*time.Millisecond {
		t.Errorf("ladder: %d measured, p50 %v, max %v; want 4, 30ms, 700ms", rep.StepsMeasured, rep.LadderLateP50, rep.LadderLateMax)
	}
}
