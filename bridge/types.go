package bridge

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"time"
)

// Question kinds.
const (
	KindQuestion = "question"
	KindApproval = "approval"
)

// What happens when nobody answers in time.
const (
	OnTimeoutContinue = "continue"
	OnTimeoutFail     = "fail"
)

// DefaultTimeout applies when a question names none.
const DefaultTimeout = 24 * time.Hour

// Question is what an agent publishes on ask.v1.question.<tenant>.<job>.
// It is written for a person who has not seen the agent's conversation.
type Question struct {
	Tenant       string `json:"tenant"`
	JobID        string `json:"job_id"`
	QuestionID   string `json:"question_id"`
	TaskVersion  int64  `json:"task_version"`
	Kind         string `json:"kind,omitempty"`
	Question     string `json:"question"`
	Context      string `json:"context,omitempty"`
	MissingField string `json:"missing_field,omitempty"`
	WhyItMatters string `json:"why_it_matters,omitempty"`
	Priority     string `json:"priority,omitempty"`
	// Choices and Fields are exclusive; with neither the answer is free text.
	Choices      []string  `json:"choices,omitempty"`
	Fields       []Field   `json:"fields,omitempty"`
	Proposal     *Proposal `json:"proposal,omitempty"`
	BlockedTools []string  `json:"blocked_tools,omitempty"`
	// AllowedTools, when set, closes the job's surface while the question
	// waits: the gate refuses every tool not listed (docs/safety.md).
	AllowedTools []string `json:"allowed_tools,omitempty"`
	Timeout      string   `json:"timeout,omitempty"`
	OnTimeout    string   `json:"on_timeout,omitempty"`
	Route        *Route   `json:"route,omitempty"`
	Answerers    []string `json:"answerers,omitempty"`
	Owner        string   `json:"owner,omitempty"`
	// Visibility is who may read the question's content: VisibilityTenant
	// (the default, "" too) or VisibilityRestricted (docs/contract.md).
	Visibility string `json:"visibility,omitempty"`
	Agent      string `json:"agent,omitempty"`
	// Escalation reshapes the reminder ladder; nil means the default ladder.
	Escalation       *Escalation `json:"escalation,omitempty"`
	EscalationReason string      `json:"escalation_reason,omitempty"`
	// Delegations are the people asked to answer from the card ("Ask
	// someone else"), each added to Answerers. The runtime records them;
	// an asker may not set them (docs/contract.md "Delegate and snooze").
	Delegations []Delegation `json:"delegations,omitempty"`
}

// Delegation is one "Ask someone else": By asked To to answer, At then.
type Delegation struct {
	By     string    `json:"by"`
	ByName string    `json:"by_name,omitempty"`
	To     string    `json:"to"`
	At     time.Time `json:"at"`
}

// Visibility values: who may read a question's text, choices and fields.
const (
	VisibilityTenant     = "tenant"
	VisibilityRestricted = "restricted"
)

// Restricted reports whether the question's content is limited to its
// answerers, its owner, admins and owners.
func (q *Question) Restricted() bool { return q.Visibility == VisibilityRestricted }

// AnswerRoles names, as a person reads it, the roles that may answer q
// besides the people it waits for: "operators" (who stand for admins and
// owners too), or "admins" (and owners) for a restricted question, whose
// operators may only decline it.
func (q *Question) AnswerRoles() string {
	if q.Restricted() {
		return "admins"
	}
	return "operators"
}

// WaitsFor names the people a question is for, besides the tenant's roles:
// its answerers, then its owner. For a restricted question they, admins and
// owners are all who may read it.
func (q *Question) WaitsFor() []string {
	out := slices.Clone(q.Answerers)
	if q.Owner != "" && !slices.Contains(out, q.Owner) {
		out = append(out, q.Owner)
	}
	return out
}

// IsApproval reports whether the question takes approve/deny only.
func (q *Question) IsApproval() bool { return q.Kind == KindApproval }

// TimeoutDuration is the question's timeout, DefaultTimeout when unset.
// It assumes the question passed ValidateQuestion.
func (q *Question) TimeoutDuration() time.Duration {
	if q.Timeout == "" {
		return DefaultTimeout
	}
	d, err := ParseTimeout(q.Timeout)
	if err != nil {
		return DefaultTimeout
	}
	return d
}

// Field kinds.
const (
	FieldText        = "text"
	FieldNumber      = "number"
	FieldChoice      = "choice"
	FieldMultiChoice = "multi-choice"
	FieldDate        = "date"
	FieldToggle      = "toggle"
)

