package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "sub", "askbridge.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newQ(job, qid string, version int64) record.NewQuestion {
	return record.NewQuestion{
		Key:      record.Key{Tenant: "acme", JobID: job, QuestionID: qid, TaskVersion: version},
		Kind:     bridge.KindQuestion,
		Body:     []byte(`{"question":"Which?"}`),
		AskedAt:  t0,
		Deadline: t0.Add(4 * time.Hour),
		Steps: []record.Step{
			{Index: 0, Target: bridge.TargetAnswerers, Due: t0.Add(time.Hour)},
			{Index: 1, Target: record.StepTimeout, Due: t0.Add(4 * time.Hour)},
		},
		Outbox: []record.Message{{Subject: "ask.v1.event.acme." + job, Data: []byte(`asked`)}},
		Supersede: func(old *record.Record) []record.Message {
			return []record.Message{{Subject: "ask.v1.resume.acme." + job, Data: []byte("superseded " + old.QuestionID)}}
		},
	}
}

func mustAsk(t *testing.T, s *Store, nq record.NewQuestion) *record.AskResult {
	t.Helper()
	res, err := s.Ask(context.Background(), nq)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func unsentSubjects(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.Unsent(context.Background(), 0, 100, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.Subject+" "+string(r.Data))
	}
	return out
}

func TestMigrationsAndReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	// Every embedded migration is applied, whoever adds the next one.
	names, _ := fs.Glob(migrations, "migrations/*.sql")
	v, err := s.SchemaVersion(context.Background())
	if err != nil || v != len(names) || v < 4 {
		t.Fatalf("schema version %d of %d migrations, %v", v, len(names), err)
	}
	mustAsk(t, s, newQ("job-1", "q-1", 1))
	s.Close()
	s, err = Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Find(context.Background(), record.Key{Tenant: "acme", JobID: "job-1", QuestionID: "q-1"})
	if err != nil || r.State != bridge.StatePending || !r.AskedAt.Equal(t0) {
		t.Fatalf("after reopen: %+v, %v", r, err)
	}
	var mode string
	if err := s.r.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal mode %q, %v", mode, err)
	}
	var sync int
	if err := s.w.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil || sync != 2 {
		t.Fatalf("synchronous %d (want 2, FULL), %v", sync, err)
	}
}

func TestAskDuplicateStaleAndSupersede(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	if res := mustAsk(t, s, newQ("job-1", "q-1", 2)); res.Status != record.Asked || res.Record == nil || res.JobVersion != 2 {
		t.Fatalf("first ask = %+v", res)
	}
	if res := mustAsk(t, s, newQ("job-1", "q-1", 2)); res.Status != record.Duplicate {
		t.Fatalf("same ask again = %+v", res)
	}
	if res := mustAsk(t, s, newQ("job-1", "q-old", 1)); res.Status != record.Stale || res.JobVersion != 2 {
		t.Fatalf("older version = %+v", res)
	}
	// Same version, another question: both wait.
	mustAsk(t, s, newQ("job-1", "q-2", 2))
	res := mustAsk(t, s, newQ("job-1", "q-3", 3))
	if res.Status != record.Asked || len(res.Superseded) != 2 {
		t.Fatalf("newer version = %+v", res)
	}
	for _, qid := range []string{"q-1", "q-2"} {
		r, err := s.Find(ctx, record.Key{Tenant: "acme", JobID: "job-1", QuestionID: qid})
		if err != nil || r.State != bridge.StateSuperseded || r.Text != "superseded by task version 3" {
			t.Fatalf("%s = %+v, %v", qid, r, err)
		}
		audit, _ := s.Audit(ctx, r.ID)
		if len(audit) != 2 || audit[1].From != bridge.StatePending || audit[1].To != bridge.StateSuperseded {
			t.Fatalf("%s audit = %+v", qid, audit)
		}
	}
	want := []string{
		"ask.v1.event.acme.job-1 asked", "ask.v1.event.acme.job-1 asked",
		"ask.v1.resume.acme.job-1 superseded q-1", "ask.v1.resume.acme.job-1 superseded q-2", "ask.v1.event.acme.job-1 asked",
	}
	if got := unsentSubjects(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("outbox = %q", got)
	}
	// Superseded questions left the ladder.
	due, _ := s.DueSteps(ctx, t0.Add(24*time.Hour), 100)
	if len(due) != 2 {
		t.Fatalf("%d steps left, want q-3's two", len(due))
	}
}

