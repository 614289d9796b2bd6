package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
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

// A batch where some decisions lose: the losers write nothing, the others
// commit, and the outbox keeps the winners' messages in order.
func TestDecideBatchWithLosers(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	q1 := mustAsk(t, s, newQ("job-1", "q-1", 1)).Record
	q2 := mustAsk(t, s, newQ("job-2", "q-1", 1)).Record
	settle := func(q *record.Record, attempt string) *record.Settlement {
		return &record.Settlement{Question: q.ID, State: bridge.StateAnswered, Action: bridge.ActionAnswer, Answer: []byte(`"x"`),
			By: "slack:U1", Via: "slack", At: t0, AttemptID: attempt,
			Outbox: []record.Message{{Subject: "ev", Data: []byte(attempt + "-event")}, {Subject: "res", Data: []byte(attempt + "-resume")}}}
	}
	before := len(unsentSubjects(t, s))
	errs, err := s.Decide(ctx, []record.Decision{
		{Settle: settle(q1, "a1")},
		{Settle: settle(q1, "a2")},
		{Refuse: &record.Refusal{AttemptID: "a1", Question: q1.ID, At: t0, Outbox: []record.Message{{Subject: "ev", Data: []byte("a1-again")}}}},
		{Refuse: &record.Refusal{AttemptID: "a4", Question: q1.ID, At: t0, Outbox: []record.Message{{Subject: "ev", Data: []byte("a4-refused")}}}},
		{Settle: settle(q2, "a3")},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []error{nil, record.ErrNotPending, record.ErrDuplicate, nil, nil}
	for i := range want {
		if !errors.Is(errs[i], want[i]) || (want[i] == nil && errs[i] != nil) {
			t.Errorf("decision %d: %v, want %v", i, errs[i], want[i])
		}
	}
	got := unsentSubjects(t, s)[before:]
	wantOut := []string{"ev a1-event", "res a1-resume", "ev a4-refused", "ev a3-event", "res a3-resume"}
	if fmt.Sprint(got) != fmt.Sprint(wantOut) {
		t.Fatalf("outbox = %q, want %q", got, wantOut)
	}
	for id, seen := range map[string]bool{"a1": true, "a2": false, "a3": true, "a4": true} {
		if got, _ := s.SeenAttempt(ctx, id); got != seen {
			t.Errorf("attempt %s seen = %v, want %v", id, got, seen)
		}
	}
	if audit, _ := s.Audit(ctx, q1.ID); len(audit) != 2 {
		t.Errorf("audit of q1 = %+v, want asked and answered", audit)
	}
}

// TestUnsentOld checks the relay is told which rows were written before a
// time (it looks for those in their streams before publishing them again).
func TestUnsentOld(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	mustAsk(t, s, newQ("job-1", "q-1", 1)) // its outbox row written at t0
	for _, tc := range []struct {
		oldBefore time.Time
		want      bool
	}{
		{time.Time{}, false},
		{t0, false},
		{t0.Add(time.Millisecond), true},
		{t0.Add(time.Hour), true},
	} {
		rows, err := s.Unsent(ctx, 0, 10, tc.oldBefore)
		if err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		if tc.want {
			want = t0.UnixMilli()
		}
		if len(rows) != 1 || rows[0].OldAt != want {
			t.Errorf("rows unsent, old before %v = %+v, want one with OldAt %d", tc.oldBefore, rows, want)
		}
	}
}

func TestOutboxMarkSentAndPrune(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	mustAsk(t, s, newQ("job-1", "q-1", 1))
	mustAsk(t, s, newQ("job-2", "q-1", 1))
	rows, _ := s.Unsent(ctx, 0, 10, time.Time{})
	if len(rows) != 2 || len(s.instance) != 16 || rows[0].MsgID() != fmt.Sprintf("ob-%s-%d", s.instance, rows[0].ID) {
		t.Fatalf("rows = %+v", rows)
	}
	// Another database's first row gets another message id.
	other := open(t)
	mustAsk(t, other, newQ("job-1", "q-1", 1))
	otherRows, _ := other.Unsent(ctx, 0, 10, time.Time{})
	if otherRows[0].ID != rows[0].ID || otherRows[0].MsgID() == rows[0].MsgID() {
		t.Fatalf("message ids %s and %s", otherRows[0].MsgID(), rows[0].MsgID())
	}
	if after, _ := s.Unsent(ctx, rows[0].ID, 10, time.Time{}); len(after) != 1 || after[0].ID != rows[1].ID {
		t.Fatalf("rows after %d = %+v", rows[0].ID, after)
	}
	if err := s.MarkSentThrough(ctx, rows[0].ID, t0); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.OutboxBacklog(ctx); n != 1 {
		t.Fatalf("backlog %d", n)
	}
	if n, err := s.PruneSent(ctx, t0.Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestOutboxIDsNeverGoBackAfterAPrune checks pruning every sent row
// leaves the newest, so the next row's id is above every id before it:
// the relay reads rows after the last id it published.
func TestOutboxIDsNeverGoBackAfterAPrune(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	if err := s.Enqueue(ctx, []record.Message{{Subject: "ev", Data: []byte("a")}, {Subject: "ev", Data: []byte("b")}}); err != nil {
		t.Fatal(err)
	}
	rows, _ := s.Unsent(ctx, 0, 10, time.Time{})
	last := rows[len(rows)-1].ID
	if err := s.MarkSentThrough(ctx, last, t0); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneSent(ctx, t0.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want every sent row but the newest", n, err)
	}
	if err := s.Enqueue(ctx, []record.Message{{Subject: "ev", Data: []byte("c")}}); err != nil {
		t.Fatal(err)
	}
	next, _ := s.Unsent(ctx, last, 10, time.Time{})
	if len(next) != 1 || next[0].ID <= last || string(next[0].Data) != "c" {
		t.Fatalf("rows after %d: %+v; want the new row, with a higher id", last, next)
	}
}

func TestPruneAttempts(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	rec := mustAsk(t, s, newQ("job-1", "q-1", 1)).Record
	if _, err := s.Decide(ctx, []record.Decision{
		{Refuse: &record.Refusal{AttemptID: "old", Question: rec.ID, At: t0}},
		{Refuse: &record.Refusal{AttemptID: "new", Question: rec.ID, At: t0.Add(48 * time.Hour)}},
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneAttempts(ctx, t0.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	for id, want := range map[string]bool{"old": false, "new": true} {
		if seen, _ := s.SeenAttempt(ctx, id); seen != want {
			t.Errorf("attempt %s seen = %v, want %v", id, seen, want)
		}
	}
}

// answerIfPending decides attempt i on the question k: an answer while it
// is pending, a refusal after. It notes the state it read in seen.
func answerIfPending(ctx context.Context, l record.Lookup, k record.Key, i int, seen *[]string) (record.Decision, error) {
	a, err := l.FindAnswerable(ctx, k)
	if err != nil {
		return record.Decision{}, err
	}
	*seen = append(*seen, a.State)
	if a.State != bridge.StatePending {
		return record.Decision{Refuse: &record.Refusal{AttemptID: fmt.Sprint("a", i), Question: a.ID, At: t0}}, nil
	}
	return record.Decision{Settle: &record.Settlement{Question: a.ID, State: bridge.StateAnswered, Action: bridge.ActionAnswer,
		Answer: []byte(`"x"`), By: "slack:U1", At: t0, AttemptID: fmt.Sprint("a", i)}}, nil
}

// Each decision of a batch reads the state the decisions before it left.
func TestDecideEachSeesEarlierDecisions(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	q := mustAsk(t, s, newQ("job-1", "q-1", 1)).Record
	var seen []string
	errs, err := s.DecideEach(ctx, 2, func(i int, l record.Lookup) (record.Decision, error) {
		return answerIfPending(ctx, l, q.Key, i, &seen)
	})
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("errs %v, %v", errs, err)
	}
	if fmt.Sprint(seen) != "[pending answered]" {
		t.Fatalf("states seen = %v", seen)
	}
	// A failing decision rolls the whole batch back.
	q2 := mustAsk(t, s, newQ("job-2", "q-1", 1)).Record
	_, err = s.DecideEach(ctx, 2, func(i int, l record.Lookup) (record.Decision, error) {
		if i == 1 {
			return record.Decision{}, errors.New("boom")
		}
		return record.Decision{Settle: &record.Settlement{Question: q2.ID, State: bridge.StateAnswered, By: "slack:U1", At: t0, AttemptID: "b0"}}, nil
	})
	if err == nil {
		t.Fatal("no error from a failing decision")
	}
	if r, _ := s.Get(ctx, q2.ID); r.State != bridge.StatePending {
		t.Fatalf("q2 = %s after a rolled-back batch", r.State)
	}
	if seen, _ := s.SeenAttempt(ctx, "b0"); seen {
		t.Fatal("attempt b0 recorded by a rolled-back batch")
	}
}

// TestDecideLargeBatch decides more attempts than one multi-row statement
// holds, winners and losers mixed, and checks every one's outcome and
// every row it left (or did not).
func TestDecideLargeBatch(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	const n = 157 // 64 + 64 + 16 + 8 + 4 + 1 rows: every chunk size but 32 and 2
	var qs []*record.Record
	for i := range n {
		qs = append(qs, mustAsk(t, s, newQ(fmt.Sprint("job-", i), "q", 1)).Record)
	}
	// Attempt "old-3" was decided by an earlier batch.
	if _, err := s.Decide(ctx, []record.Decision{{Refuse: &record.Refusal{AttemptID: "old-3", Question: qs[3].ID, At: t0}}}); err != nil {
		t.Fatal(err)
	}
	// Question 5 was answered by an earlier batch.
	if errs, err := s.Decide(ctx, []record.Decision{{Settle: &record.Settlement{Question: qs[5].ID, State: bridge.StateAnswered, By: "slack:U0", At: t0, AttemptID: "early-5"}}}); err != nil || errs[0] != nil {
		t.Fatal(errs, err)
	}
	before, err := s.Unsent(ctx, 0, 1000, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var ds []record.Decision
	var want []error
	var wantOut []string
	for i, q := range qs {
		id := fmt.Sprint("a-", i)
		switch {
		case i == 3:
			id = "old-3" // decided before
		case i%20 == 7:
			id = "a-0" // the same attempt as the batch's first
		}
		st := &record.Settlement{Question: q.ID, State: bridge.StateAnswered, Action: bridge.ActionAnswer, Answer: []byte(`"x"`),
			By: "slack:U1", Via: "slack", Text: "by " + id, At: t0, AttemptID: id,
			Outbox: []record.Message{{Subject: "res", Data: []byte(fmt.Sprint("resume-", i))}}}
		ds = append(ds, record.Decision{Settle: st})
		switch {
		case i == 3 || i%20 == 7:
			want = append(want, record.ErrDuplicate)
		case i == 5:
			want = append(want, record.ErrNotPending)
		default:
			want = append(want, nil)
			wantOut = append(wantOut, fmt.Sprint("res resume-", i))
		}
		if i%10 == 9 {
			// A second answer to the same question in the same batch.
			ds = append(ds, record.Decision{Settle: &record.Settlement{Question: q.ID, State: bridge.StateAnswered, By: "slack:U2", At: t0,
				AttemptID: fmt.Sprint("second-", i), Outbox: []record.Message{{Subject: "res", Data: []byte("second")}}}})
			want = append(want, record.ErrNotPending)
		}
	}
	errs, err := s.Decide(ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !errors.Is(errs[i], want[i]) || (want[i] == nil && errs[i] != nil) {
			t.Errorf("decision %d: %v, want %v", i, errs[i], want[i])
		}
	}
	rows, err := s.Unsent(ctx, 0, 1000, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var gotOut []string
	for _, r := range rows[len(before):] {
		gotOut = append(gotOut, r.Subject+" "+string(r.Data))
	}
	if fmt.Sprint(gotOut) != fmt.Sprint(wantOut) {
		t.Fatalf("outbox:\n got %q\nwant %q", gotOut, wantOut)
	}
	for i, q := range qs {
		r, err := s.Get(ctx, q.ID)
		if err != nil {
			t.Fatal(err)
		}
		audit, err := s.Audit(ctx, q.ID)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case i == 5:
			if r.By != "slack:U0" {
				t.Errorf("question 5 answered by %q, want the earlier batch's slack:U0", r.By)
			}
		case i == 3 || i%20 == 7:
			if r.State != bridge.StatePending || len(audit) != 1 {
				t.Errorf("question %d: %s with %d audit rows after a duplicate attempt, want pending with 1", i, r.State, len(audit))
			}
		default:
			if r.State != bridge.StateAnswered || r.By != "slack:U1" || r.Text != fmt.Sprint("by a-", i) || len(audit) != 2 {
				t.Errorf("question %d: %s by %q (%q) with %d audit rows, want answered by slack:U1 with 2", i, r.State, r.By, r.Text, len(audit))
			}
			if seen, _ := s.SeenAttempt(ctx, fmt.Sprint("a-", i)); !seen {
				t.Errorf("attempt a-%d not recorded", i)
			}
		}
		if i%10 == 9 {
			if seen, _ := s.SeenAttempt(ctx, fmt.Sprint("second-", i)); seen {
				t.Errorf("losing attempt second-%d recorded", i)
			}
		}
	}
	// Only the questions still pending keep their ladder: two steps each.
	steps, err := s.DueSteps(ctx, t0.Add(24*time.Hour), 10000)
	if err != nil {
		t.Fatal(err)
	}
	left := map[int64]int{}
	for _, d := range steps {
		left[d.Question]++
	}
	for i, q := range qs {
		pending := i == 3 || i%20 == 7
		if (left[q.ID] == 2) != pending {
			t.Errorf("question %d has %d ladder steps left (pending %v)", i, left[q.ID], pending)
		}
	}
}

// TestPrefetchReadsAsFindAnswerable: a prefetched question reads exactly as
// a lookup of its own would, before and after decisions of the same batch
// change it, and what a caller does to a read copy stays its own.
func TestPrefetchReadsAsFindAnswerable(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	q1 := mustAsk(t, s, newQ("job-1", "q-1", 1)).Record
	q2 := mustAsk(t, s, newQ("job-2", "q-1", 1)).Record
	if _, err := s.RecordDelivery(ctx, q1.ID, bridge.Delivery{Platform: "slack", OK: true,
		Message: &bridge.MessageRef{Platform: "slack", Channel: "C1", MessageID: "1.2", Thread: "1.1"}}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, record.JobCancel{Tenant: "acme", JobID: "job-2", NewVersion: 3, At: t0}); err != nil {
		t.Fatal(err)
	}
	missing := record.Key{Tenant: "acme", JobID: "job-9", QuestionID: "q-1", TaskVersion: 1}
	latest := record.Key{Tenant: "acme", JobID: "job-1", QuestionID: "q-1"}
	want := map[record.Key]*record.Answerable{}
	for _, k := range []record.Key{q1.Key, q2.Key, latest} {
		a, err := s.FindAnswerable(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		want[k] = a
	}
	var seen []string
	errs, err := s.DecideEach(ctx, 3, func(i int, l record.Lookup) (record.Decision, error) {
		if i == 0 {
			if err := l.Prefetch(ctx, []record.Key{q1.Key, q2.Key, missing, latest, q1.Key}); err != nil {
				return record.Decision{}, err
			}
			for k, w := range want {
				got, err := l.FindAnswerable(ctx, k)
				if err != nil {
					return record.Decision{}, err
				}
				if fmt.Sprintf("%+v %+v", got, got.Record) != fmt.Sprintf("%+v %+v", w, w.Record) {
					t.Errorf("prefetched %s:\n got %+v %+v\nwant %+v %+v", k, got, got.Record, w, w.Record)
				}
				got.State = "scribbled" // the caller's copy
			}
			if _, err := l.FindAnswerable(ctx, missing); !errors.Is(err, record.ErrNotFound) {
				t.Errorf("missing question: %v, want ErrNotFound", err)
			}
		}
		return answerIfPending(ctx, l, q1.Key, i, &seen)
	})
	if err != nil || errs[0] != nil || errs[1] != nil || errs[2] != nil {
		t.Fatalf("errs %v, %v", errs, err)
	}
	if fmt.Sprint(seen) != "[pending answered answered]" {
		t.Fatalf("states seen = %v", seen)
	}
}

// TestPruneManyRows prunes more rows than one scan finds, and keeps what
// is not old yet or not sent yet.
func TestPruneManyRows(t *testing.T) {
	t.Parallel()
	s := open(t)
	s.pruneScan = 200
	ctx := context.Background()
	old, recent := 2*s.pruneScan+45, 7
	var ids []int64
	for len(ids) < old+recent+1 {
		var msgs []record.Message
		for range 100 {
			msgs = append(msgs, record.Message{Subject: "ev", Data: []byte("x")})
		}
		if err := s.Enqueue(ctx, msgs); err != nil {
			t.Fatal(err)
		}
		rows, err := s.Unsent(ctx, 0, 100000, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		ids = ids[:0]
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
	}
	// Old rows sent yesterday, a few sent just now, the last still unsent.
	if err := s.MarkSentThrough(ctx, ids[old-1], t0.Add(-24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSentThrough(ctx, ids[old+recent-1], t0); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneSent(ctx, t0.Add(-time.Hour)); err != nil || n != int64(old) {
		t.Fatalf("pruned %d, %v; want %d", n, err, old)
	}
	var left, unsent int64
	if err := s.w.QueryRowContext(ctx, "SELECT COUNT(*), COUNT(*) FILTER (WHERE sent_at IS NULL) FROM outbox").Scan(&left, &unsent); err != nil {
		t.Fatal(err)
	}
	if want := int64(len(ids) - old); left != want || unsent != want-int64(recent) {
		t.Fatalf("%d rows left (%d unsent), want %d (%d unsent)", left, unsent, want, want-int64(recent))
	}

	rec := mustAsk(t, s, newQ("job-1", "q-1", 1)).Record
	var ds []record.Decision
	for i := range old + recent {
		at := t0.Add(-48 * time.Hour)
		if i >= old {
			at = t0
		}
		ds = append(ds, record.Decision{Refuse: &record.Refusal{AttemptID: fmt.Sprint("a-", i), Question: rec.ID, At: at}})
	}
	if _, err := s.Decide(ctx, ds); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneAttempts(ctx, t0.Add(-time.Hour)); err != nil || n != int64(old) {
		t.Fatalf("pruned %d attempts, %v; want %d", n, err, old)
	}
	for _, i := range []int{0, old - 1, old, old + recent - 1} {
		if seen, _ := s.SeenAttempt(ctx, fmt.Sprint("a-", i)); seen != (i >= old) {
			t.Errorf("attempt a-%d seen = %v after the prune", i, seen)
		}
	}
}

// TestOutboxMsgID: the relay's Nats-Msg-Id is "ob-<instance>-<row id>",
// whatever the lengths (JetStream's duplicate window keys on it).
func TestOutboxMsgID(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100)
	for _, c := range []struct {
		row  record.OutboxRow
		want string
	}{
		{record.OutboxRow{ID: 1, Instance: "abc"}, "ob-abc-1"},
		{record.OutboxRow{ID: 123456789, Instance: "6f1c2a9e4b7d4e0f8a3b5c7d9e1f2a3b"}, "ob-6f1c2a9e4b7d4e0f8a3b5c7d9e1f2a3b-123456789"},
		{record.OutboxRow{ID: 9223372036854775807, Instance: long}, "ob-" + long + "-9223372036854775807"},
		{record.OutboxRow{}, "ob--0"},
	} {
		if got := c.row.MsgID(); got != c.want {
			t.Errorf("MsgID of %+v = %q, want %q", c.row, got, c.want)
		}
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
