package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// RunTrace runs the trace tests: a question's audit (Audit) and a job's
// questions and transitions (JobQuestions, JobAudit), the trace's sources.
func RunTrace(t *testing.T, open Open) {
	run(t, open, map[string]func(t *testing.T, s Store){
		"AuditOfAQuestion":             testAuditOfAQuestion,
		"JobAuditEveryVersion":         testJobAuditEveryVersion,
		"JobAuditInTheOrderWritten":    testJobAuditOrder,
		"JobQuestionsInTheOrderAsked":  testJobQuestions,
		"JobAuditOfCancelAndSupersede": testJobAuditOfCancelAndSupersede,
		"JobAuditOfEveryKind":          testJobAuditEveryKind,
	})
}

// auditRow is what the tests compare of an audit entry.
type auditRow struct {
	qid      string
	version  int64
	from, to string
	by, via  string
	reason   string
}

func (r auditRow) String() string {
	return fmt.Sprintf("%s@%d %q→%q by %q via %q: %q", r.qid, r.version, r.from, r.to, r.by, r.via, r.reason)
}

// jobAudit reads a job's audit as rows, failing the test on an error.
func jobAudit(t *testing.T, s Store, job string) ([]auditRow, []record.JobAuditEntry) {
	t.Helper()
	entries, err := s.JobAudit(ctx, Tenant, job)
	if err != nil {
		t.Fatalf("job audit of %s: %v", job, err)
	}
	var rows []auditRow
	for _, e := range entries {
		rows = append(rows, auditRow{e.QuestionID, e.TaskVersion, e.From, e.To, e.By, e.Via, e.Reason})
	}
	return rows, entries
}