func TestSettleIsCompareAndSetAndDedupes(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	rec := mustAsk(t, s, newQ("job-1", "q-1", 1)).Record
	st := record.Settlement{
		Question: rec.ID, State: bridge.StateAnswered, Action: bridge.ActionAnswer, Answer: []byte(`"blue"`), AnswerRaw: []byte(`"Blue"`),
		AnswerText: "blue", By: "slack:U1", ByName: "kevin", Via: "slack", Text: "The answer: blue", At: t0.Add(time.Minute),
		AttemptID: "a1", Outbox: []record.Message{{Subject: "ask.v1.resume.acme.job-1", Data: []byte("answered")}},
	}
	if err := s.Settle(ctx, st); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, st); !errors.Is(err, record.ErrDuplicate) {
		t.Fatalf("same attempt again: %v", err)
	}
	st.AttemptID = "a2"
	if err := s.Settle(ctx, st); !errors.Is(err, record.ErrNotPending) {
		t.Fatalf("second answer: %v", err)
	}
	// The failed second attempt left nothing behind: no dedupe key, no outbox row.
	if seen, _ := s.SeenAttempt(ctx, "a2"); seen {
		t.Fatal("a refused settle recorded its attempt")
	}
	if got := unsentSubjects(t, s); len(got) != 2 {
		t.Fatalf("outbox = %q", got)
	}
	r, _ := s.Get(ctx, rec.ID)
	if r.State != bridge.StateAnswered || string(r.Answer) != `"blue"` || string(r.AnswerRaw) != `"Blue"` || r.ByName != "kevin" || !r.SettledAt.Equal(st.At) {
		t.Fatalf("record = %+v", r)
	}
	if due, _ := s.DueSteps(ctx, t0.Add(24*time.Hour), 10); len(due) != 0 {
		t.Fatalf("steps left after settling: %+v", due)
	}
}

func TestConcurrentSettlesOneWins(t *testing.T) {
	t.Parallel()
	s := open(t)
	rec := mustAsk(t, s, newQ("job-1", "q-1", 1)).Record
	var wg sync.WaitGroup
	results := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- s.Settle(context.Background(), record.Settlement{Question: rec.ID, State: bridge.StateAnswered, AttemptID: fmt.Sprint(i), At: t0})
		}()
	}
	wg.Wait()
	close(results)
	won, lost := 0, 0
	for err := range results {
		switch {
		case err == nil:
			won++
		case errors.Is(err, record.ErrNotPending):
			lost++
		default:
			t.Fatal(err)
		}
	}
	if won != 1 || lost != 19 {
		t.Fatalf("won %d lost %d", won, lost)
	}
}

func TestLadderStepsFireOnce(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	mustAsk(t, s, newQ("job-1", "q-1", 1))
	mustAsk(t, s, newQ("job-2", "q-1", 1))
	next, ok, err := s.NextDue(ctx)
	if err != nil || !ok || !next.Equal(t0.Add(time.Hour)) {
		t.Fatalf("next due %v %v %v", next, ok, err)
	}
	due, err := s.DueSteps(ctx, t0.Add(90*time.Minute), 10)
	if err != nil || len(due) != 2 || due[0].Target != bridge.TargetAnswerers {
		t.Fatalf("due = %+v, %v", due, err)
	}
	msg := []record.Message{{Subject: "ask.v1.event.acme.job-1", Data: []byte("reminded")}}
	if err := s.FireStep(ctx, due[0], t0.Add(90*time.Minute), "reminded answerers", msg); err != nil {
		t.Fatal(err)
	}
	if err := s.FireStep(ctx, due[0], t0.Add(90*time.Minute), "reminded answerers", msg); !errors.Is(err, record.ErrStepGone) {
		t.Fatalf("second fire: %v", err)
	}
	if due, _ := s.DueSteps(ctx, t0.Add(90*time.Minute), 10); len(due) != 1 {
		t.Fatalf("due after firing = %+v", due)
	}
	audit, _ := s.Audit(ctx, due[0].Question)
	if len(audit) != 2 || audit[1].Reason != "reminded answerers" {
		t.Fatalf("audit = %+v", audit)
	}
}

