package record

import (
	"time"
)

// JobAuditEntry is one transition of one of a job's questions.
type JobAuditEntry struct {
	ID          int64
	Question    int64
	QuestionID  string
	TaskVersion int64
	From        string
	To          string
	By          string
	Via         string
	Reason      string
	At          time.Time
}
