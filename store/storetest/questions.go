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

// RunQuestions runs the questions tests: asking (AskMany), Find, Get,
// FindQuestionIDs, List, CountByState, Cancel and Enqueue.
func RunQuestions(t *testing.T, open Open) {
	run(t, open, map[string]func(t *testing.T, s Store){
		"AskOutcomes":              testAskOutcomes,
		"AskSupersedesOlderOnes":   testAskSupersedes,
		"AskManyInOrder":           testAskManyInOrder,
		"FindAndGet":               testFindAndGet,
		"FindQuestionIDs":          testFindQuestionIDs,
		"FindQuestionIDsCap":       testFindQuestionIDsCap,
		"ListFiltersAndPages":      testListFiltersAndPages,
		"ListLimit":                testListLimit,
		"CountByState":             testCountByState,
		"CancelOneAndAll":          testCancelOneAndAll,
		"CancelBumpsTheVersion":    testCancelBump,
		"CancelBumpOfAnUnknownJob": testCancelBumpUnknownJob,
		"CancelAppliedOnce":        testCancelAppliedOnce,
		"Enqueue":                  testEnqueue,
		"RaceAskOnce":              testRaceAskOnce,
		"RaceAskVersions":          testRaceAskVersions,
		"RaceCancelKey":            testRaceCancelKey,
		"RaceCancelAndSettle":      testRaceCancelAndSettle,
	})
}

// testAskOutcomes: a question is Asked once; the same key again is a
// Duplicate and an older version than the job's is Stale, and neither
// writes anything.
func testAskOutcomes(t *testing.T, s Store) {
	nq := NewQuestion("job-1", "q-1", 2)
	res := AskAll(t, s, nq)[0]
	if res.Status != record.Asked || res.JobVersion != 2 || res.Record == nil || len(res.Superseded) != 0 {
		t.Fatalf("first ask = %+v", res)
	}
	r := res.Record
	if r.ID <= 0 || r.Key != nq.Key || r.Kind != bridge.KindQuestion || string(r.Body) != string(nq.Body) ||
		r.State != bridge.StatePending || !r.AskedAt.Equal(T0) || !r.Deadline.Equal(nq.Deadline) {
		t.Fatalf("asked record = %+v", r)
	}
	if got := Get(t, s, r.ID); got.Key != nq.Key || got.State != bridge.StatePending || !got.AskedAt.Equal(T0) || !got.SettledAt.IsZero() {
		t.Fatalf("stored record = %+v", got)
	}
	if res := AskAll(t, s, nq)[0]; res.Status != record.Duplicate {
		t.Fatalf("the same ask again = %+v, want Duplicate", res)
	}
	old := NewQuestion("job-1", "q-old", 1)
	if res := AskAll(t, s, old)[0]; res.Status != record.Stale || res.JobVersion != 2 {
		t.Fatalf("an older version = %+v, want Stale at job version 2", res)
	}
	if _, err := s.Find(ctx, old.Key); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("a stale question was recorded: %v", err)
	}
	// The asked question's message only: a duplicate and a stale ask write none.
	if got, want := Unsent(t, s), []string{"ask.v1.event.acme.job-1 asked q-1"}; !slices.Equal(got, want) {
		t.Fatalf("outbox = %q, want %q", got, want)
	}
	// An older version of a question the job has is a Duplicate, not Stale.
	AskAll(t, s, NewQuestion("job-1", "q-1", 3))
	if res := AskAll(t, s, nq)[0]; res.Status != record.Duplicate || res.JobVersion != 3 {
		t.Fatalf("version 2 asked again at job version 3 = %+v, want Duplicate", res)
	}
}