func TestCancelAndBump(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	mustAsk(t, s, newQ("job-1", "q-1", 1))
	mustAsk(t, s, newQ("job-1", "q-2", 1))
	states := func(r *record.Record) []record.Message {
		return []record.Message{{Subject: "x", Data: []byte(r.QuestionID + " " + r.State)}}
	}
	ended, err := s.Cancel(ctx, record.JobCancel{Tenant: "acme", JobID: "job-1", QuestionID: "q-2", Reason: "not needed", By: "slack:UADMIN", At: t0, Outbox: states})
	if err != nil || len(ended) != 1 || ended[0].QuestionID != "q-2" || ended[0].State != bridge.StateCancelled {
		t.Fatalf("cancel q-2 = %+v, %v", ended, err)
	}
	ended, err = s.Cancel(ctx, record.JobCancel{Tenant: "acme", JobID: "job-1", NewVersion: 5, At: t0, Outbox: states})
	if err != nil || len(ended) != 1 || ended[0].QuestionID != "q-1" || ended[0].State != bridge.StateSuperseded {
		t.Fatalf("bump = %+v, %v", ended, err)
	}
	if a, err := s.FindAnswerable(ctx, record.Key{Tenant: "acme", JobID: "job-1", QuestionID: "q-1"}); err != nil || a.JobVersion != 5 {
		t.Fatalf("job version after the bump: %+v, %v", a, err)
	}
	if res := mustAsk(t, s, newQ("job-1", "q-9", 4)); res.Status != record.Stale {
		t.Fatalf("ask below the bumped version = %+v", res)
	}
	got := unsentSubjects(t, s)
	if got[len(got)-2] != "x q-2 cancelled" || got[len(got)-1] != "x q-1 superseded" {
		t.Fatalf("outbox = %q", got)
	}
}

// TestCancelAppliedOnce checks a cancel delivered again (its key seen)
// changes nothing: a redelivered version bump must not cancel the
// questions asked at the new version since.
func TestCancelAppliedOnce(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	mustAsk(t, s, newQ("job-1", "q-1", 1))
	bump := record.JobCancel{Tenant: "acme", JobID: "job-1", NewVersion: 2, At: t0, Key: "cancel.7.1"}
	if ended, err := s.Cancel(ctx, bump); err != nil || len(ended) != 1 {
		t.Fatalf("bump = %+v, %v", ended, err)
	}
	mustAsk(t, s, newQ("job-1", "q-2", 2))
	if ended, err := s.Cancel(ctx, bump); !errors.Is(err, record.ErrDuplicate) || len(ended) != 0 {
		t.Fatalf("the bump again = %+v, %v; want ErrDuplicate", ended, err)
	}
	if r, err := s.Find(ctx, record.Key{Tenant: "acme", JobID: "job-1", QuestionID: "q-2", TaskVersion: 2}); err != nil || r.State != bridge.StatePending {
		t.Fatalf("q-2 after the redelivered bump: %+v, %v", r, err)
	}
	// Another cancel (another key) still applies.
	if ended, err := s.Cancel(ctx, record.JobCancel{Tenant: "acme", JobID: "job-1", At: t0, Key: "cancel.8.1"}); err != nil || len(ended) != 1 {
		t.Fatalf("a new cancel = %+v, %v", ended, err)
	}
}

