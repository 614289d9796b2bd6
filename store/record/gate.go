package record

import (
	"fmt"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// GateJob is what the gate reads of a job (docs/design.md, "The gate"):
// its current task version and its pending questions, in the order they
// were asked.
type GateJob struct {
	// Known says the job has a row: the runtime has seen a question of it,
	// or a version bump.
	Known   bool
	Version int64
	Pending []GatePending
}

// GatePending is a pending question of a job: its id and its stored body,
// which the gate decodes for its tool lists.
type GatePending struct {
	QuestionID string
	Body       []byte
}

// GateWrite is one decision of the gate to write down: a log entry, or an
// execute, which decides in the write transaction and writes its own.
type GateWrite struct {
	Log     LogEntry
	Execute *GateExecute
}

// GateExecute takes an approved proposal for execution, once.
type GateExecute struct {
	Tenant     string
	ProposalID string
	At         time.Time
	// Decide is called inside the transaction with the proposal as it
	// stands (nil when the tenant has none of that id). When it returns
	// take, the proposal is marked executed at At (and p says so); the
	// entry it returns goes to the job log in the same transaction.
	Decide func(p *Proposal) (take bool, entry LogEntry)
}

// Takeable refuses, in the words every backend uses, to mark executed a
// proposal a GateExecute's Decide said to take when it is not approved
// (p nil: there is none).
func Takeable(p *Proposal) error {
	if p != nil && p.State == bridge.ProposalApproved {
		return nil
	}
	state := "missing"
	if p != nil {
		state = p.State
	}
	return fmt.Errorf(refusalNotApproved, state)
}