// testAskSupersedes: questions of one version wait together; a newer
// version supersedes every older pending one, announcing each, and leaves
// the settled ones alone.
func testAskSupersedes(t *testing.T, s Store) {
	q1 := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	q2 := Ask(t, s, NewQuestion("job-1", "q-2", 1))
	done := Ask(t, s, NewQuestion("job-1", "q-done", 1))
	other := Ask(t, s, NewQuestion("job-2", "q-1", 1))
	Settle(t, s, done, T0.Add(time.Minute))
	if got := Get(t, s, q1.ID); got.State != bridge.StatePending {
		t.Fatalf("q-1 after another question of its version = %s", got.State)
	}
	next := NewQuestion("job-1", "q-3", 2)
	next.AskedAt = T0.Add(time.Hour)
	res := AskAll(t, s, next)[0]
	if res.Status != record.Asked || res.JobVersion != 2 || len(res.Superseded) != 2 {
		t.Fatalf("newer version = %+v", res)
	}
	for i, want := range []*record.Record{q1, q2} {
		sup := res.Superseded[i]
		if sup.ID != want.ID || sup.State != bridge.StateSuperseded {
			t.Errorf("superseded[%d] = %+v, want %s superseded", i, sup, want.QuestionID)
		}
		got := Get(t, s, want.ID)
		if got.State != bridge.StateSuperseded || got.Text != "superseded by task version 2" || !got.SettledAt.Equal(next.AskedAt) {
			t.Errorf("%s = %+v", want.QuestionID, got)
		}
		if a, err := s.Audit(ctx, want.ID); err != nil || len(a) != 2 || a[1].From != bridge.StatePending || a[1].To != bridge.StateSuperseded {
			t.Errorf("%s's audit = %+v, %v; want asked, then superseded", want.QuestionID, a, err)
		}
	}
	if got := Get(t, s, done.ID); got.State != bridge.StateAnswered {
		t.Errorf("the answered question became %s", got.State)
	}
	if got := Get(t, s, other.ID); got.State != bridge.StatePending {
		t.Errorf("another job's question became %s", got.State)
	}
	want := []string{
		"ask.v1.event.acme.job-1 asked q-1", "ask.v1.event.acme.job-1 asked q-2", "ask.v1.event.acme.job-1 asked q-done",
		"ask.v1.event.acme.job-2 asked q-1",
		"ask.v1.resume.acme.job-1 superseded q-1", "ask.v1.resume.acme.job-1 superseded q-2", "ask.v1.event.acme.job-1 asked q-3",
	}
	if got := Unsent(t, s); !slices.Equal(got, want) {
		t.Fatalf("outbox:\n got %q\nwant %q", got, want)
	}
}

// testAskManyInOrder: a batch is asked in order, each question seeing the
// ones before it; the results are in the same order.
func testAskManyInOrder(t *testing.T, s Store) {
	later := NewQuestion("job-1", "q-2", 2)
	later.AskedAt = T0.Add(time.Minute)
	res := AskAll(t, s,
		NewQuestion("job-1", "q-1", 1),
		NewQuestion("job-1", "q-1", 1), // the one before, again
		later,                          // supersedes q-1
		NewQuestion("job-1", "q-3", 1), // below the version the batch reached
		NewQuestion("job-2", "q-1", 1),
	)
	want := []record.AskStatus{record.Asked, record.Duplicate, record.Asked, record.Stale, record.Asked}
	for i, w := range want {
		if res[i].Status != w {
			t.Errorf("result %d: status %d, want %d", i, res[i].Status, w)
		}
	}
	if len(res[2].Superseded) != 1 || res[2].Superseded[0].ID != res[0].Record.ID {
		t.Fatalf("q-2 superseded %+v, want q-1", res[2].Superseded)
	}
	if res[3].JobVersion != 2 {
		t.Errorf("stale result's job version %d, want 2", res[3].JobVersion)
	}
	if res[0].Record.ID >= res[2].Record.ID || res[2].Record.ID >= res[4].Record.ID {
		t.Errorf("ids %d, %d, %d do not follow the batch's order", res[0].Record.ID, res[2].Record.ID, res[4].Record.ID)
	}
	wantOut := []string{
		"ask.v1.event.acme.job-1 asked q-1", "ask.v1.resume.acme.job-1 superseded q-1",
		"ask.v1.event.acme.job-1 asked q-2", "ask.v1.event.acme.job-2 asked q-1",
	}
	if got := Unsent(t, s); !slices.Equal(got, wantOut) {
		t.Fatalf("outbox:\n got %q\nwant %q", got, wantOut)
	}
	if res, err := s.AskMany(ctx, nil); err != nil || len(res) != 0 {
		t.Fatalf("an empty batch = %v, %v", res, err)
	}
}

