package storetest

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// RunQueue runs the job queue tests: JobQueue and its staleness, and
// JobSteps (docs/design.md, "The queue and nudges").
func RunQueue(t *testing.T, open Open) {
	run(t, open, map[string]func(t *testing.T, s Store){
		"JobQueueOldestFirst":   testJobQueueOrder,
		"RoundsMakeQuestsStale": testRoundsBumpStaleness,
		"JobStepsOfOneKind":     testJobSteps,
	})
}

// queueOf is a job's queue as "question staleness" lines.
func queueOf(t *testing.T, s Store, job string) []string {
	t.Helper()
	q, err := s.JobQueue(ctx, Tenant, job)
	if err != nil {
		t.Fatalf("queue of %s: %v", job, err)
	}
	out := []string{}
	for _, e := range q {
		if e.State != bridge.StatePending || e.JobID != job {
			t.Fatalf("queue of %s holds %+v", job, e.Record)
		}
		out = append(out, e.QuestionID+" "+strconv.Itoa(e.Staleness))
	}
	return out
}

// testJobQueueOrder: a job's pending questions, by the time they were
// asked, then as they were stored.
func testJobQueueOrder(t *testing.T, s Store) {
	late := NewQuestion("job-1", "q-late", 1)
	late.AskedAt = T0.Add(time.Minute)
	res := AskAll(t, s, late, NewQuestion("job-1", "q-a", 1), NewQuestion("job-1", "q-b", 1), NewQuestion("job-1", "q-done", 1),
		NewQuestion("job-2", "q-other", 1))
	Settle(t, s, res[3].Record, T0)
	if got, want := queueOf(t, s, "job-1"), []string{"q-a 0", "q-b 0", "q-late 0"}; !slices.Equal(got, want) {
		t.Fatalf("queue = %q, want %q", got, want)
	}
	if got := queueOf(t, s, "job-none"); len(got) != 0 {
		t.Fatalf("queue of an unknown job = %q", got)
	}
	q, _ := s.JobQueue(ctx, Tenant, "job-1")
	if r := q[0].Record; r.ID != res[1].Record.ID || string(r.Body) != `{"question":"Which?"}` || !r.AskedAt.Equal(T0) {
		t.Fatalf("queued record = %+v", r)
	}
}

// testRoundsBumpStaleness: each ladder round a question's step fires in
// makes it one staler.
func testRoundsBumpStaleness(t *testing.T, s Store) {
	nq := NewQuestion("job-1", "q-a", 1)
	nq.Steps = []record.Step{
		{Index: 0, Target: bridge.TargetAnswerers, Due: T0.Add(time.Hour)},
		{Index: 1, Target: bridge.TargetAnswerers, Due: T0.Add(2 * time.Hour)},
		{Index: 2, Target: record.StepTimeout, Due: T0.Add(4 * time.Hour)},
	}
	res := AskAll(t, s, nq, NewQuestion("job-1", "q-b", 1), NewQuestion("job-2", "q-c", 1))
	due := dueSteps(t, s, T0.Add(time.Hour), 10)
	if len(due) != 3 {
		t.Fatalf("due = %+v", due)
	}
	if err := s.FireRound(ctx, round("reminded answerers", due[0], due[1]), T0.Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	next := dueSteps(t, s, T0.Add(2*time.Hour), 10)
	var second []record.DueStep
	for _, d := range next {
		if d.Question == res[0].Record.ID {
			second = append(second, d)
		}
	}
	if err := s.FireRound(ctx, round("reminded answerers", second...), T0.Add(2*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if got, want := queueOf(t, s, "job-1"), []string{"q-a 2", "q-b 1"}; !slices.Equal(got, want) {
		t.Fatalf("queue = %q, want %q", got, want)
	}
	if got, want := queueOf(t, s, "job-2"), []string{"q-c 0"}; !slices.Equal(got, want) {
		t.Fatalf("queue of job-2 = %q, want %q", got, want)
	}
	Settle(t, s, res[0].Record, T0.Add(3*time.Hour))
	if got, want := queueOf(t, s, "job-1"), []string{"q-b 1"}; !slices.Equal(got, want) {
		t.Fatalf("queue after an answer = %q, want %q", got, want)
	}
}

// testJobSteps: the steps of one target of a job's pending questions, due
// by a time, earliest first.
func testJobSteps(t *testing.T, s Store) {
	a := NewQuestion("job-1", "q-a", 1)
	a.Steps = []record.Step{
		{Index: 0, Target: bridge.TargetAnswerers, Due: T0.Add(2 * time.Hour)},
		{Index: 1, Target: bridge.TargetAdmins, Due: T0.Add(3 * time.Hour)},
		{Index: 2, Target: record.StepTimeout, Due: T0.Add(4 * time.Hour)},
	}
	b := NewQuestion("job-1", "q-b", 1)
	b.Steps[0].Due = T0.Add(90 * time.Minute)
	res := AskAll(t, s, a, b, NewQuestion("job-1", "q-done", 1), NewQuestion("job-2", "q-c", 1))
	Settle(t, s, res[2].Record, T0)
	qs := []*record.Record{res[0].Record, res[1].Record, res[2].Record, res[3].Record}
	for _, c := range []struct {
		target string
		before time.Duration
		want   []string
	}{
		{bridge.TargetAnswerers, 24 * time.Hour, []string{"q1-0 answerers +1h30m0s", "q0-0 answerers +2h0m0s"}},
		{bridge.TargetAnswerers, 90 * time.Minute, []string{"q1-0 answerers +1h30m0s"}},
		{bridge.TargetAnswerers, time.Hour, []string{}},
		{bridge.TargetAdmins, 24 * time.Hour, []string{"q0-1 admins +3h0m0s"}},
		{record.StepTimeout, 4 * time.Hour, []string{"q0-2 timeout +4h0m0s", "q1-1 timeout +4h0m0s"}},
	} {
		got, err := s.JobSteps(ctx, Tenant, "job-1", c.target, T0.Add(c.before))
		if shown := stepsOf(got, qs...); err != nil || !slices.Equal(shown, c.want) {
			t.Errorf("job-1's %s steps by T0+%v = %q, %v; want %q", c.target, c.before, shown, err, c.want)
		}
	}
	if got, err := s.JobSteps(ctx, "beta", "job-1", bridge.TargetAnswerers, T0.Add(24*time.Hour)); err != nil || len(got) != 0 {
		t.Errorf("another tenant's job = %+v, %v", got, err)
	}
}
