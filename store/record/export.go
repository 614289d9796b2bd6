package record

import (
	"context"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// ExportedQuestion is one question with everything recorded about it.
type ExportedQuestion struct {
	Record
	// Steps are its ladder steps not yet taken, snooze steps included.
	Steps      []Step
	Staleness  int
	Deliveries []DeliveryRow
	Audit      []bridge.AuditEntry
	Snoozes    []ExportedSnooze
	// ProposalID names the approval's proposal, if it has one.
	ProposalID string
}

// ExportedSnooze is one person's snoozed reminder of a question.
type ExportedSnooze struct {
	Identity string
	Until    time.Time
	Step     int
}

// ExportedJob is a job's current task version.
type ExportedJob struct {
	Tenant      string
	JobID       string
	TaskVersion int64
	UpdatedAt   time.Time
}

// ExportedAttempt is an attempt id already decided.
type ExportedAttempt struct {
	ID       string
	Question int64
	At       time.Time
}

// Importer receives a record, part by part (Export). Questions come before
// the proposals and log entries that name them, in id order.
type Importer interface {
	Job(ctx context.Context, j ExportedJob) error
	Question(ctx context.Context, q ExportedQuestion) error
	Proposal(ctx context.Context, p Proposal) error
	Log(ctx context.Context, e LogEntry) error
	Attempt(ctx context.Context, a ExportedAttempt) error
	// Outbox is a row not yet published, with when it was written.
	Outbox(ctx context.Context, m Message, createdAt time.Time) error
	Meta(ctx context.Context, key, value string) error
}