func TestFindListCountAndDeliveries(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	for i := range 5 {
		mustAsk(t, s, newQ(fmt.Sprintf("job-%d", i), "q-1", 1))
	}
	mustAsk(t, s, newQ("job-0", "q-only", 1))
	mustAsk(t, s, newQ("job-3", "q-1", 2))
	if recs, err := s.FindQuestionIDs(ctx, "acme", "", "q-1"); err != nil || len(recs) != 5 {
		t.Fatalf("q-1 in every job: %d, %v", len(recs), err)
	}
	if recs, err := s.FindQuestionIDs(ctx, "", "job-3", "q-1"); err != nil || len(recs) != 1 || recs[0].TaskVersion != 2 {
		t.Fatalf("by job, the latest version: %+v, %v", recs, err)
	}
	if recs, err := s.FindQuestionIDs(ctx, "other", "", "q-only"); err != nil || len(recs) != 0 {
		t.Fatalf("other tenant: %+v, %v", recs, err)
	}
	page, err := s.List(ctx, record.ListFilter{Tenant: "acme", State: bridge.StatePending, Limit: 4})
	if err != nil || len(page) != 4 {
		t.Fatalf("page 1 = %d, %v", len(page), err)
	}
	page2, _ := s.List(ctx, record.ListFilter{Tenant: "acme", State: bridge.StatePending, Limit: 4, AfterID: page[3].ID})
	if len(page2) != 2 {
		t.Fatalf("page 2 = %d", len(page2))
	}
	counts, _ := s.CountByState(ctx)
	if counts[bridge.StatePending] != 6 {
		t.Fatalf("counts = %v", counts)
	}
	rec := page[0]
	ref := bridge.MessageRef{Platform: "slack", Channel: "C1", MessageID: "1.2", Thread: "1.1"}
	all, err := s.RecordDelivery(ctx, rec.ID, bridge.Delivery{Platform: "slack", OK: true, Message: &ref}, t0)
	if err != nil || len(all) != 1 || !all[0].OK {
		t.Fatalf("deliveries = %+v, %v", all, err)
	}
	all, _ = s.RecordDelivery(ctx, rec.ID, bridge.Delivery{Platform: "discord", Failure: &bridge.Failure{Code: bridge.CodeAccessDenied}}, t0)
	if len(all) != 2 || all[0].Platform != "discord" || all[0].Failure.Code != bridge.CodeAccessDenied {
		t.Fatalf("deliveries = %+v", all)
	}
	refs, _ := s.Messages(ctx, rec.ID)
	if len(refs) != 1 || refs[0] != ref {
		t.Fatalf("messages = %+v", refs)
	}
	// A batch of reports is stored in order: the latest per question and
	// platform wins; and the job's threads are the threads its cards are in.
	other := mustAsk(t, s, newQ("job-batch", "q-batch", 1)).Record
	late := bridge.MessageRef{Platform: "slack", Channel: "C2", MessageID: "2.2", Thread: "2.1"}
	if err := s.RecordDeliveries(ctx, []record.ReportedDelivery{
		{Question: other.ID, Delivery: bridge.Delivery{Platform: "slack", Failure: &bridge.Failure{Code: bridge.CodeSourceUnreliable}}},
		{Question: other.ID, Delivery: bridge.Delivery{Platform: "slack", OK: true, Message: &late}},
	}, t0); err != nil {
		t.Fatal(err)
	}
	if refs, _ := s.Messages(ctx, other.ID); len(refs) != 1 || refs[0] != late {
		t.Fatalf("messages after a batch = %+v, want the later report's", refs)
	}
	threads, err := s.JobThreads(ctx, "acme", other.JobID)
	if err != nil || len(threads) != 1 || threads[0] != (bridge.MessageRef{Platform: "slack", Channel: "C2", Thread: "2.1"}) {
		t.Fatalf("job threads = %+v, %v", threads, err)
	}
	// The answer path's one read agrees with Find, JobVersion and Messages.
	a, err := s.FindAnswerable(ctx, rec.Key)
	if err != nil || a.ID != rec.ID || a.JobVersion != 1 || len(a.Messages) != 1 || a.Messages[0] != ref || a.State != bridge.StatePending {
		t.Fatalf("answerable = %+v, %v", a, err)
	}
	mustAsk(t, s, newQ(rec.JobID, "q-next", 3))
	if a, err = s.FindAnswerable(ctx, rec.Key); err != nil || a.JobVersion != 3 || a.TaskVersion != 1 {
		t.Fatalf("answerable after the job moved on = %+v, %v", a, err)
	}
	if a, err = s.FindAnswerable(ctx, record.Key{Tenant: "acme", JobID: "job-1", QuestionID: "q-1"}); err != nil || a.JobID != "job-1" || a.Messages != nil {
		t.Fatalf("answerable, latest version, no messages = %+v, %v", a, err)
	}
	if _, err = s.FindAnswerable(ctx, record.Key{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 9}); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("answerable, unknown version: %v", err)
	}
}

// TestInstanceIsKeptAcrossOpens checks a database keeps its id when opened
// again (a restart: the adapters' posting claims and the runtime's lease
// name this replica by it), and another database has another.
func TestInstanceIsKeptAcrossOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "askbridge.db")
	first, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	id := first.Instance()
	first.Close()
	again, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if id == "" || again.Instance() != id {
		t.Fatalf("instance %q after reopening, want %q", again.Instance(), id)
	}
	if other := open(t).Instance(); other == id {
		t.Fatalf("another database has the same instance %q", other)
	}
}