// testFindAndGet: Find reads a question by key, the latest version when
// the key names none; Get reads it by id; both say ErrNotFound.
func testFindAndGet(t *testing.T, s Store) {
	v1 := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	v3 := Ask(t, s, NewQuestion("job-1", "q-1", 3))
	Ask(t, s, NewQuestion("job-2", "q-1", 7))
	for _, c := range []struct {
		k    record.Key
		want int64
	}{
		{record.Key{Tenant: Tenant, JobID: "job-1", QuestionID: "q-1"}, v3.ID},
		{record.Key{Tenant: Tenant, JobID: "job-1", QuestionID: "q-1", TaskVersion: 1}, v1.ID},
		{record.Key{Tenant: Tenant, JobID: "job-1", QuestionID: "q-1", TaskVersion: 3}, v3.ID},
	} {
		r, err := s.Find(ctx, c.k)
		if err != nil || r.ID != c.want {
			t.Errorf("Find %s = %+v, %v; want question %d", c.k, r, err, c.want)
		}
	}
	if r, _ := s.Find(ctx, v1.Key); r == nil || r.State != bridge.StateSuperseded || r.TaskVersion != 1 {
		t.Errorf("version 1 = %+v, want it superseded", r)
	}
	for _, k := range []record.Key{
		{Tenant: Tenant, JobID: "job-1", QuestionID: "q-1", TaskVersion: 2},
		{Tenant: Tenant, JobID: "job-1", QuestionID: "q-9"},
		{Tenant: Tenant, JobID: "job-9", QuestionID: "q-1"},
		{Tenant: "other", JobID: "job-1", QuestionID: "q-1"},
	} {
		if r, err := s.Find(ctx, k); !errors.Is(err, record.ErrNotFound) {
			t.Errorf("Find %s = %+v, %v; want ErrNotFound", k, r, err)
		}
	}
	if got := Get(t, s, v1.ID); got.Key != v1.Key {
		t.Errorf("Get %d = %+v", v1.ID, got)
	}
	if r, err := s.Get(ctx, v3.ID+1000); !errors.Is(err, record.ErrNotFound) {
		t.Errorf("Get of an unknown id = %+v, %v; want ErrNotFound", r, err)
	}
}

// testFindQuestionIDs: the latest version of a question id in every job
// of it, narrowed by tenant and job.
func testFindQuestionIDs(t *testing.T, s Store) {
	var nqs []record.NewQuestion
	for i := range 4 {
		nqs = append(nqs, NewQuestion(fmt.Sprint("job-", i), "q-1", 1))
	}
	beta := NewQuestion("job-0", "q-1", 1)
	beta.Tenant = "beta"
	nqs = append(nqs, NewQuestion("job-0", "q-only", 1), NewQuestion("job-2", "q-1", 2), beta)
	AskAll(t, s, nqs...)
	keys := func(recs []*record.Record) []string {
		var out []string
		for _, r := range recs {
			out = append(out, r.Key.String())
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		tenant, job, qid string
		want             []string
	}{
		{Tenant, "", "q-1", []string{"acme/job-0/q-1@1", "acme/job-1/q-1@1", "acme/job-2/q-1@2", "acme/job-3/q-1@1"}},
		{"", "", "q-1", []string{"acme/job-0/q-1@1", "acme/job-1/q-1@1", "acme/job-2/q-1@2", "acme/job-3/q-1@1", "beta/job-0/q-1@1"}},
		{"", "job-0", "q-1", []string{"acme/job-0/q-1@1", "beta/job-0/q-1@1"}},
		{Tenant, "job-2", "q-1", []string{"acme/job-2/q-1@2"}},
		{"beta", "", "q-only", nil},
		{Tenant, "", "q-none", nil},
	} {
		recs, err := s.FindQuestionIDs(ctx, c.tenant, c.job, c.qid)
		if got := keys(recs); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("FindQuestionIDs(%q, %q, %q) = %q, %v; want %q", c.tenant, c.job, c.qid, got, err, c.want)
		}
	}
}

// testFindQuestionIDsCap: at most record.MaxQuestionIDJobs jobs come back.
func testFindQuestionIDsCap(t *testing.T, s Store) {
	var nqs []record.NewQuestion
	for i := range record.MaxQuestionIDJobs + 3 {
		nqs = append(nqs, NewQuestion(fmt.Sprint("job-", i), "q-1", 1))
	}
	AskAll(t, s, nqs...)
	recs, err := s.FindQuestionIDs(ctx, Tenant, "", "q-1")
	if err != nil || len(recs) != record.MaxQuestionIDJobs {
		t.Fatalf("FindQuestionIDs over %d jobs = %d records, %v; want %d", len(nqs), len(recs), err, record.MaxQuestionIDJobs)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[r.JobID] {
			t.Fatalf("job %s twice", r.JobID)
		}
		seen[r.JobID] = true
	}
}