// Field is one typed input of a question.
type Field struct {
	Name        string   `json:"name"`
	Kind        string   `json:"kind"`
	Label       string   `json:"label,omitempty"`
	Description string   `json:"description,omitempty"`
	Required    bool     `json:"required,omitempty"`
	Options     []string `json:"options,omitempty"`
	Min         *float64 `json:"min,omitempty"`
	Max         *float64 `json:"max,omitempty"`
	Integer     bool     `json:"integer,omitempty"`
	MaxLength   int      `json:"max_length,omitempty"`
	Multiline   bool     `json:"multiline,omitempty"`
	DateTime    bool     `json:"date_time,omitempty"`
}

// Title is the field's label, or its name when it has none: a blank label
// (spaces only) counts as none, since a form cannot show an empty label.
func (f *Field) Title() string {
	if strings.TrimSpace(f.Label) != "" {
		return f.Label
	}
	return f.Name
}

// Proposal is what an approval asks a person to approve or deny: an
// action with its exact arguments, decided once, ever, and executed once
// through the gate (docs/safety.md).
type Proposal struct {
	ID      string   `json:"id"`
	Action  string   `json:"action,omitempty"`
	Summary []string `json:"summary"`
	// Arguments are the action's exact parameters, a JSON object; the gate
	// hands them back on execute as they were approved.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Amount    *float64        `json:"amount,omitempty"`
	Currency  string          `json:"currency,omitempty"`
	// ExpiresAt, when set, is when the proposal can no longer be decided
	// or executed.
	ExpiresAt time.Time `json:"expires_at,omitzero"`

	// badExpiry names an expires_at that is not a time (UnmarshalJSON),
	// for ValidateQuestion to refuse.
	badExpiry string
}

// Route says where a question should be shown.
type Route struct {
	Slack   *SlackRoute   `json:"slack,omitempty"`
	Discord *DiscordRoute `json:"discord,omitempty"`
}

// SlackRoute names a Slack channel and, optionally, an existing thread.
type SlackRoute struct {
	Channel  string `json:"channel"`
	ThreadTS string `json:"thread_ts,omitempty"`
}

// DiscordRoute names a Discord channel.
type DiscordRoute struct {
	ChannelID string `json:"channel_id"`
}

// Cancel is what an agent publishes on ask.v1.cancel.<tenant>.<job>. With a
// TaskVersion it bumps the job to that version (if not there yet) and
// supersedes the pending questions of older versions; without one it
// cancels the job's pending questions (only QuestionID's, when given).
type Cancel struct {
	Tenant      string `json:"tenant"`
	JobID       string `json:"job_id"`
	QuestionID  string `json:"question_id,omitempty"`
	TaskVersion int64  `json:"task_version,omitempty"`
	Reason      string `json:"reason,omitempty"`
	// Status says why the question is no longer asked: CancelRetired (with
	// Reason) or CancelImplicitlyAnswered (with Evidence, the person's
	// words the agent used). Empty is a plain cancel. ValidateCancel
	// holds the rules (docs/contract.md, cancel).
	Status   string `json:"status,omitempty"`
	Evidence string `json:"evidence,omitempty"`
	By       string `json:"by,omitempty"`
	// Roles are platform roles the adapter established for By (as on an
	// answer attempt); ReplyTo is echoed on the refused event when By may
	// not cancel.
	Roles   []string          `json:"roles,omitempty"`
	ReplyTo map[string]string `json:"reply_to,omitempty"`
}

// Cancel statuses: why a question ends without being answered here.
const (
	// CancelRetired: the question is no longer needed (the topic changed).
	CancelRetired = "retired"
	// CancelImplicitlyAnswered: the person answered it in conversation.
	CancelImplicitlyAnswered = "implicitly_answered"
)

// Event types on ask.v1.event.<tenant>.<job>.
const (
	EventAsked          = "asked"
	EventAnswered       = "answered"
	EventDeclined       = "declined"
	EventRefused        = "refused"
	EventReminded       = "reminded"
	EventEscalated      = "escalated"
	EventTimedOut       = "timed_out"
	EventCancelled      = "cancelled"
	EventSuperseded     = "superseded"
	EventDeliveryFailed = "delivery_failed"
	// EventApproval: one approval of several a proposal needs was
	// recorded; the question still waits (Event.Proposal says how many).
	EventApproval = "approval_recorded"
	// EventExecuted: the agent reported the execution of an approved
	// proposal (Event.Proposal carries the result and detail).
	EventExecuted = "executed"
	// EventNotice: an agent met a typed failure that is not a question
	// (Event.Notice); it is shown without controls.
	EventNotice = "notice"
	// EventDelegated: someone who may answer asked Event.Delegate to
	// answer too; Event.Question carries the new answerers.
	EventDelegated = "delegated"
	// EventSnoozed: Event.By's next reminder moved to Event.Until.
	EventSnoozed = "snoozed"
)

