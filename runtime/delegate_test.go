package runtime_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones of the tests below, on any machine

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// eventsOf waits for n events of typ and returns them.
func eventsOf(t *testing.T, events *testenv.Recorder, typ string, n int) []bridge.Event {
	t.Helper()
	var out []bridge.Event
	testenv.CheckFor(t, testenv.Patience, 5*time.Millisecond, func() error {
		out = out[:0]
		for _, ev := range events.Events() {
			if ev.Type == typ {
				out = append(out, ev)
			}
		}
		if len(out) < n {
			return fmt.Errorf("%d %s events of %d; all: %s", len(out), typ, n, events.EventTypes())
		}
		return nil
	})
	return out
}

func TestDelegateMakesAnAnswerer(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-dg")
	q := choiceQuestion("job-dg")
	q.Answerers = []string{"slack:UANA"}
	ch := ask(t, env, q)
	const dana = "slack:UDANA"

	// Before: dana has no role and is no answerer.
	attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: "q-1", AttemptID: "dn1", Answer: json.RawMessage(`"red"`), By: dana})
	if ev := refusalFor(t, events, "dn1"); ev.Reason != bridge.RefusedForbidden {
		t.Fatalf("dana before: %s %q", ev.Reason, ev.Text)
	}
	// Only people who may answer may ask someone else.
	attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: "q-1", AttemptID: "rd1", Action: bridge.ActionDelegate, Delegate: dana, By: "slack:UREADER"})
	if ev := refusalFor(t, events, "rd1"); ev.Reason != bridge.RefusedForbidden {
		t.Fatalf("a reader delegating: %s %q", ev.Reason, ev.Text)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: "q-1", AttemptID: "dg1", Action: bridge.ActionDelegate, Delegate: dana,
		By: "slack:UANA", ByName: "ana", Via: "slack"})
	ev := eventsOf(t, events, bridge.EventDelegated, 1)[0]
	if ev.Text != "slack:UANA (ana) asked slack:UDANA to answer." || ev.Delegate != dana || !slices.Equal(ev.Targets, []string{dana}) ||
		ev.By != "slack:UANA" || ev.State != bridge.StatePending {
		t.Fatalf("delegated event = %+v", ev)
	}
	if ev.Question == nil || !slices.Equal(ev.Question.Answerers, []string{"slack:UANA", dana}) ||
		len(ev.Question.Delegations) != 1 || ev.Question.Delegations[0].By != "slack:UANA" || ev.Question.Delegations[0].To != dana {
		t.Fatalf("delegated question = %+v", ev.Question)
	}
	// Asking the same person twice says so.
	attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: "q-1", AttemptID: "dg2", Action: bridge.ActionDelegate, Delegate: dana, By: "slack:UOP"})
	if ev := refusalFor(t, events, "dg2"); ev.Reason != bridge.RefusedInvalid || ev.Text != "slack:UDANA is already asked to answer this question." {
		t.Fatalf("second delegation: %s %q", ev.Reason, ev.Text)
	}
	// The runtime's view names dana among those who may answer.
	if got := show(t, env, dana, q.JobID, "q-1"); got.Question == nil || got.Question.Question == nil ||
		!slices.Contains(got.Question.Question.Answerers, dana) {
		t.Fatalf("dana's view: %+v", got)
	}

	// The question's audit keeps it.
	audited := false
	for _, a := range show(t, env, "slack:UADMIN", q.JobID, "q-1").Audit {
		audited = audited || (a.By == "slack:UANA" && a.Via == "slack" && a.Reason == "slack:UANA (ana) asked slack:UDANA to answer.")
	}
	if !audited {
		t.Errorf("no audit entry of the delegation: %+v", show(t, env, "slack:UADMIN", q.JobID, "q-1").Audit)
	}

	// After: dana answers.
	attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: "q-1", AttemptID: "dn2", Answer: json.RawMessage(`"blue"`), By: dana})
	if out := outcome(t, ch); out.Outcome != bridge.OutcomeAnswered || out.By != dana || out.Text != "The answer: blue" {
		t.Fatalf("outcome = %+v", out)
	}
	tr := trace(t, env, bridge.TraceRequest{As: "slack:UADMIN", Tenant: "acme", JobID: q.JobID})
	if e := entryOf(t, tr.Entries, bridge.TraceDelegated, "q-1"); e.By != "slack:UANA" || e.Text != "slack:UANA (ana) asked slack:UDANA to answer." {
		t.Errorf("trace entry = %+v", e)
	}
}

