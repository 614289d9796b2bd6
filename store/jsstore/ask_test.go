package jsstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

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

func mustAsk(t testing.TB, s *Store, nq record.NewQuestion) *record.AskResult {
	t.Helper()
	res, err := s.AskMany(context.Background(), []record.NewQuestion{nq})
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

// outboxOf reads the outbox rows in the order they were written.
func outboxOf(t testing.TB, s *Store) []string {
	t.Helper()
	entries, err := s.list(context.Background(), "out.>")
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.Rev, b.Rev) })
	var out []string
	for _, e := range entries {
		var o outboxDoc
		if err := jsonDecode(e.Value, &o); err != nil {
			t.Fatal(err)
		}
		out = append(out, o.Subject+" "+string(o.Data))
	}
	return out
}

// dueOf reads every due key: question id → its next step.
func dueOf(t testing.TB, s *Store) map[int64]dueDoc {
	t.Helper()
	entries, err := s.list(context.Background(), "due.>")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]dueDoc{}
	for _, e := range entries {
		var d dueDoc
		if err := jsonDecode(e.Value, &d); err != nil {
			t.Fatal(err)
		}
		out[d.Question] = d
	}
	return out
}

func TestAskDuplicateStaleAndSupersede(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	first := mustAsk(t, s, newQ("job-1", "q-1", 2))
	if first.Status != record.Asked || first.Record == nil || first.JobVersion != 2 {
		t.Fatalf("first ask = %+v", first)
	}
	if res := mustAsk(t, s, newQ("job-1", "q-1", 2)); res.Status != record.Duplicate {
		t.Fatalf("same ask again = %+v", res)
	}
	if res := mustAsk(t, s, newQ("job-1", "q-old", 1)); res.Status != record.Stale || res.JobVersion != 2 {
		t.Fatalf("older version = %+v", res)
	}
	got, err := s.Get(ctx, first.Record.ID)
	if err != nil || fmt.Sprint(*got) != fmt.Sprint(*first.Record) || !got.AskedAt.Equal(t0) {
		t.Fatalf("get = %+v, %v; want %+v", got, err, first.Record)
	}
	if due := dueOf(t, s); len(due) != 1 || due[first.Record.ID].Index != 0 || !due[first.Record.ID].Due.Equal(t0.Add(time.Hour)) {
		t.Fatalf("due keys = %+v, want q-1's first step", due)
	}
	mustAsk(t, s, newQ("job-1", "q-2", 2))
	res := mustAsk(t, s, newQ("job-1", "q-3", 3))
	if res.Status != record.Asked || len(res.Superseded) != 2 || res.Superseded[0].State != bridge.StateSuperseded {
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
	if got := outboxOf(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("outbox = %q", got)
	}
	if due := dueOf(t, s); len(due) != 1 || due[res.Record.ID].Target != bridge.TargetAnswerers {
		t.Fatalf("due keys = %+v, want q-3's only", due)
	}
	if _, err := s.Get(ctx, 999); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("get of no question: %v", err)
	}
	if _, err := s.Find(ctx, record.Key{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 9}); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("find of no version: %v", err)
	}
	checkIndexes(t, s)
}

func jsonDecode(data []byte, v any) error { return json.Unmarshal(data, v) }

// approvalQ is an approval of job asking for proposal id.
func approvalQ(job, qid string, version int64, id string) record.NewQuestion {
	nq := newQ(job, qid, version)
	nq.Kind = bridge.KindApproval
	nq.Proposal = &record.NewProposal{ID: id, Action: "refund", Arguments: []byte(`{"order":1}`), IdempotencyKey: "ik_" + id,
		ExpiresAt: t0.Add(time.Hour)}
	return nq
}

// proposalOf reads proposal id's document.
func proposalOf(t *testing.T, s *Store, id string) (record.Proposal, uint64) {
	t.Helper()
	var p record.Proposal
	rev, ok, err := s.getJSON(context.Background(), keyProposal("acme", id), &p)
	if err != nil || !ok {
		t.Fatalf("proposal %s: %v, %v", id, ok, err)
	}
	return p, rev
}