// Refusal reasons, for the refused event and the metrics.
const (
	RefusedUnknown    = "unknown_question"
	RefusedNotPending = "not_pending"
	RefusedStale      = "stale"
	RefusedForbidden  = "not_allowed"
	RefusedWrongKind  = "wrong_kind"
	RefusedInvalid    = "invalid_answer"
)

// Event is what the runtime tells the front-ends.
type Event struct {
	Type        string `json:"type"`
	EventID     string `json:"event_id"`
	Tenant      string `json:"tenant"`
	JobID       string `json:"job_id"`
	QuestionID  string `json:"question_id"`
	TaskVersion int64  `json:"task_version"`
	// Question is the whole question, on every event about one.
	Question *Question `json:"question,omitempty"`
	State    string    `json:"state,omitempty"`
	// Status, on cancelled, is the cancel's status (CancelRetired or
	// CancelImplicitlyAnswered); Text then says the reason or evidence.
	Status   string    `json:"status,omitempty"`
	AskedAt  time.Time `json:"asked_at,omitzero"`
	Deadline time.Time `json:"deadline,omitzero"`
	// Who settled or attempted, and what.
	By     string `json:"by,omitempty"`
	ByName string `json:"by_name,omitempty"`
	// Person is the person By belongs to, when ASK_PEOPLE or the policy
	// links it (docs/contract.md, "People").
	Person     string          `json:"person,omitempty"`
	Via        string          `json:"via,omitempty"`
	Answer     json.RawMessage `json:"answer,omitempty"`
	AnswerText string          `json:"answer_text,omitempty"`
	Comment    string          `json:"comment,omitempty"`
	// Text is the sentence a person reads: the outcome, or the refusal.
	Text string `json:"text,omitempty"`
	// Reason is the refusal reason (Refused*); FieldErrors the per-field
	// refusals of an invalid answer, keyed by field name.
	Reason      string            `json:"reason,omitempty"`
	FieldErrors map[string]string `json:"field_errors,omitempty"`
	// To is the identity a refusal is addressed to.
	To string `json:"to,omitempty"`
	// Step and Targets name a ladder step and whom it reminds.
	Step    string   `json:"step,omitempty"`
	Targets []string `json:"targets,omitempty"`
	// Nudge, on reminded and escalated, is the job's round: its pending
	// questions in queue order and whom the round reminds of each.
	Nudge *Nudge `json:"nudge,omitempty"`
	// Persons names the person of each identity the event names (targets,
	// answerers, owners) that ASK_PEOPLE or the policy links, so that a
	// front-end weighs people, not accounts (ReminderShowsQuestion).
	Persons   map[string]string `json:"persons,omitempty"`
	AttemptID string            `json:"attempt_id,omitempty"`
	ReplyTo   map[string]string `json:"reply_to,omitempty"`
	Failure   *Failure          `json:"failure,omitempty"`
	// Proposal is an approval's proposal as it stands: approvals so far,
	// decided, executed (on approval_recorded, answered and executed).
	Proposal *ProposalStatus `json:"proposal,omitempty"`
	// Notice is the failure an agent reported, on a notice event.
	Notice *Notice `json:"notice,omitempty"`
	// Delegate is, on delegated, the person asked to answer; Until, on
	// snoozed, when the snoozer is reminded next.
	Delegate string    `json:"delegate,omitempty"`
	Until    time.Time `json:"until,omitzero"`
	// Messages are the chat messages that show this question, as reported
	// by the adapters, so an outcome can update them after any restart.
	Messages []MessageRef `json:"messages,omitempty"`
	// Threads, on asked, are the job's threads: where its earlier questions
	// were shown in a thread, as the adapters reported them, so an adapter
	// that restarted opens no second thread for the job.
	Threads []MessageRef `json:"threads,omitempty"`
	At      time.Time    `json:"at"`
}

// Outcomes on ask.v1.resume.<tenant>.<job>.
const (
	OutcomeAnswered = "answered"
	OutcomeDeclined = "declined"
	OutcomeTimedOut = "timed_out"
	OutcomeCanceled = "cancelled"
	OutcomeFailed   = "failed"
	OutcomeInvalid  = "invalid"
)

