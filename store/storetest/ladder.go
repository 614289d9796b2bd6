package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// RunLadder runs the ladder tests: NextDue, DueSteps and firing steps
// (FireRound), once each.
func RunLadder(t *testing.T, open Open) {
	run(t, open, map[string]func(t *testing.T, s Store){
		"NextDue":                    testNextDue,
		"DueStepsInOrder":            testDueStepsInOrder,
		"DueStepsLimitAcrossMany":    testDueStepsLimitAcrossMany,
		"EndedQuestionsLeave":        testEndedQuestionsLeaveTheLadder,
		"FireRoundOnce":              testFireRoundOnce,
		"FireRoundAllOrNothing":      testFireRoundAllOrNothing,
		"FiringASnoozeEndsIt":        testFiringASnooze,
		"FireRoundOfAnEndedQuestion": testFireRoundOfEnded,
		"RaceFireRound":              testRaceFireRound,
	})
}

// stepsOf shows due steps as "question-index target +due" lines, the
// question by its position in qs.
func stepsOf(due []record.DueStep, qs ...*record.Record) []string {
	out := []string{}
	for _, d := range due {
		name := fmt.Sprint(d.Question)
		for i, q := range qs {
			if q.ID == d.Question {
				name = fmt.Sprint("q", i)
			}
		}
		out = append(out, fmt.Sprintf("%s-%d %s +%v", name, d.Index, d.Target, d.Due.Sub(T0)))
	}
	return out
}

// dueSteps reads the steps due by at (at most limit).
func dueSteps(t *testing.T, s Store, at time.Time, limit int) []record.DueStep {
	t.Helper()
	due, err := s.DueSteps(ctx, at, limit)
	if err != nil {
		t.Fatalf("due steps by %v: %v", at, err)
	}
	return due
}

// testNextDue: the earliest due time of any step, none on an empty
// ladder.
func testNextDue(t *testing.T, s Store) {
	if next, ok, err := s.NextDue(ctx); err != nil || ok {
		t.Fatalf("next due of an empty ladder = %v %v, %v", next, ok, err)
	}
	late := NewQuestion("job-1", "q-1", 1)
	late.Steps[0].Due = T0.Add(2 * time.Hour)
	q1 := Ask(t, s, late)
	early := NewQuestion("job-2", "q-1", 1)
	early.Steps[0].Due = T0.Add(30 * time.Minute)
	q2 := Ask(t, s, early)
	if next, ok, err := s.NextDue(ctx); err != nil || !ok || !next.Equal(T0.Add(30*time.Minute)) {
		t.Fatalf("next due = %v %v, %v; want T0+30m", next, ok, err)
	}
	Settle(t, s, q2, T0)
	if next, ok, err := s.NextDue(ctx); err != nil || !ok || !next.Equal(T0.Add(2*time.Hour)) {
		t.Fatalf("next due after the early one's answer = %v %v, %v; want T0+2h", next, ok, err)
	}
	Settle(t, s, q1, T0)
	if next, ok, err := s.NextDue(ctx); err != nil || ok {
		t.Fatalf("next due with every question answered = %v %v, %v", next, ok, err)
	}
}

// testDueStepsInOrder: the steps due at or before a time, by due time,
// then question, then index, at most limit.
func testDueStepsInOrder(t *testing.T, s Store) {
	a := NewQuestion("job-1", "q-1", 1)
	a.Steps = []record.Step{
		{Index: 0, Target: bridge.TargetAnswerers, Due: T0.Add(time.Hour)},
		{Index: 1, Target: bridge.TargetAdmins, Due: T0.Add(time.Hour)},
		{Index: 2, Target: record.StepTimeout, Due: T0.Add(3 * time.Hour)},
	}
	b := NewQuestion("job-2", "q-1", 1)
	b.Steps = []record.Step{
		{Index: 0, Target: bridge.TargetAnswerers, Due: T0.Add(30 * time.Minute)},
		{Index: 1, Target: record.StepTimeout, Due: T0.Add(time.Hour)},
	}
	res := AskAll(t, s, a, b)
	qa, qb := res[0].Record, res[1].Record
	for _, c := range []struct {
		at    time.Duration
		limit int
		want  []string
	}{
		{29 * time.Minute, 10, []string{}},
		{30 * time.Minute, 10, []string{"q1-0 answerers +30m0s"}},
		{time.Hour, 10, []string{"q1-0 answerers +30m0s", "q0-0 answerers +1h0m0s", "q0-1 admins +1h0m0s", "q1-1 timeout +1h0m0s"}},
		{time.Hour, 2, []string{"q1-0 answerers +30m0s", "q0-0 answerers +1h0m0s"}},
		{24 * time.Hour, 10, []string{"q1-0 answerers +30m0s", "q0-0 answerers +1h0m0s", "q0-1 admins +1h0m0s", "q1-1 timeout +1h0m0s",
			"q0-2 timeout +3h0m0s"}},
	} {
		got := stepsOf(dueSteps(t, s, T0.Add(c.at), c.limit), qa, qb)
		if !slices.Equal(got, c.want) {
			t.Errorf("due by T0+%v (limit %d) = %q, want %q", c.at, c.limit, got, c.want)
		}
	}
}

