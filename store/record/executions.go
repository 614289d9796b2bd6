package record

import (
	"errors"
	"time"
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
