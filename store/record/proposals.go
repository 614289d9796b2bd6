package record

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// Proposal is a proposals row: an approval's proposal, decided once, ever,
// per tenant (docs/contract.md, "Approvals are proposals").
type Proposal struct {
	Tenant string
	ID     string
	JobID  string
	// Question is the row of the approval asking for it now.
	Question       int64
	Action         string
	Arguments      json.RawMessage
	ExpiresAt      time.Time
	IdempotencyKey string
	State          string
	Approvals      []bridge.Approval
	DecidedAt      time.Time
	ExecutedAt     time.Time
	Result         string
	Detail         string
	ReportedAt     time.Time
	RecordedAt     time.Time
}

// NewProposal is the proposal an approval records with its question.
type NewProposal struct {
	ID             string
	Action         string
	Arguments      json.RawMessage
	ExpiresAt      time.Time
	IdempotencyKey string
}

// ProposalDecision is what settling an approval does to its proposal:
// approved, denied or expired, with the approvals that decided it (nil
// keeps those recorded).
type ProposalDecision struct {
	Tenant    string
	ID        string
	State     string
	Approvals []bridge.Approval
}

// ApprovalRecord is an approval that does not yet decide its proposal (one
// of several it needs): recorded with the attempt's dedupe key, its log
// entry and the approval_recorded event; the question keeps waiting.
type ApprovalRecord struct {
	AttemptID  string
	Question   int64
	Tenant     string
	ProposalID string
	// Approvals are all of the proposal's approvals, this one included.
	Approvals []bridge.Approval
	At        time.Time
	Outbox    []Message
	Log       []LogEntry
}

// ProposalAsker is the question that last asked for a proposal: its id,
// version and state.
type ProposalAsker struct {
	QuestionID  string
	TaskVersion int64
	State       string
}

// SupersededText is what a question superseded by a later task version of
// its job says it ended with, in every backend.
func SupersededText(version int64) string {
	return fmt.Sprintf("superseded by task version %d", version)
}

// ProposalProblem says why nq may not ask for proposal p, recorded before
// and last asked for by asker, or "" when it may: a proposal decided
// before is never asked again, nor one of another job, nor one another
// question still waits on. The question nq replaces (an older version of
// the job, superseded in the same transaction) lets go of it. Every
// backend refuses in these words (the rule lives here, once).
func ProposalProblem(nq *NewQuestion, p *Proposal, asker ProposalAsker) string {
	switch {
	case p.State != bridge.ProposalPending:
		return bridge.DecidedProposalText(p.ID, p.State)
	case p.JobID != nq.JobID:
		return fmt.Sprintf(refusalOtherJobsProposal, p.ID, p.JobID)
	case asker.State == bridge.StatePending && asker.TaskVersion >= nq.TaskVersion:
		return fmt.Sprintf(refusalProposalAskedFor, p.ID, asker.QuestionID)
	}
	return ""
}
