package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

func TestGateJobReadsTheJobsPendingQuestionsInOrder(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	if j, err := s.GateJob(ctx, "acme", "job-1"); err != nil || j.Known || len(j.Pending) != 0 {
		t.Fatalf("a job never seen: %+v, %v", j, err)
	}
	mustAsk(t, s, newQ("job-1", "q-1", 2))
	mustAsk(t, s, newQ("job-1", "q-2", 2))
	mustAsk(t, s, newQ("job-2", "q-3", 5))
	if _, err := s.Cancel(ctx, record.JobCancel{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", At: t0}); err != nil {
		t.Fatal(err)
	}
	mustAsk(t, s, newQ("job-1", "q-4", 2))
	j, err := s.GateJob(ctx, "acme", "job-1")
	if err != nil || !j.Known || j.Version != 2 || len(j.Pending) != 2 ||
		j.Pending[0].QuestionID != "q-2" || j.Pending[1].QuestionID != "q-4" || string(j.Pending[0].Body) != `{"question":"Which?"}` {
		t.Fatalf("job-1: %+v, %v", j, err)
	}
	if _, err := s.Cancel(ctx, record.JobCancel{Tenant: "acme", JobID: "job-1", At: t0}); err != nil {
		t.Fatal(err)
	}
	if j, err := s.GateJob(ctx, "acme", "job-1"); err != nil || !j.Known || j.Version != 2 || len(j.Pending) != 0 {
		t.Fatalf("job-1 with nothing pending: %+v, %v", j, err)
	}
}

func TestGateCommitTakesAProposalOnce(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	rec := mustAsk(t, s, newQ("job-1", "q-1", 1)).Record
	if err := s.SeedProposal(ctx, record.Proposal{Tenant: "acme", ID: "pr-1", JobID: "job-1", Question: rec.ID, Action: "refund",
		Arguments: json.RawMessage(`{"amount":240}`), IdempotencyKey: "ik-1", State: bridge.ProposalApproved, RecordedAt: t0}); err != nil {
		t.Fatal(err)
	}
	var took []bool
	var seen []string
	exec := func() record.GateWrite {
		return record.GateWrite{Execute: &record.GateExecute{Tenant: "acme", ProposalID: "pr-1", At: t0, Decide: func(p *record.Proposal) (bool, record.LogEntry) {
			take := p.State == bridge.ProposalApproved
			took, seen = append(took, take), append(seen, p.State)
			return take, record.LogEntry{Tenant: "acme", JobID: "job-1", Kind: record.LogGate, At: t0}
		}}}
	}
	plain := record.GateWrite{Log: record.LogEntry{Tenant: "acme", JobID: "job-1", Kind: record.LogGate, Body: json.RawMessage(`{"code":"allowed"}`), At: t0}}
	if err := s.GateCommit(ctx, []record.GateWrite{exec(), plain, exec()}); err != nil {
		t.Fatal(err)
	}
	if len(took) != 2 || !took[0] || took[1] || seen[1] != bridge.ProposalExecuted {
		t.Fatalf("two executes in one batch: took %v, saw %v", took, seen)
	}
	p, err := s.FindProposal(ctx, "acme", "pr-1")
	if err != nil || p.State != bridge.ProposalExecuted || !p.ExecutedAt.Equal(t0) || p.IdempotencyKey != "ik-1" || string(p.Arguments) != `{"amount":240}` {
		t.Fatalf("after: %+v, %v", p, err)
	}
	log, err := s.JobLog(ctx, "acme", "job-1")
	if err != nil || len(log) != 3 {
		t.Fatalf("job log: %+v, %v", log, err)
	}
	if p, err := s.FindProposal(ctx, "acme", "pr-none"); p != nil || !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("a proposal never recorded: %+v, %v", p, err)
	}
}
