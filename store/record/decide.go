package record

import (
	"context"
	"time"
)

// Lookup reads questions inside a DecideEach transaction.
type Lookup interface {
	// Prefetch reads the questions of keys (those with a task version) in
	// a few statements, for the FindAnswerable calls to come.
	Prefetch(ctx context.Context, keys []Key) error
	FindAnswerable(ctx context.Context, k Key) (*Answerable, error)
	Find(ctx context.Context, k Key) (*Record, error)
	// Proposal reads a proposal as the decisions before left it.
	Proposal(ctx context.Context, tenant, id string) (*Proposal, error)
}

// DecisionParts are what every kind of decision carries.
type DecisionParts struct {
	// AttemptID is the answer attempt the decision settles ("" for none).
	AttemptID string
	Question  int64
	At        time.Time
	Outbox    []Message
	Log       []LogEntry
}

// Parts reads d's common parts; false for a decision of no kind.
func (d Decision) Parts() (DecisionParts, bool) {
	switch {
	case d.Settle != nil:
		x := d.Settle
		return DecisionParts{x.AttemptID, x.Question, x.At, x.Outbox, x.Log}, true
	case d.Refuse != nil:
		x := d.Refuse
		return DecisionParts{x.AttemptID, x.Question, x.At, x.Outbox, x.Log}, true
	case d.Approve != nil:
		x := d.Approve
		return DecisionParts{x.AttemptID, x.Question, x.At, x.Outbox, x.Log}, true
	case d.Delegate != nil:
		x := d.Delegate
		return DecisionParts{x.AttemptID, x.Question, x.At, x.Outbox, x.Log}, true
	case d.Snooze != nil:
		x := d.Snooze
		return DecisionParts{x.AttemptID, x.Question, x.At, x.Outbox, x.Log}, true
	}
	return DecisionParts{}, false
}