// testAuditOfAQuestion: a question's audit holds its asking and its end,
// oldest first, with who, how, why and when; a question never asked has
// none.
func testAuditOfAQuestion(t *testing.T, s Store) {
	rec := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	at := T0.Add(90 * time.Second)
	st := Answer(rec, at)
	st.Reason = "answered on Slack"
	if err := s.Settle(ctx, st); err != nil {
		t.Fatal(err)
	}
	got, err := s.Audit(ctx, rec.ID)
	want := []bridge.AuditEntry{
		{From: "", To: bridge.StatePending, Reason: "asked", At: T0},
		{From: bridge.StatePending, To: bridge.StateAnswered, By: "slack:alice", Via: "slack", Reason: "answered on Slack", At: at},
	}
	if err != nil || len(got) != len(want) {
		t.Fatalf("audit = %+v, %v; want %+v", got, err, want)
	}
	for i := range want {
		if got[i].From != want[i].From || got[i].To != want[i].To || got[i].By != want[i].By || got[i].Via != want[i].Via ||
			got[i].Reason != want[i].Reason || !got[i].At.Equal(want[i].At) {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if got, err := s.Audit(ctx, rec.ID+1000); err != nil || len(got) != 0 {
		t.Fatalf("audit of no question = %+v, %v; want none", got, err)
	}
}

// testJobAuditEveryVersion: the trace's source of transitions holds every
// question and task version of the job, and nothing of another job.
func testJobAuditEveryVersion(t *testing.T, s Store) {
	v1 := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	Ask(t, s, NewQuestion("job-2", "q-1", 1))
	next := NewQuestion("job-1", "q-1", 2)
	next.AskedAt = T0.Add(time.Second)
	v2 := Ask(t, s, next)
	rows, entries := jobAudit(t, s, "job-1")
	want := []auditRow{
		{"q-1", 1, "", bridge.StatePending, "", "", "asked"},
		{"q-1", 1, bridge.StatePending, bridge.StateSuperseded, "", "", "superseded by task version 2"},
		{"q-1", 2, "", bridge.StatePending, "", "", "asked"},
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("job-1's audit:\n got %v\nwant %v", rows, want)
	}
	wantAt := []time.Time{T0, next.AskedAt, next.AskedAt}
	wantQ := []int64{v1.ID, v1.ID, v2.ID}
	for i, e := range entries {
		if !e.At.Equal(wantAt[i]) || e.Question != wantQ[i] {
			t.Errorf("entry %d at %v of question %d, want %v of %d", i, e.At, e.Question, wantAt[i], wantQ[i])
		}
	}
	if rows, _ := jobAudit(t, s, "job-none"); len(rows) != 0 {
		t.Fatalf("audit of an unknown job = %v", rows)
	}
}

// testJobAuditOrder: a job's transitions come in the order they were
// written, whichever question each is about, even within one millisecond.
func testJobAuditOrder(t *testing.T, s Store) {
	res := AskAll(t, s, NewQuestion("job-1", "q-1", 1), NewQuestion("job-1", "q-2", 1))
	at := T0.Add(time.Minute)
	Settle(t, s, res[1].Record, at) // q-2 first, then q-1, at the same time
	if _, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", Reason: "done", By: "slack:UADMIN", Via: "slack", At: at}); err != nil {
		t.Fatal(err)
	}
	rows, entries := jobAudit(t, s, "job-1")
	want := []auditRow{
		{"q-1", 1, "", bridge.StatePending, "", "", "asked"},
		{"q-2", 1, "", bridge.StatePending, "", "", "asked"},
		{"q-2", 1, bridge.StatePending, bridge.StateAnswered, "slack:alice", "slack", ""},
		{"q-1", 1, bridge.StatePending, bridge.StateCancelled, "slack:UADMIN", "slack", "done"},
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("job-1's audit:\n got %v\nwant %v", rows, want)
	}
	for i := 1; i < len(entries); i++ {
		if entries[i].ID < entries[i-1].ID {
			t.Errorf("entry %d has id %d after %d: ids go back", i, entries[i].ID, entries[i-1].ID)
		}
	}
}

// testJobQuestions: every question of a job, every version and state, in
// the order asked; none of another job or tenant.
func testJobQuestions(t *testing.T, s Store) {
	beta := NewQuestion("job-1", "q-1", 1)
	beta.Tenant = "beta"
	res := AskAll(t, s, NewQuestion("job-1", "q-1", 1), NewQuestion("job-2", "q-1", 1), beta,
		NewQuestion("job-1", "q-2", 1), NewQuestion("job-1", "q-1", 2))
	Settle(t, s, res[4].Record, T0.Add(time.Minute))
	got, err := s.JobQuestions(ctx, Tenant, "job-1")
	if err != nil {
		t.Fatal(err)
	}
	var keys, states []string
	for _, r := range got {
		keys = append(keys, r.Key.String())
		states = append(states, r.State)
	}
	wantKeys := []string{"acme/job-1/q-1@1", "acme/job-1/q-2@1", "acme/job-1/q-1@2"}
	wantStates := []string{bridge.StateSuperseded, bridge.StateSuperseded, bridge.StateAnswered}
	if !slices.Equal(keys, wantKeys) || !slices.Equal(states, wantStates) {
		t.Fatalf("job-1's questions = %q %q, want %q %q", keys, states, wantKeys, wantStates)
	}
	if got[2].By != "slack:alice" || string(got[2].Answer) != `"yes"` || !got[2].SettledAt.Equal(T0.Add(time.Minute)) {
		t.Errorf("the answered question = %+v, want its answer", got[2])
	}
	if got, err := s.JobQuestions(ctx, Tenant, "job-none"); err != nil || len(got) != 0 {
		t.Fatalf("questions of an unknown job = %+v, %v", got, err)
	}
}

// testJobAuditOfCancelAndSupersede: a version bump's and a cancel's
// transitions are in the job's audit with their reasons.
func testJobAuditOfCancelAndSupersede(t *testing.T, s Store) {
	AskAll(t, s, NewQuestion("job-1", "q-1", 1), NewQuestion("job-1", "q-2", 1))
	at := T0.Add(time.Minute)
	if _, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", QuestionID: "q-2", Reason: "not needed", By: "api:ops", Via: "api", At: at}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", NewVersion: 4, At: at}); err != nil {
		t.Fatal(err)
	}
	rows, entries := jobAudit(t, s, "job-1")
	want := []auditRow{
		{"q-1", 1, "", bridge.StatePending, "", "", "asked"},
		{"q-2", 1, "", bridge.StatePending, "", "", "asked"},
		{"q-2", 1, bridge.StatePending, bridge.StateCancelled, "api:ops", "api", "not needed"},
		{"q-1", 1, bridge.StatePending, bridge.StateSuperseded, "", "", "superseded by task version 4"},
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("job-1's audit:\n got %v\nwant %v", rows, want)
	}
	if !entries[3].At.Equal(at) {
		t.Errorf("the bump's entry at %v, want %v", entries[3].At, at)
	}
}

