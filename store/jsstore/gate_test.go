package jsstore

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
	"github.com/askbridge/askbridge/store/storetest"
)

// replicas opens n stores on one server, each on a connection of its own,
// as n askbridge replicas share a record.
func replicas(t *testing.T, n int) []*Store {
	t.Helper()
	first := openTest(t)
	out := []*Store{first}
	for range n - 1 {
		nc, err := nats.Connect(first.nc.ConnectedUrl())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		s, err := Open(context.Background(), nc, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out = append(out, s)
	}
	return out
}

func TestExecutesOnThreeReplicasTakeTheProposalOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rs := replicas(t, 3)
	q := storetest.Ask(t, rs[0], storetest.NewApproval("job-1", "q-1", 1, "pr-1"))
	if err := rs[1].Settle(ctx, record.Settlement{Question: q.ID, State: bridge.StateAnswered, Action: bridge.ActionAnswer, At: storetest.T0,
		Proposal: &record.ProposalDecision{Tenant: storetest.Tenant, ID: "pr-1", State: bridge.ProposalApproved}}); err != nil {
		t.Fatal(err)
	}
	stores := []storetest.Store{rs[0], rs[1], rs[2]}
	if taken := storetest.ExecuteAtOnce(t, stores, 20, "job-1", "pr-1"); taken != 1 {
		t.Fatalf("%d of 20 executes on 3 replicas took the proposal, want exactly 1", taken)
	}
	log, err := rs[2].JobLog(ctx, storetest.Tenant, "job-1")
	if err != nil || len(log) != 20 {
		t.Fatalf("job log: %d entries, %v; want the 20 decisions", len(log), err)
	}
}

// TestGateDecisionsGoOnTheirOwn: gate decisions carry the retention as a
// key TTL, so the bucket deletes them itself; the trail people follow has
// none. PruneGateLog has nothing left to do.
func TestGateDecisionsGoOnTheirOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t)
	at := storetest.T0
	entries := []record.LogEntry{
		{Tenant: "acme", JobID: "job-1", Kind: record.LogGate, Body: json.RawMessage(`{"code":"allowed"}`), At: at},
		{Tenant: "acme", JobID: "job-1", Kind: record.LogGate, Body: json.RawMessage(`{"code":"blocked_by_question"}`), At: at},
		{Tenant: "acme", JobID: "job-1", Kind: record.LogApproval, Body: json.RawMessage(`{"code":"x"}`), At: at},
	}
	if err := s.AppendLog(ctx, entries); err != nil {
		t.Fatal(err)
	}
	log, err := s.JobLog(ctx, "acme", "job-1")
	if err != nil || len(log) != 3 {
		t.Fatalf("job log: %+v, %v", log, err)
	}
	for i, e := range log {
		m, err := s.stream.GetMsg(ctx, uint64(e.ID))
		if err != nil {
			t.Fatal(err)
		}
		ttl := m.Header.Get(jetstream.MsgTTLHeader)
		want := (30 * 24 * time.Hour).String()
		if e.Kind != record.LogGate {
			want = ""
		}
		if ttl != want {
			t.Errorf("entry %d (%s) has TTL %q, want %q", i, e.Kind, ttl, want)
		}
	}
	if n, err := s.PruneGateLog(ctx, at.Add(time.Hour)); n != 0 || err != nil {
		t.Fatalf("PruneGateLog = %d, %v", n, err)
	}
}

// TestGateCommitSplitsWhatOneBatchCannotTake: a batch of more keys than
// one atomic batch takes is written whole, its executes deciding in order.
func TestGateCommitSplitsWhatOneBatchCannotTake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t)
	const proposals = 510 // 1,275 keys: two batches
	batch := make([]record.GateWrite, 0, proposals+300)
	takes := 0
	seed := &txn{}
	for i := range proposals {
		id := "pr-" + id(int64(i))
		if err := seed.putJSON(keyProposal("acme", id), 0, record.Proposal{Tenant: "acme", ID: id, JobID: "job-1",
			Action: "refund", State: bridge.ProposalApproved}); err != nil {
			t.Fatal(err)
		}
		batch = append(batch, record.GateWrite{Execute: &record.GateExecute{Tenant: "acme", ProposalID: id, At: storetest.T0,
			Decide: func(p *record.Proposal) (bool, record.LogEntry) {
				take := p.State == bridge.ProposalApproved
				if take {
					takes++
				}
				return take, record.LogEntry{Tenant: "acme", JobID: "job-1", Kind: record.LogGate, At: storetest.T0}
			}}})
		if i%2 == 0 {
			batch = append(batch, record.GateWrite{Log: record.LogEntry{Tenant: "acme", JobID: "job-1", Kind: record.LogGate, At: storetest.T0}})
		}
	}
	if err := s.commit(ctx, seed); err != nil {
		t.Fatal(err)
	}
	if err := s.GateCommit(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if takes != proposals {
		t.Fatalf("%d takes of %d approved proposals", takes, proposals)
	}
	log, err := s.JobLog(ctx, "acme", "job-1")
	if err != nil || len(log) != len(batch) {
		t.Fatalf("job log: %d entries, %v; want %d", len(log), err, len(batch))
	}
	for _, i := range []int{0, proposals - 1} {
		if p, err := s.FindProposal(ctx, "acme", "pr-"+id(int64(i))); err != nil || p.State != bridge.ProposalExecuted {
			t.Fatalf("proposal %d: %+v, %v", i, p, err)
		}
	}
}

// TestGateJobReadsManyPendingQuestions: a job with more pending questions
// than one multi read answers (1,024) still has every one read, in order.
func TestGateJobReadsManyPendingQuestions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t)
	const n = 1100
	t0 := &txn{}
	if err := t0.putJSON(keyJob("acme", "job-1"), 0, jobDoc{TaskVersion: 3}); err != nil {
		t.Fatal(err)
	}
	if err := s.commit(ctx, t0); err != nil {
		t.Fatal(err)
	}
	for lo := int64(1); lo <= n; lo += 400 {
		tx := &txn{}
		for q := lo; q < min(lo+400, n+1); q++ {
			d := &questionDoc{Record: record.Record{ID: q, Key: record.Key{Tenant: "acme", JobID: "job-1", QuestionID: "q-" + id(q), TaskVersion: 3},
				State: bridge.StatePending, Body: []byte(`{"question":"Which?"}`)}}
			if err := tx.putQuestion(d, 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.commit(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	j, err := s.GateJob(ctx, "acme", "job-1")
	if err != nil || !j.Known || j.Version != 3 || len(j.Pending) != n {
		t.Fatalf("GateJob: known %v, version %d, %d pending, %v; want %d pending", j.Known, j.Version, len(j.Pending), err, n)
	}
	for i, p := range j.Pending {
		if p.QuestionID != "q-"+id(int64(i+1)) {
			t.Fatalf("pending %d is %s: not in the order asked", i, p.QuestionID)
		}
	}
}