// ids are the questions' ids, in the order given.
func ids(recs []record.Record) []int64 {
	var out []int64
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

// testListFiltersAndPages: List filters by tenant, job and state, in id
// order, a page at a time after AfterID.
func testListFiltersAndPages(t *testing.T, s Store) {
	beta := NewQuestion("job-1", "q-1", 1)
	beta.Tenant = "beta"
	res := AskAll(t, s, NewQuestion("job-1", "q-1", 1), NewQuestion("job-2", "q-1", 1), beta,
		NewQuestion("job-1", "q-2", 1), NewQuestion("job-3", "q-1", 1), NewQuestion("job-1", "q-3", 1))
	id := func(i int) int64 { return res[i].Record.ID }
	Settle(t, s, res[3].Record, T0.Add(time.Minute))
	for _, c := range []struct {
		name string
		f    record.ListFilter
		want []int64
	}{
		{"everything", record.ListFilter{}, []int64{id(0), id(1), id(2), id(3), id(4), id(5)}},
		{"tenant", record.ListFilter{Tenant: Tenant}, []int64{id(0), id(1), id(3), id(4), id(5)}},
		{"tenant pending", record.ListFilter{Tenant: Tenant, State: bridge.StatePending}, []int64{id(0), id(1), id(4), id(5)}},
		{"answered", record.ListFilter{State: bridge.StateAnswered}, []int64{id(3)}},
		{"job", record.ListFilter{Tenant: Tenant, JobID: "job-1"}, []int64{id(0), id(3), id(5)}},
		{"job in any tenant", record.ListFilter{JobID: "job-1"}, []int64{id(0), id(2), id(3), id(5)}},
		{"job pending", record.ListFilter{Tenant: Tenant, JobID: "job-1", State: bridge.StatePending}, []int64{id(0), id(5)}},
		{"page 1", record.ListFilter{Tenant: Tenant, State: bridge.StatePending, Limit: 3}, []int64{id(0), id(1), id(4)}},
		{"page 2", record.ListFilter{Tenant: Tenant, State: bridge.StatePending, Limit: 3, AfterID: id(4)}, []int64{id(5)}},
		{"after the last", record.ListFilter{AfterID: id(5)}, nil},
		{"no such state", record.ListFilter{State: bridge.StateCancelled}, nil},
	} {
		recs, err := s.List(ctx, c.f)
		if got := ids(recs); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("List %s (%+v) = %v, %v; want %v", c.name, c.f, got, err, c.want)
		}
	}
	recs, _ := s.List(ctx, record.ListFilter{State: bridge.StateAnswered})
	if len(recs) == 1 && (recs[0].By != "slack:alice" || string(recs[0].Answer) != `"yes"`) {
		t.Errorf("a listed answered question = %+v, want its answer", recs[0])
	}
}

// testListLimit: no limit (0 or below) is 50. (The SQLite store also reads
// a limit above 500 as 50; the runtime never asks for more than 200, so
// the suite leaves that alone.)
func testListLimit(t *testing.T, s Store) {
	var nqs []record.NewQuestion
	for i := range 51 {
		nqs = append(nqs, NewQuestion(fmt.Sprint("job-", i), "q-1", 1))
	}
	AskAll(t, s, nqs...)
	for _, limit := range []int{0, -1} {
		if recs, err := s.List(ctx, record.ListFilter{Limit: limit}); err != nil || len(recs) != 50 {
			t.Errorf("List with limit %d = %d records, %v; want 50", limit, len(recs), err)
		}
	}
	if recs, err := s.List(ctx, record.ListFilter{Limit: 500}); err != nil || len(recs) != 51 {
		t.Errorf("List with limit 500 = %d records, %v; want 51", len(recs), err)
	}
}

// testCountByState counts the questions in each state, of every tenant.
func testCountByState(t *testing.T, s Store) {
	if n, err := s.CountByState(ctx); err != nil || len(n) != 0 {
		t.Fatalf("counts of an empty store = %v, %v", n, err)
	}
	beta := NewQuestion("job-9", "q-1", 1)
	beta.Tenant = "beta"
	res := AskAll(t, s, NewQuestion("job-1", "q-1", 1), NewQuestion("job-1", "q-2", 1), NewQuestion("job-2", "q-1", 1), beta)
	Settle(t, s, res[0].Record, T0)
	AskAll(t, s, NewQuestion("job-1", "q-3", 2)) // supersedes q-2
	if _, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-2", At: T0}); err != nil {
		t.Fatal(err)
	}
	got, err := s.CountByState(ctx)
	want := map[string]int64{bridge.StatePending: 2, bridge.StateAnswered: 1, bridge.StateSuperseded: 1, bridge.StateCancelled: 1}
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("counts = %v, %v; want %v", got, err, want)
	}
}

