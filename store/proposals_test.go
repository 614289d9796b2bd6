package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// approvalQ is an approval of job asking for proposal id.
func approvalQ(job, qid string, version int64, id string) record.NewQuestion {
	nq := newQ(job, qid, version)
	nq.Kind = bridge.KindApproval
	nq.Proposal = &record.NewProposal{ID: id, Action: "refund", Arguments: []byte(`{"order":1}`), IdempotencyKey: "ik_" + id}
	return nq
}

func TestProposalIntake(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	first := mustAsk(t, s, approvalQ("job-1", "q-1", 1, "pr_1"))
	if first.Status != record.Asked {
		t.Fatalf("status %v", first.Status)
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
	// A newer version takes the proposal over, with its key.
	v2 := mustAsk(t, s, approvalQ("job-1", "q-1", 2, "pr_1"))
	p, err := s.FindProposal(ctx, "acme", "pr_1")
	if err != nil || v2.Status != record.Asked || p.Question != v2.Record.ID || p.IdempotencyKey != "ik_pr_1" || string(p.Arguments) != `{"order":1}` {
		t.Fatalf("after version 2: %v %+v %v", v2.Status, p, err)
	}
	errs, err := s.Decide(ctx, []record.Decision{{Settle: &record.Settlement{Question: v2.Record.ID, State: bridge.StateAnswered, At: t0, AttemptID: "a1",
		Proposal: &record.ProposalDecision{Tenant: "acme", ID: "pr_1", State: bridge.ProposalApproved, Approvals: []bridge.Approval{{By: "slack:U1", At: t0}}}}}})
	if err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	if p, _ := s.FindProposal(ctx, "acme", "pr_1"); p.State != bridge.ProposalApproved || len(p.Approvals) != 1 || !p.DecidedAt.Equal(t0) {
		t.Fatalf("decided: %+v", p)
	}
	res := mustAsk(t, s, approvalQ("job-3", "q-1", 1, "pr_1"))
	if res.Status != record.Refused || res.Problem != "proposal.id: pr_1 was already approved; a proposal is decided once: propose again under a new id" {
		t.Fatalf("decided id asked again: %v %q", res.Status, res.Problem)
	}
}

func TestApprovalRecordLosesOnAnEndedQuestion(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	res := mustAsk(t, s, approvalQ("job-1", "q-1", 1, "pr_1"))
	one := []bridge.Approval{{By: "slack:U1", At: t0}}
	errs, err := s.Decide(ctx, []record.Decision{
		{Approve: &record.ApprovalRecord{AttemptID: "a1", Question: res.Record.ID, Tenant: "acme", ProposalID: "pr_1", Approvals: one, At: t0}},
		{Settle: &record.Settlement{Question: res.Record.ID, State: bridge.StateTimedOut, At: t0}},
		{Approve: &record.ApprovalRecord{AttemptID: "a2", Question: res.Record.ID, Tenant: "acme", ProposalID: "pr_1",
			Approvals: append(one, bridge.Approval{By: "slack:U2", At: t0}), At: t0}},
	})
	if err != nil || errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], record.ErrNotPending) {
		t.Fatalf("errs %v, %v", errs, err)
	}
	p, _ := s.FindProposal(ctx, "acme", "pr_1")
	if p.State != bridge.ProposalPending || len(p.Approvals) != 1 {
		t.Fatalf("proposal: %+v", p)
	}
	if seen, _ := s.SeenAttempt(ctx, "a2"); seen {
		t.Fatal("the losing approval's attempt id was kept")
	}
}

func TestRecordExecution(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	res := mustAsk(t, s, approvalQ("job-1", "q-1", 1, "pr_1"))
	report := func(job, id string) (*record.Proposal, error) {
		return s.RecordExecution(ctx, record.ExecutionReport{Tenant: "acme", JobID: job, ProposalID: id, Result: bridge.ResultSucceeded, Detail: "done", At: t0,
			Announce: func(p *record.Proposal, q *record.Answerable) []record.Message {
				return []record.Message{{Subject: "ask.v1.event.acme.job-1", Data: []byte("executed " + q.QuestionID)}}
			}})
	}
	if _, err := report("job-1", "pr_none"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	if p, err := report("job-1", "pr_1"); !errors.Is(err, record.ErrProposalNotApproved) || p.State != bridge.ProposalPending {
		t.Fatalf("pending: %+v %v", p, err)
	}
	if _, err := s.Decide(ctx, []record.Decision{{Settle: &record.Settlement{Question: res.Record.ID, State: bridge.StateAnswered, At: t0,
		Proposal: &record.ProposalDecision{Tenant: "acme", ID: "pr_1", State: bridge.ProposalApproved}}}}); err != nil {
		t.Fatal(err)
	}
	if p, err := report("job-2", "pr_1"); !errors.Is(err, record.ErrNotFound) || p != nil {
		t.Fatalf("another job's: %+v %v", p, err)
	}
	p, err := report("job-1", "pr_1")
	if err != nil || p.State != bridge.ProposalExecuted || !p.ExecutedAt.Equal(t0) || p.Result != bridge.ResultSucceeded {
		t.Fatalf("reported: %+v %v", p, err)
	}
	if p, err := report("job-1", "pr_1"); !errors.Is(err, record.ErrDuplicate) || p.Detail != "done" {
		t.Fatalf("again: %+v %v", p, err)
	}
	// The executed event, once: repeats and refused reports write none.
	if got := strings.Join(unsentSubjects(t, s), "; "); got != "ask.v1.event.acme.job-1 asked; ask.v1.event.acme.job-1 executed q-1" {
		t.Fatalf("outbox: %s", got)
	}
}
