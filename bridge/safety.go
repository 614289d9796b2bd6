package bridge

import (
	"encoding/json"
	"time"
)

// The safety contract's subjects (docs/safety.md). The full subject
// appends ".<tenant>.<job>".
const (
	// PrefixGate is request/reply (core NATS): may the job call a tool now?
	PrefixGate = "ask.v1.gate"
	// PrefixExecuted carries the agent's report of an executed proposal.
	PrefixExecuted = "ask.v1.executed"
	// PrefixNotice carries a typed failure an agent met.
	PrefixNotice = "ask.v1.notice"
)

// APITrace answers a job's timeline from the record.
const APITrace = PrefixAPI + ".trace"

// Streams of the safety contract's durable subjects.
const (
	StreamExecuted = "ASK_EXECUTED"
	StreamNotices  = "ASK_NOTICES"
)

// GateSubject is where an agent asks the gate before a side effect.
func GateSubject(tenant, job string) string { return subject(PrefixGate, tenant, job) }

// ExecutedSubject is where an agent reports an executed proposal.
func ExecutedSubject(tenant, job string) string { return subject(PrefixExecuted, tenant, job) }

// NoticeSubject is where an agent reports a failure that is not a question.
func NoticeSubject(tenant, job string) string { return subject(PrefixNotice, tenant, job) }

// Gate codes, in docs/safety.md's words. When several apply, the first of
// stale_version, blocked_by_question, then the proposal codes wins.
const (
	GateAllowed           = "allowed"
	GateBlockedByQuestion = "blocked_by_question"
	GateStaleVersion      = "stale_version"
	GateApprovalRequired  = "approval_required"
	GateApprovalPending   = "approval_pending"
	GateApprovalDenied    = "approval_denied"
	GateProposalExpired   = "proposal_expired"
	GateUnknownProposal   = "unknown_proposal"
	GateProposalMismatch  = "proposal_mismatch"
	GateProposalExecuted  = "proposal_executed"
	// GateInvalid is a request the gate cannot read; Reason names the field.
	GateInvalid = "invalid"
)

// GateRequest asks whether a job may call a tool now, on
// ask.v1.gate.<tenant>.<job>. With ProposalID and Execute it also takes
// the approved proposal for execution, once.
type GateRequest struct {
	Tenant      string `json:"tenant"`
	JobID       string `json:"job_id"`
	TaskVersion int64  `json:"task_version"`
	Tool        string `json:"tool"`
	ProposalID  string `json:"proposal_id,omitempty"`
	Execute     bool   `json:"execute,omitempty"`
	// CurrentVersion decides at the job's current task version, read with
	// the rest of what the gate weighs, in place of TaskVersion (then
	// left 0): for one who asks whether the job may act now (askbridge
	// gate without --version), not for an agent acting on a plan.
	CurrentVersion bool `json:"current_version,omitempty"`
}

// GateReply is the gate's decision. Reason is a sentence an agent can relay.
type GateReply struct {
	Allowed    bool   `json:"allowed"`
	Code       string `json:"code"`
	Reason     string `json:"reason,omitempty"`
	QuestionID string `json:"question_id,omitempty"`
	ProposalID string `json:"proposal_id,omitempty"`
	// Arguments and IdempotencyKey, on an execute, are the proposal's
	// arguments as approved and the key minted when it was recorded.
	Arguments      json.RawMessage `json:"arguments,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	// ExecutedAt, on proposal_executed, is when the first execute was allowed.
	ExecutedAt time.Time `json:"executed_at,omitzero"`
	// TaskVersion, for a request with current_version, is the job's
	// version the gate decided at.
	TaskVersion int64 `json:"task_version,omitempty"`
}

// Proposal states, as cards, the console and the trace name them.
const (
	ProposalPending         = "pending"
	ProposalApproved        = "approved"
	ProposalDenied          = "denied"
	ProposalExpired         = "expired"
	ProposalExecuted        = "executed"
	ProposalExecutionFailed = "execution_failed"
)

// Execution results.
const (
	ResultSucceeded = "succeeded"
	ResultFailed    = "failed"
)

// Execution is what an agent reports on ask.v1.executed.<tenant>.<job>
// after it ran (or failed to run) an approved proposal.
type Execution struct {
	Tenant     string    `json:"tenant"`
	JobID      string    `json:"job_id"`
	ProposalID string    `json:"proposal_id"`
	Result     string    `json:"result"`
	Detail     string    `json:"detail,omitempty"`
	At         time.Time `json:"at,omitzero"`
}

// Approval is one person's approval of a proposal.
type Approval struct {
	By     string `json:"by"`
	ByName string `json:"by_name,omitempty"`
	// Person is the person By belongs to (ASK_PEOPLE or the policy's
	// people:), when linked: approvals count people.
	Person string    `json:"person,omitempty"`
	Via    string    `json:"via,omitempty"`
	At     time.Time `json:"at"`
}

// ProposalStatus is a proposal as it stands, for cards and the console.
type ProposalStatus struct {
	ID    string `json:"id"`
	State string `json:"state"`
	// Approvals so far, of Required (1 without a policy asking for more).
	Approvals []Approval `json:"approvals,omitempty"`
	Required  int        `json:"required,omitempty"`
	// MayApprove names who may still approve while it waits, as the
	// runtime weighs approvals: the policy's approvers (roles or
	// identities), or, when it names none, who may answer (the question's
	// answerers and owner, and Question.AnswerRoles); less the people who
	// approved, and the owner when the policy forbids self-approval.
	MayApprove []string  `json:"may_approve,omitempty"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	ExecutedAt time.Time `json:"executed_at,omitzero"`
	Result     string    `json:"result,omitempty"`
	Detail     string    `json:"detail,omitempty"`
}