// testJobAuditEveryKind: every kind of transition (asking, delegating,
// superseding, a ladder round, cancelling) of every question and version
// of a job, in the order written, with its row ids going up; nothing of
// another job or tenant.
func testJobAuditEveryKind(t *testing.T, s Store) {
	v1 := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	other := Ask(t, s, NewQuestion("job-2", "q-1", 1))
	beta := NewQuestion("job-1", "q-1", 1)
	beta.Tenant = "beta"
	Ask(t, s, beta)
	wantOutcomes(t, decideAll(t, s, record.Decision{Delegate: &record.Delegation{Question: v1.ID, Body: v1.Body, By: "slack:UANA",
		Via: "slack", Reason: "delegated", At: T0.Add(time.Minute)}}), nil)
	Settle(t, s, other, T0.Add(time.Minute))
	next := NewQuestion("job-1", "q-1", 2)
	next.AskedAt = T0.Add(time.Hour)
	v2 := Ask(t, s, next)
	side := NewQuestion("job-1", "q-2", 2)
	side.AskedAt = T0.Add(time.Hour)
	q2 := Ask(t, s, side)
	due := dueSteps(t, s, T0.Add(2*time.Hour), 10)
	if err := s.FireRound(ctx, round("reminded answerers", due...), T0.Add(2*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", QuestionID: "q-1", Reason: "not needed",
		By: "slack:UADMIN", Via: "console", At: T0.Add(3 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.JobAudit(ctx, Tenant, "job-1")
	if err != nil {
		t.Fatal(err)
	}
	show := func(e record.JobAuditEntry) string {
		q := map[int64]string{v1.ID: "v1", v2.ID: "v2", q2.ID: "q2"}[e.Question]
		return fmt.Sprintf("%s %s@%d %s>%s %s %s %q +%v", q, e.QuestionID, e.TaskVersion, e.From, e.To, e.By, e.Via, e.Reason, e.At.Sub(T0))
	}
	want := []string{
		`v1 q-1@1 >pending   "asked" +0s`,
		`v1 q-1@1 pending>pending slack:UANA slack "delegated" +1m0s`,
		`v1 q-1@1 pending>superseded   "superseded by task version 2" +1h0m0s`,
		`v2 q-1@2 >pending   "asked" +1h0m0s`,
		`q2 q-2@2 >pending   "asked" +1h0m0s`,
		`v2 q-1@2 pending>pending   "reminded answerers" +2h0m0s`,
		`q2 q-2@2 pending>pending   "reminded answerers" +2h0m0s`,
		`v2 q-1@2 pending>cancelled slack:UADMIN console "not needed" +3h0m0s`,
	}
	var shown []string
	for i, e := range got {
		shown = append(shown, show(e))
		if i > 0 && e.ID <= got[i-1].ID {
			t.Errorf("entry %d's id %d does not follow %d", i, e.ID, got[i-1].ID)
		}
	}
	if !slices.Equal(shown, want) {
		t.Fatalf("job-1's audit:\n got %q\nwant %q", shown, want)
	}
	if got, err := s.JobAudit(ctx, Tenant, "job-none"); err != nil || len(got) != 0 {
		t.Fatalf("an unknown job's audit = %+v, %v", got, err)
	}
}
