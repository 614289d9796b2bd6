package record

import (
	"encoding/json"
	"time"
)

// Kinds of job log entries: what the job's trail records beside its
// questions' transitions (the audit table).
const (
	LogGate      = "gate"
	LogRefused   = "refused"
	LogApproval  = "approval"
	LogExecute   = "execute"
	LogExecuted  = "executed"
	LogNotice    = "notice"
	LogDelegated = "delegated"
	LogSnoozed   = "snoozed"
)

// LogEntry is one entry of a job's trail. Body is JSON whose shape Kind
// says; the store keeps it as given.
type LogEntry struct {
	ID         int64
	Tenant     string
	JobID      string
	Kind       string
	QuestionID string
	Body       json.RawMessage
	At         time.Time
}
