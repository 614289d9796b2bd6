package record

import (
	"fmt"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// Key names one question at one task version. TaskVersion 0 in a lookup
// means the latest version of that question id.
type Key struct {
	Tenant      string
	JobID       string
	QuestionID  string
	TaskVersion int64
}

func (k Key) String() string {
	return fmt.Sprintf("%s/%s/%s@%d", k.Tenant, k.JobID, k.QuestionID, k.TaskVersion)
}

// Record is a stored question and, once settled, how it ended.
type Record struct {
	ID int64
	Key
	Kind       string
	Body       []byte
	State      string
	AskedAt    time.Time
	Deadline   time.Time
	Action     string
	AnswerRaw  []byte
	Answer     []byte
	AnswerText string
	Comment    string
	By         string
	ByName     string
	Via        string
	Text       string
	SettledAt  time.Time
}

// Message is an outbox entry: published later on Subject with Nats-Msg-Id
// "ob-<row id>".
type Message struct {
	Subject string
	Data    []byte
}

// Step is a ladder step or the timeout, due at Due.
type Step struct {
	Index  int
	Target string
	Due    time.Time
}

// StepTimeout is the target of the last step: the question's timeout.
const StepTimeout = "timeout"

// NewQuestion is a question to record with its ladder and the messages that
// announce it.
type NewQuestion struct {
	Key
	Kind     string
	Body     []byte
	AskedAt  time.Time
	Deadline time.Time
	Steps    []Step
	Outbox   []Message
	// Supersede builds the messages announcing that an older pending
	// question of the job was superseded by this one's task version.
	Supersede func(old *Record) []Message
	// Proposal, on an approval, is recorded with it (proposals).
	Proposal *NewProposal
}

// AskStatus is what Ask did.
type AskStatus int

// Ask outcomes.
const (
	Asked     AskStatus = iota // recorded
	Duplicate                  // the same question and version was recorded before
	Stale                      // the job is already at a newer task version
	Refused                    // its proposal may not be asked for (AskResult.Problem)
)

// AskResult reports what Ask did.
type AskResult struct {
	Status     AskStatus
	JobVersion int64
	Record     *Record
	Superseded []Record
	// Problem says, on Refused, why, in the asker's words.
	Problem string
}

// Settlement is how a pending question ends by someone's answer or decline,
// or by its timeout.
type Settlement struct {
	Question   int64
	State      string
	Action     string
	AnswerRaw  []byte
	Answer     []byte
	AnswerText string
	Comment    string
	By         string
	ByName     string
	Via        string
	Text       string
	Reason     string
	At         time.Time
	// AttemptID, when set, is recorded so the same attempt is never decided twice.
	AttemptID string
	Outbox    []Message
	// Log is written to the job's trail with the settlement.
	Log []LogEntry
	// Proposal, on an approval, is what the settlement decides of it.
	Proposal *ProposalDecision
}

// Refusal records a refused attempt with the messages telling the answerer.
type Refusal struct {
	AttemptID string
	Question  int64
	At        time.Time
	Outbox    []Message
	// Log is written to the job's trail with the refusal.
	Log []LogEntry
}

// Decision is one decided attempt: a settlement, a refusal, or one
// approval of several a proposal needs.
type Decision struct {
	Settle   *Settlement
	Refuse   *Refusal
	Approve  *ApprovalRecord
	Delegate *Delegation
	Snooze   *Snooze
}

// JobCancel cancels a job's pending questions, or bumps its task version.
type JobCancel struct {
	Tenant     string
	JobID      string
	QuestionID string
	// NewVersion, when set, bumps the job to it (if it is not there yet)
	// and supersedes every pending question of an older version; without
	// it pending questions are cancelled.
	NewVersion int64
	Reason     string
	By         string
	Via        string
	At         time.Time
	// Key names the cancel message; a cancel whose key was applied before
	// changes nothing and returns ErrDuplicate. A redelivered version bump
	// would otherwise find its version current and cancel the questions
	// asked at it since.
	Key string
	// Outbox builds the messages announcing each question's new state.
	Outbox func(r *Record) []Message
}

// Answerable is a question as deciding an answer needs it, read at once:
// the record, its job's current task version and the messages showing it.
type Answerable struct {
	*Record
	JobVersion int64
	Messages   []bridge.MessageRef
}

// ListFilter selects questions for a list page, ordered by row id.
type ListFilter struct {
	Tenant string
	JobID  string
	// State is one state, or empty for every state.
	State   string
	AfterID int64
	Limit   int
}

// MaxQuestionIDJobs bounds the jobs FindQuestionIDs returns.
const MaxQuestionIDJobs = 50