// Notice is a typed failure an agent met and reports on
// ask.v1.notice.<tenant>.<job>: shown without controls, never a question.
type Notice struct {
	Tenant string `json:"tenant"`
	JobID  string `json:"job_id"`
	// NoticeID names the notice for deduplication; empty gets one.
	NoticeID string `json:"notice_id,omitempty"`
	Agent    string `json:"agent,omitempty"`
	Failure
	At time.Time `json:"at,omitzero"`
}

// TraceRequest asks ask.v1.api.trace for a job's timeline. As and Roles
// decide what is shown, as with show (a reader sees that things happened,
// not their content); a request without As comes from the trusted bus.
// Limit bounds the entries of one reply (default 500, at most 1000);
// After is the Next of the previous reply.
type TraceRequest struct {
	As     string   `json:"as,omitempty"`
	Roles  []string `json:"roles,omitempty"`
	Tenant string   `json:"tenant"`
	JobID  string   `json:"job_id"`
	Limit  int      `json:"limit,omitempty"`
	After  string   `json:"after,omitempty"`
}

// Trace entry kinds, in the words `askbridge trace` prints.
const (
	TraceAsked      = "asked"
	TraceGate       = "gate"
	TraceAnswered   = "answered"
	TraceDeclined   = "declined"
	TraceRefused    = "refused"
	TraceApproval   = "approval"
	TraceExecuted   = "executed"
	TraceNotice     = "notice"
	TraceCancelled  = "cancelled"
	TraceTimedOut   = "timed_out"
	TraceSuperseded = "superseded"
	TraceFailed     = "failed"
	TraceDelegated  = "delegated"
	TraceSnoozed    = "snoozed"
)

// TraceEntry is one thing that happened in a job, from the record.
type TraceEntry struct {
	At          time.Time `json:"at"`
	Kind        string    `json:"kind"`
	QuestionID  string    `json:"question_id,omitempty"`
	TaskVersion int64     `json:"task_version,omitempty"`
	By          string    `json:"by,omitempty"`
	// Text says what happened in a line a person reads; for a reader who
	// may not see the question's content it says only that it happened.
	Text string `json:"text"`
	// Hidden says the content was withheld from this reader.
	Hidden bool `json:"hidden,omitempty"`
	// Tool and Code, on a gate decision (Code is also a refusal's reason
	// and a notice's failure code); BlockedTools and AllowedTools on asked.
	Tool         string   `json:"tool,omitempty"`
	Code         string   `json:"code,omitempty"`
	BlockedTools []string `json:"blocked_tools,omitempty"`
	AllowedTools []string `json:"allowed_tools,omitempty"`
	// ProposalID, Approvals and Required, on approvals and executions;
	// Result on executed.
	ProposalID string  `json:"proposal_id,omitempty"`
	Approvals  int     `json:"approvals,omitempty"`
	Required   int     `json:"required,omitempty"`
	Result     string  `json:"result,omitempty"`
	Notice     *Notice `json:"notice,omitempty"`
}

// TraceReply answers TraceRequest: the entries in the order they happened.
// Next, when set, asks for the entries after these (as After).
type TraceReply struct {
	Entries []TraceEntry `json:"entries"`
	Next    string       `json:"next,omitempty"`
	Error   string       `json:"error,omitempty"`
}
