package record

import (
	"time"
)

// ClarifyQuestion is what the clarification measures read of a question.
type ClarifyQuestion struct {
	Tenant       string
	JobID        string
	QuestionID   string
	Agent        string
	MissingField string
	State        string
	// TimedOut: it ended on its timeout (timed_out, or failed with
	// on_timeout: fail).
	TimedOut  bool
	AskedAt   time.Time
	SettledAt time.Time
}

// GateDecision is one gate decision of the job log, with the agent of the
// job's latest question (the gate request names none).
type GateDecision struct {
	Tenant string
	JobID  string
	Agent  string
	Code   string
	// Count is how many refusals of Code the job had in the window.
	Count int64
}
