package record

import (
	"errors"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// ExecutionReport is an agent's report of an executed proposal, to record
// once (docs/contract.md, "Executions").
type ExecutionReport struct {
	Tenant     string
	JobID      string
	ProposalID string
	Result     string
	Detail     string
	At         time.Time
	// Announce builds the messages announcing the execution, from the
	// proposal as recorded and the question that asked for it.
	Announce func(p *Proposal, q *Answerable) []Message
	// Log is written to the job's trail with it.
	Log []LogEntry
}

// Execution outcomes.
var (
	// ErrProposalNotApproved: the proposal was never approved (pending,
	// denied or expired), so nothing of it can have been executed.
	ErrProposalNotApproved = errors.New("store: proposal not approved")
)

// Apply records the report on p, the proposal it names as the record holds
// it, and is how every backend decides a report: ErrNotFound when p is
// another job's (not this reporter's to learn of), ErrDuplicate when a
// report came before, ErrProposalNotApproved when p was never approved;
// otherwise p is executed (or execution_failed) with the report's result,
// and executed at the report's time when no gate execute set it.
func (e *ExecutionReport) Apply(p *Proposal) error {
	switch {
	case p.JobID != e.JobID:
		return ErrNotFound
	case !p.ReportedAt.IsZero():
		return ErrDuplicate
	case p.State != bridge.ProposalApproved && p.State != bridge.ProposalExecuted:
		return ErrProposalNotApproved
	}
	p.State = bridge.ProposalExecuted
	if e.Result == bridge.ResultFailed {
		p.State = bridge.ProposalExecutionFailed
	}
	if p.ExecutedAt.IsZero() {
		p.ExecutedAt = e.At
	}
	p.Result, p.Detail, p.ReportedAt = e.Result, e.Detail, e.At
	return nil
}