// testDueStepsLimitAcrossMany: with more questions due than a limit, and
// their steps due at the same times, DueSteps returns the first by due
// time, question and step, the limit cutting among ties of every step.
func testDueStepsLimitAcrossMany(t *testing.T, s Store) {
	const n = 50
	var nqs []record.NewQuestion
	for i := range n {
		nqs = append(nqs, NewQuestion(fmt.Sprint("job-", i), "q-1", 1))
	}
	var ids []int64
	for _, r := range AskAll(t, s, nqs...) {
		ids = append(ids, r.Record.ID)
	}
	slices.Sort(ids)
	for _, limit := range []int{10, 60, 200} {
		due := dueSteps(t, s, T0.Add(5*time.Hour), limit)
		if len(due) != min(limit, 2*n) {
			t.Fatalf("DueSteps(limit %d) = %d steps, want %d", limit, len(due), min(limit, 2*n))
		}
		for i, d := range due {
			want := record.DueStep{Question: ids[i%n], Index: i / n, Target: bridge.TargetAnswerers, Due: T0.Add(time.Hour)}
			if i >= n {
				want.Target, want.Due = record.StepTimeout, T0.Add(4*time.Hour)
			}
			if d != want {
				t.Fatalf("DueSteps(limit %d)[%d] = %+v, want %+v", limit, i, d, want)
			}
		}
	}
}

// testEndedQuestionsLeaveTheLadder: answered, superseded and cancelled
// questions have no steps left.
func testEndedQuestionsLeaveTheLadder(t *testing.T, s Store) {
	res := AskAll(t, s, NewQuestion("job-1", "q-1", 1), NewQuestion("job-2", "q-1", 1), NewQuestion("job-3", "q-1", 1),
		NewQuestion("job-4", "q-1", 1))
	Settle(t, s, res[0].Record, T0)
	next := Ask(t, s, NewQuestion("job-2", "q-2", 2)) // supersedes job-2's q-1
	if _, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-3", At: T0}); err != nil {
		t.Fatal(err)
	}
	got := stepsOf(dueSteps(t, s, T0.Add(24*time.Hour), 100), res[3].Record, next)
	want := []string{"q0-0 answerers +1h0m0s", "q1-0 answerers +1h0m0s", "q0-1 timeout +4h0m0s", "q1-1 timeout +4h0m0s"}
	if !slices.Equal(got, want) {
		t.Fatalf("steps left = %q, want %q", got, want)
	}
}

// round is due steps fired with one reason.
func round(reason string, due ...record.DueStep) []record.RoundStep {
	var out []record.RoundStep
	for _, d := range due {
		out = append(out, record.RoundStep{DueStep: d, Reason: reason})
	}
	return out
}

// testFireRoundOnce: a round removes its steps, audits each question and
// writes its messages; fired again it is ErrStepGone and writes nothing.
func testFireRoundOnce(t *testing.T, s Store) {
	res := AskAll(t, s, NewQuestion("job-1", "q-1", 1), NewQuestion("job-1", "q-2", 1), NewQuestion("job-2", "q-1", 1))
	due := dueSteps(t, s, T0.Add(time.Hour), 10)
	if len(due) != 3 {
		t.Fatalf("due = %+v", due)
	}
	r := round("reminded answerers", due[0], due[1])
	at := T0.Add(90 * time.Minute)
	nudge := []record.Message{{Subject: "ask.v1.event.acme.job-1", Data: []byte("nudge")}, {Subject: "x", Data: []byte("second")}}
	if err := s.FireRound(ctx, r, at, nudge); err != nil {
		t.Fatal(err)
	}
	if err := s.FireRound(ctx, r, at, nudge); !errors.Is(err, record.ErrStepGone) {
		t.Fatalf("the round again: %v, want ErrStepGone", err)
	}
	if err := s.FireRound(ctx, r[1:], at, nudge); !errors.Is(err, record.ErrStepGone) {
		t.Fatalf("a step of the round again: %v, want ErrStepGone", err)
	}
	want := []string{"ask.v1.event.acme.job-1 nudge", "x second"}
	if got := Unsent(t, s)[3:]; !slices.Equal(got, want) {
		t.Fatalf("outbox = %q, want %q once", got, want)
	}
	left := stepsOf(dueSteps(t, s, T0.Add(24*time.Hour), 10), res[0].Record, res[1].Record, res[2].Record)
	if want := []string{"q2-0 answerers +1h0m0s", "q0-1 timeout +4h0m0s", "q1-1 timeout +4h0m0s", "q2-1 timeout +4h0m0s"}; !slices.Equal(left, want) {
		t.Fatalf("steps left = %q, want %q", left, want)
	}
	for _, q := range []*record.Record{res[0].Record, res[1].Record} {
		audit, err := s.Audit(ctx, q.ID)
		if err != nil || len(audit) != 2 {
			t.Fatalf("audit of %s = %+v, %v", q.QuestionID, audit, err)
		}
		if a := audit[1]; a.From != bridge.StatePending || a.To != bridge.StatePending || a.Reason != "reminded answerers" || !a.At.Equal(at) {
			t.Fatalf("the round's audit entry of %s = %+v", q.QuestionID, a)
		}
	}
	// A round with no messages fires its steps all the same.
	if err := s.FireRound(ctx, round("reminded answerers", due[2]), at, nil); err != nil {
		t.Fatal(err)
	}
	if got := Unsent(t, s); len(got) != 5 {
		t.Fatalf("outbox = %q", got)
	}
}