func TestSnoozeMovesOnlyThatPersonsNextReminder(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-sz")
	q := choiceQuestion("job-sz")
	q.Timeout = "8h"
	q.Answerers = []string{"slack:UANA", "slack:UBEN"}
	// Reminders at 2h and 6h; the timeout at 8h.
	q.Escalation = &bridge.Escalation{Steps: []bridge.LadderStep{{At: 0.25, To: bridge.TargetAnswerers}, {At: 0.75, To: bridge.TargetAnswerers}}}
	ch := ask(t, env, q)
	asked := eventsOf(t, events, bridge.EventAsked, 1)[0]

	attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: "q-1", AttemptID: "sz1", Action: bridge.ActionSnooze, Snooze: bridge.SnoozeHours4, By: "slack:UANA"})
	snoozed := eventsOf(t, events, bridge.EventSnoozed, 1)[0]
	if snoozed.To != "slack:UANA" || snoozed.Until.Sub(snoozed.At) != 4*time.Hour || !strings.HasPrefix(snoozed.Text, "I'll remind you of this question at ") {
		t.Fatalf("snoozed event = %+v", snoozed)
	}
	// A reader may not snooze (nor learn anything of the question).
	attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: "q-1", AttemptID: "sz2", Action: bridge.ActionSnooze, Snooze: bridge.SnoozeHour, By: "slack:UREADER"})
	if ev := refusalFor(t, events, "sz2"); ev.Reason != bridge.RefusedForbidden {
		t.Fatalf("a reader snoozing: %s %q", ev.Reason, ev.Text)
	}

	// An operator who is not reminded (the question names its answerers)
	// has no reminder to move.
	attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: "q-1", AttemptID: "sz3", Action: bridge.ActionSnooze, Snooze: bridge.SnoozeHour, By: "slack:UOP"})
	if ev := refusalFor(t, events, "sz3"); ev.Reason != bridge.RefusedInvalid || !strings.HasPrefix(ev.Text, "You are not reminded of this question") {
		t.Fatalf("an operator snoozing: %s %q", ev.Reason, ev.Text)
	}

	clock.Advance(2*time.Hour + time.Minute) // the 2h reminder: ben only
	r := eventsOf(t, events, bridge.EventReminded, 1)
	if !slices.Equal(r[0].Targets, []string{"slack:UBEN"}) {
		t.Fatalf("2h reminder reminds %v, want ben only", r[0].Targets)
	}
	clock.Advance(2 * time.Hour) // ana's snooze ended: ana once
	r = eventsOf(t, events, bridge.EventReminded, 2)
	if !slices.Equal(r[1].Targets, []string{"slack:UANA"}) || r[1].Step != bridge.TargetAnswerers || r[1].At.Before(snoozed.Until) {
		t.Fatalf("at the snooze's end: %v (step %s) at %v, snoozed until %v", r[1].Targets, r[1].Step, r[1].At, snoozed.Until)
	}
	clock.Advance(2 * time.Hour) // the 6h reminder: both, as before
	r = eventsOf(t, events, bridge.EventReminded, 3)
	if !slices.Equal(r[2].Targets, []string{"slack:UANA", "slack:UBEN"}) {
		t.Fatalf("6h reminder reminds %v", r[2].Targets)
	}
	if len(r) != 3 {
		t.Fatalf("%d reminders", len(r))
	}
	// The timeout did not move.
	clock.Advance(2*time.Hour - 2*time.Minute)
	out := outcomeAdvancing(t, clock, ch)
	if out.Outcome != bridge.OutcomeTimedOut || out.At.Before(asked.Deadline) || out.At.Sub(asked.Deadline) > time.Hour {
		t.Fatalf("outcome %s at %v, deadline %v", out.Outcome, out.At, asked.Deadline)
	}
	for _, ev := range events.Events() {
		if !ev.Deadline.IsZero() && !ev.Deadline.Equal(asked.Deadline) {
			t.Errorf("%s: deadline %v, asked with %v", ev.Type, ev.Deadline, asked.Deadline)
		}
	}
	tr := trace(t, env, bridge.TraceRequest{As: "slack:UADMIN", Tenant: "acme", JobID: q.JobID})
	if e := entryOf(t, tr.Entries, bridge.TraceSnoozed, "q-1"); e.By != "slack:UANA" || !strings.Contains(e.Text, "(4h)") {
		t.Errorf("trace entry = %+v", e)
	}
}

func TestSnoozeUntil(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 2, 23, 30, 0, 0, time.UTC) // 18:30 in New York
	for _, c := range []struct {
		kind string
		loc  *time.Location
		want time.Time
	}{
		{bridge.SnoozeHour, nil, now.Add(time.Hour)},
		{bridge.SnoozeHours4, ny, now.Add(4 * time.Hour)},
		{bridge.SnoozeTomorrow, nil, time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)},
		{bridge.SnoozeTomorrow, ny, time.Date(2026, 12, 3, 9, 0, 0, 0, ny)},
	} {
		if got, ok := runtime.SnoozeUntil(c.kind, now, c.loc); !ok || !got.Equal(c.want) {
			t.Errorf("%s in %v: %v, want %v", c.kind, c.loc, got, c.want)
		}
	}
	if _, ok := runtime.SnoozeUntil("forever", now, nil); ok {
		t.Error("forever is no snooze")
	}
}

// TestDelegateCountsPeople: with ASK_PEOPLE, asking dana's other account,
// or one's own, is refused as asking the same person.
func TestDelegateCountsPeople(t *testing.T) {
	t.Parallel()
	const danaDiscord = "discord:444444444444444444"
	env := testenv.Start(t, testenv.Options{Roles: roles, People: bridge.People{
		"dana": {"slack:UDANA", danaDiscord}, "ana": {"slack:UANA", "discord:555555555555555555"}}})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-dp")
	q := choiceQuestion("job-dp")
	q.Answerers = []string{"slack:UANA", "slack:UDANA"}
	ask(t, env, q)
	attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: "q-1", AttemptID: "dp1", Action: bridge.ActionDelegate, Delegate: danaDiscord, By: "slack:UANA"})
	if ev := refusalFor(t, events, "dp1"); ev.Reason != bridge.RefusedInvalid || ev.Text != danaDiscord+" is already asked to answer this question." {
		t.Fatalf("dana's other account: %s %q", ev.Reason, ev.Text)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: "q-1", AttemptID: "dp2", Action: bridge.ActionDelegate,
		Delegate: "discord:555555555555555555", By: "slack:UANA"})
	if ev := refusalFor(t, events, "dp2"); ev.Reason != bridge.RefusedInvalid || ev.Text != "You may answer this question yourself: ask someone else." {
		t.Fatalf("ana's own other account: %s %q", ev.Reason, ev.Text)
	}
}