// TestProposalIntake: an approval records its proposal with it; a proposal
// is asked for by one waiting question of its own job, a newer version
// takes it over with its approvals reset, and one decided is never asked
// for again.
func TestProposalIntake(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	first := mustAsk(t, s, approvalQ("job-1", "q-1", 1, "pr_1"))
	p, _ := proposalOf(t, s, "pr_1")
	want := record.Proposal{Tenant: "acme", ID: "pr_1", JobID: "job-1", Question: first.Record.ID, Action: "refund",
		Arguments: []byte(`{"order":1}`), ExpiresAt: t0.Add(time.Hour), IdempotencyKey: "ik_pr_1", State: bridge.ProposalPending,
		Approvals: []bridge.Approval{}, RecordedAt: t0}
	if fmt.Sprint(p) != fmt.Sprint(want) {
		t.Fatalf("proposal = %+v\nwant %+v", p, want)
	}
	if res := mustAsk(t, s, approvalQ("job-1", "q-1", 1, "pr_1")); res.Status != record.Duplicate {
		t.Fatalf("the same question again: %v %q", res.Status, res.Problem)
	}
	for _, c := range []struct {
		nq   record.NewQuestion
		want string
	}{
		{approvalQ("job-1", "q-2", 1, "pr_1"), "proposal.id: pr_1 is already asked for by question q-1, which waits"},
		{approvalQ("job-2", "q-1", 1, "pr_1"), "proposal.id: pr_1 is a proposal of job job-1; a job proposes under ids of its own"},
	} {
		res := mustAsk(t, s, c.nq)
		if res.Status != record.Refused || res.Problem != c.want {
			t.Fatalf("%s: %v %q", c.nq.Key, res.Status, res.Problem)
		}
		if _, err := s.Find(ctx, c.nq.Key); !errors.Is(err, record.ErrNotFound) {
			t.Fatalf("%s: a refused question was recorded: %v", c.nq.Key, err)
		}
	}
	// Approvals given to version 1 do not count for version 2.
	p.Approvals = []bridge.Approval{{By: "slack:U1", At: t0}}
	_, rev := proposalOf(t, s, "pr_1")
	tx := &txn{}
	if err := tx.putJSON(keyProposal("acme", "pr_1"), rev, p); err != nil || s.commit(ctx, tx) != nil {
		t.Fatal("record an approval")
	}
	nq := approvalQ("job-1", "q-1", 2, "pr_1")
	nq.Proposal.Action, nq.AskedAt = "refund-more", t0.Add(time.Minute)
	v2 := mustAsk(t, s, nq)
	p, rev = proposalOf(t, s, "pr_1")
	if v2.Status != record.Asked || len(v2.Superseded) != 1 || p.Question != v2.Record.ID || p.Action != "refund-more" ||
		len(p.Approvals) != 0 || p.IdempotencyKey != "ik_pr_1" || !p.RecordedAt.Equal(nq.AskedAt) {
		t.Fatalf("after version 2: %+v, proposal %+v", v2, p)
	}
	p.State = bridge.ProposalApproved
	tx = &txn{}
	if err := tx.putJSON(keyProposal("acme", "pr_1"), rev, p); err != nil || s.commit(ctx, tx) != nil {
		t.Fatal("decide the proposal")
	}
	res := mustAsk(t, s, approvalQ("job-1", "q-1", 3, "pr_1"))
	if res.Status != record.Refused || res.Problem != "proposal.id: pr_1 was already approved; a proposal is decided once: propose again under a new id" {
		t.Fatalf("decided id asked again: %v %q", res.Status, res.Problem)
	}
	if r, _ := s.Get(ctx, v2.Record.ID); r.State != bridge.StatePending {
		t.Fatalf("a refused newer version superseded version 2: %+v", r)
	}
	checkIndexes(t, s)
}

// TestAskAfterAStaleRead: a batch whose keys were read before another
// replica recorded the same question and raised the job's version: its
// commit loses the compare-and-set, and read again each question is what
// the record says (a duplicate, a stale version) with nothing written.
func TestAskAfterAStaleRead(t *testing.T) {
	t.Parallel()
	open := replicaServer(t)
	a, b := open(), open()
	ctx := context.Background()
	nqs := []record.NewQuestion{newQ("job-1", "q-1", 1), newQ("job-2", "q-1", 1)}
	pre, err := a.prefetch(ctx, askReads(nqs))
	if err != nil {
		t.Fatal(err)
	}
	mustAsk(t, b, newQ("job-1", "q-1", 1))
	mustAsk(t, b, newQ("job-2", "q-2", 2))
	first, err := a.nextIDs(ctx, "question", len(nqs))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.askAs(ctx, nqs, first, pre)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Status != record.Duplicate || res[1].Status != record.Stale {
		t.Fatalf("statuses %v, %v; want a duplicate and a stale version", res[0].Status, res[1].Status)
	}
	if _, err := a.Get(ctx, first); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("question %d was written: %v", first, err)
	}
	checkIndexes(t, a)
}