// testFireRoundAllOrNothing: a round one of whose steps is gone does
// nothing at all: the ladder reads what is due again.
func testFireRoundAllOrNothing(t *testing.T, s Store) {
	res := AskAll(t, s, NewQuestion("job-1", "q-1", 1), NewQuestion("job-1", "q-2", 1))
	due := dueSteps(t, s, T0.Add(time.Hour), 10)
	Settle(t, s, res[1].Record, T0) // its step is gone
	err := s.FireRound(ctx, round("reminded answerers", due...), T0.Add(time.Hour), []record.Message{{Subject: "x", Data: []byte("nudge")}})
	if !errors.Is(err, record.ErrStepGone) {
		t.Fatalf("a round with a step gone: %v, want ErrStepGone", err)
	}
	if got := stepsOf(dueSteps(t, s, T0.Add(time.Hour), 10), res[0].Record); !slices.Equal(got, []string{"q0-0 answerers +1h0m0s"}) {
		t.Fatalf("steps due after a failed round = %q, want q-1's still", got)
	}
	if audit, _ := s.Audit(ctx, res[0].Record.ID); len(audit) != 1 {
		t.Fatalf("a failed round audited: %+v", audit)
	}
	if got := Unsent(t, s); len(got) != 2 {
		t.Fatalf("a failed round wrote messages: %q", got)
	}
	if q, _ := s.JobQueue(ctx, Tenant, "job-1"); len(q) != 1 || q[0].Staleness != 0 {
		t.Fatalf("a failed round made q-1 stale: %+v", q)
	}
}

// testFiringASnooze: firing a snooze's step ends the snooze and is no
// ladder round: staleness stays.
func testFiringASnooze(t *testing.T, s Store) {
	rec := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	wantOutcomes(t, decideAll(t, s, record.Decision{Snooze: &record.Snooze{Question: rec.ID, Identity: "slack:UANA",
		Until: T0.Add(30 * time.Minute), At: T0}}), nil)
	steps := snoozeSteps(t, s, rec.ID, T0.Add(time.Hour))
	if len(steps) != 1 {
		t.Fatalf("snooze steps = %+v", steps)
	}
	if err := s.FireRound(ctx, round("reminded slack:UANA", steps[0]), T0.Add(30*time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SnoozeOf(ctx, rec.ID, steps[0].Index); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("the fired snooze is still on record: %v", err)
	}
	if held, err := s.Snoozes(ctx, rec.ID, T0); err != nil || len(held) != 0 {
		t.Fatalf("snoozes after the snooze's step fired = %v, %v", held, err)
	}
	if q, _ := s.JobQueue(ctx, Tenant, "job-1"); len(q) != 1 || q[0].Staleness != 0 {
		t.Fatalf("queue after a snooze ended = %+v, want staleness 0", q)
	}
	// The person snoozes again: a new step, found by SnoozeOf.
	wantOutcomes(t, decideAll(t, s, record.Decision{Snooze: &record.Snooze{Question: rec.ID, Identity: "slack:UANA",
		Until: T0.Add(2 * time.Hour), At: T0.Add(time.Hour)}}), nil)
	steps = snoozeSteps(t, s, rec.ID, T0.Add(3*time.Hour))
	if len(steps) != 1 {
		t.Fatalf("snooze steps after snoozing again = %+v", steps)
	}
	if who, until, err := s.SnoozeOf(ctx, rec.ID, steps[0].Index); err != nil || who != "slack:UANA" || !until.Equal(T0.Add(2*time.Hour)) {
		t.Fatalf("the new snooze = %s %v, %v", who, until, err)
	}
}

// testFireRoundOfEnded: a step of a question that ended is gone.
func testFireRoundOfEnded(t *testing.T, s Store) {
	rec := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	due := dueSteps(t, s, T0.Add(time.Hour), 10)
	if _, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", At: T0}); err != nil {
		t.Fatal(err)
	}
	if err := s.FireRound(ctx, round("reminded answerers", due...), T0.Add(time.Hour), nil); !errors.Is(err, record.ErrStepGone) {
		t.Fatalf("a step of a cancelled question: %v, want ErrStepGone", err)
	}
	if got := Get(t, s, rec.ID); got.State != bridge.StateCancelled {
		t.Fatalf("question = %s", got.State)
	}
}