// Resume is the outcome a job reads.
type Resume struct {
	Tenant      string `json:"tenant"`
	JobID       string `json:"job_id"`
	QuestionID  string `json:"question_id"`
	TaskVersion int64  `json:"task_version"`
	Outcome     string `json:"outcome"`
	// Status, on a cancelled outcome, is the cancel's status (CancelRetired
	// or CancelImplicitlyAnswered).
	Status  string          `json:"status,omitempty"`
	Text    string          `json:"text"`
	Answer  json.RawMessage `json:"answer,omitempty"`
	Comment string          `json:"comment,omitempty"`
	By      string          `json:"by,omitempty"`
	ByName  string          `json:"by_name,omitempty"`
	Person  string          `json:"person,omitempty"`
	Via     string          `json:"via,omitempty"`
	// Code is set on failed outcomes (QuestionTimedOut or a failure code).
	Code    string    `json:"code,omitempty"`
	Failure *Failure  `json:"failure,omitempty"`
	At      time.Time `json:"at"`
}

// Failure codes.
const (
	CodeCapabilityUnavailable = "CAPABILITY_UNAVAILABLE"
	CodeAccessDenied          = "ACCESS_DENIED"
	CodeReferenceUnresolved   = "REFERENCE_UNRESOLVED"
	CodeSourceUnreliable      = "SOURCE_UNRELIABLE"
	CodeInputMissing          = "INPUT_MISSING"
	CodeQuestionTimedOut      = "QuestionTimedOut"
)

// Failure is a typed integration failure. OperatorMessage never holds
// tokens or raw provider responses. docs/contract.md gives its shape as
// {code, dependency, operation, retryable, required_capability,
// safe_fallback, operator_message}: every key is always present (an empty
// string when it does not apply), so a client can read it without checking.
type Failure struct {
	Code               string `json:"code"`
	Dependency         string `json:"dependency"`
	Operation          string `json:"operation"`
	Retryable          bool   `json:"retryable"`
	RequiredCapability string `json:"required_capability"`
	SafeFallback       string `json:"safe_fallback"`
	OperatorMessage    string `json:"operator_message"`
}

// Delivery is an adapter's report on ask.v1.delivery.<tenant>.<job>: it
// showed the question (OK, with the message reference) or could not (Failure).
type Delivery struct {
	Tenant      string      `json:"tenant"`
	JobID       string      `json:"job_id"`
	QuestionID  string      `json:"question_id"`
	TaskVersion int64       `json:"task_version"`
	Platform    string      `json:"platform"`
	OK          bool        `json:"ok"`
	Message     *MessageRef `json:"message,omitempty"`
	Failure     *Failure    `json:"failure,omitempty"`
	At          time.Time   `json:"at,omitzero"`
}

// MessageRef points at a chat message showing a question.
type MessageRef struct {
	Platform  string `json:"platform"`
	Channel   string `json:"channel"`
	MessageID string `json:"message_id"`
	// Thread is the Slack thread ts or Discord thread id the message is in.
	Thread string `json:"thread,omitempty"`
}

// Question states in the store.
const (
	StatePending    = "pending"
	StateAnswered   = "answered"
	StateDeclined   = "declined"
	StateTimedOut   = "timed_out"
	StateCancelled  = "cancelled"
	StateSuperseded = "superseded"
	StateFailed     = "failed"
)

// endings pairs each final state but failed with the event that leaves a
// question in it (a failed question's event is delivery_failed, or
// timed_out with on_timeout: fail).
var endings = [...]struct{ event, state string }{
	{EventAnswered, StateAnswered},
	{EventDeclined, StateDeclined},
	{EventTimedOut, StateTimedOut},
	{EventCancelled, StateCancelled},
	{EventSuperseded, StateSuperseded},
}

// EndedState is the state an ending event leaves its question in:
// failed for delivery_failed, and for any event that ends none.
func EndedState(eventType string) string {
	for _, e := range endings {
		if e.event == eventType {
			return e.state
		}
	}
	return StateFailed
}

// EndingEvent is the event that leaves a question in final state state;
// "" for failed, which two events may end in, and for a state not final.
func EndingEvent(state string) string {
	for _, e := range endings {
		if e.state == state {
			return e.event
		}
	}
	return ""
}

// Platforms, also the prefixes of identities.
const (
	PlatformSlack   = "slack"
	PlatformDiscord = "discord"
	PlatformConsole = "console"
	PlatformCLI     = "cli"
)

// InputBounds are a number field's bounds as a form's input takes them:
// for a whole-number field rounded inward (an input that counts whole
// steps from a fractional minimum takes no whole number; the same whole
// numbers fit), and none when no whole number fits between them, which
// the validator then refuses in words. nil means no bound.
func (f *Field) InputBounds() (lo, hi *float64) {
	if f.Min != nil {
		v := *f.Min
		if f.Integer {
			v = math.Ceil(v)
		}
		lo = &v
	}
	if f.Max != nil {
		v := *f.Max
		if f.Integer {
			v = math.Floor(v)
		}
		hi = &v
	}
	if lo != nil && hi != nil && *lo > *hi {
		return nil, nil
	}
	return lo, hi
}