// announce is a JobCancel.Outbox naming each question and the state it
// goes to.
func announce(r *record.Record) []record.Message {
	return []record.Message{{Subject: "ev", Data: []byte(r.QuestionID + " " + r.State)}}
}

// testCancelOneAndAll: a cancel of one question id ends its pending
// versions; a cancel of the job ends all its pending questions; each is
// announced with its new state.
func testCancelOneAndAll(t *testing.T, s Store) {
	res := AskAll(t, s, NewQuestion("job-1", "q-1", 1), NewQuestion("job-1", "q-2", 1), NewQuestion("job-1", "q-3", 1),
		NewQuestion("job-2", "q-1", 1))
	Settle(t, s, res[2].Record, T0)
	at := T0.Add(time.Minute)
	ended, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", QuestionID: "q-2", Reason: "not needed",
		By: "slack:UADMIN", Via: "slack", At: at, Outbox: announce})
	if err != nil || len(ended) != 1 || ended[0].ID != res[1].Record.ID || ended[0].State != bridge.StateCancelled {
		t.Fatalf("cancel q-2 = %+v, %v", ended, err)
	}
	got := Get(t, s, res[1].Record.ID)
	if got.State != bridge.StateCancelled || got.By != "slack:UADMIN" || got.Via != "slack" || got.Text != "not needed" || !got.SettledAt.Equal(at) {
		t.Fatalf("q-2 after its cancel = %+v", got)
	}
	if ended, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", QuestionID: "q-2", At: at}); err != nil || len(ended) != 0 {
		t.Fatalf("cancel q-2 again = %+v, %v; want nothing ended", ended, err)
	}
	ended, err = s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", At: at, Outbox: announce})
	if err != nil || len(ended) != 1 || ended[0].ID != res[0].Record.ID {
		t.Fatalf("cancel job-1 = %+v, %v; want q-1 (q-3 is answered)", ended, err)
	}
	if got := Get(t, s, res[3].Record.ID); got.State != bridge.StatePending {
		t.Fatalf("another job's question = %s", got.State)
	}
	if got := Get(t, s, res[2].Record.ID); got.State != bridge.StateAnswered {
		t.Fatalf("the answered question = %s", got.State)
	}
	if ended, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-none", At: at}); err != nil || len(ended) != 0 {
		t.Fatalf("cancel of an unknown job = %+v, %v", ended, err)
	}
	out := Unsent(t, s)
	if got, want := out[len(out)-2:], []string{"ev q-2 cancelled", "ev q-1 cancelled"}; !slices.Equal(got, want) {
		t.Fatalf("outbox ends %q, want %q", got, want)
	}
}

// testCancelBump: a version bump supersedes the pending questions below it
// and moves the job, so that a question below it is Stale; a question of
// the new version asked before the bump is kept.
func testCancelBump(t *testing.T, s Store) {
	res := AskAll(t, s, NewQuestion("job-1", "q-1", 1), NewQuestion("job-1", "q-2", 1))
	ended, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", NewVersion: 5, By: "slack:UADMIN", At: T0, Outbox: announce})
	if err != nil || len(ended) != 2 || ended[0].ID != res[0].Record.ID || ended[1].ID != res[1].Record.ID {
		t.Fatalf("bump = %+v, %v", ended, err)
	}
	for _, r := range ended {
		if r.State != bridge.StateSuperseded || r.Text != "superseded by task version 5" {
			t.Errorf("bumped %s = %+v", r.QuestionID, r)
		}
	}
	if res := AskAll(t, s, NewQuestion("job-1", "q-9", 4))[0]; res.Status != record.Stale || res.JobVersion != 5 {
		t.Fatalf("ask below the bumped version = %+v", res)
	}
	// A question of version 6, stored before the bump to 6 that it follows.
	v6 := Ask(t, s, NewQuestion("job-1", "q-6", 6))
	old := Ask(t, s, NewQuestion("job-1", "q-old", 6))
	ended, err = s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", NewVersion: 6, At: T0, Outbox: announce})
	if err != nil || len(ended) != 0 {
		t.Fatalf("bump to the version the job is at = %+v, %v; want nothing ended", ended, err)
	}
	for _, r := range []*record.Record{v6, old} {
		if got := Get(t, s, r.ID); got.State != bridge.StatePending {
			t.Fatalf("%s after a bump to its own version = %s", r.QuestionID, got.State)
		}
	}
	// A bump to an older version than the job's ends what is below it only.
	if ended, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", NewVersion: 3, At: T0}); err != nil || len(ended) != 0 {
		t.Fatalf("bump below the job's version = %+v, %v", ended, err)
	}
	if res := AskAll(t, s, NewQuestion("job-1", "q-7", 5))[0]; res.Status != record.Stale || res.JobVersion != 6 {
		t.Fatalf("the job's version after a lower bump = %+v, want 6", res)
	}
	want := []string{"ev q-1 superseded", "ev q-2 superseded"}
	if got := Unsent(t, s); !slices.Equal(got[2:4], want) {
		t.Fatalf("outbox = %q, want %q after the asks", got, want)
	}
}

// testCancelBumpUnknownJob: a bump of a job never seen makes it, so an
// older question that comes after is Stale.
func testCancelBumpUnknownJob(t *testing.T, s Store) {
	if ended, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", NewVersion: 3, At: T0}); err != nil || len(ended) != 0 {
		t.Fatalf("bump of an unknown job = %+v, %v", ended, err)
	}
	if res := AskAll(t, s, NewQuestion("job-1", "q-1", 2))[0]; res.Status != record.Stale || res.JobVersion != 3 {
		t.Fatalf("ask below the bump = %+v", res)
	}
	if res := AskAll(t, s, NewQuestion("job-1", "q-1", 3))[0]; res.Status != record.Asked {
		t.Fatalf("ask at the bump = %+v", res)
	}
}

// testCancelAppliedOnce: a cancel delivered again (its key seen) changes
// nothing and says ErrDuplicate: a redelivered bump must not end the
// questions asked at its version since.
func testCancelAppliedOnce(t *testing.T, s Store) {
	Ask(t, s, NewQuestion("job-1", "q-1", 1))
	bump := record.JobCancel{Tenant: Tenant, JobID: "job-1", NewVersion: 2, At: T0, Key: "cancel.7.1", Outbox: announce}
	if ended, err := s.Cancel(ctx, bump); err != nil || len(ended) != 1 {
		t.Fatalf("bump = %+v, %v", ended, err)
	}
	q2 := Ask(t, s, NewQuestion("job-1", "q-2", 2))
	before := Unsent(t, s)
	bump.NewVersion = 3 // even were it another version: the key was applied
	if ended, err := s.Cancel(ctx, bump); !errors.Is(err, record.ErrDuplicate) || len(ended) != 0 {
		t.Fatalf("the bump again = %+v, %v; want ErrDuplicate", ended, err)
	}
	if got := Get(t, s, q2.ID); got.State != bridge.StatePending {
		t.Fatalf("q-2 after the redelivered bump = %s", got.State)
	}
	if res := AskAll(t, s, NewQuestion("job-1", "q-3", 2))[0]; res.Status != record.Asked {
		t.Fatalf("the job moved on a redelivered bump: %+v", res)
	}
	if got := Unsent(t, s); len(got) != len(before)+1 {
		t.Fatalf("outbox grew by %d, want the one ask", len(got)-len(before))
	}
	// Another key still applies; a cancel without a key always does.
	if ended, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", At: T0, Key: "cancel.8.1"}); err != nil || len(ended) != 2 {
		t.Fatalf("a new cancel = %+v, %v", ended, err)
	}
	for range 2 {
		if _, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", At: T0}); err != nil {
			t.Fatalf("a cancel without a key: %v", err)
		}
	}
}

// testEnqueue: messages of their own go to the outbox in order, after
// what is there.
func testEnqueue(t *testing.T, s Store) {
	Ask(t, s, NewQuestion("job-1", "q-1", 1))
	if err := s.Enqueue(ctx, []record.Message{{Subject: "a", Data: []byte("1")}, {Subject: "b", Data: []byte("2")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Enqueue(ctx, []record.Message{{Subject: "c", Data: []byte("3")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Enqueue(ctx, nil); err != nil {
		t.Fatalf("enqueue nothing: %v", err)
	}
	want := []string{"ask.v1.event.acme.job-1 asked q-1", "a 1", "b 2", "c 3"}
	if got := Unsent(t, s); !slices.Equal(got, want) {
		t.Fatalf("outbox = %q, want %q", got, want)
	}
}
