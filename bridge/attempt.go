package bridge

import (
	"encoding/json"
	"time"
)

// Answer actions.
const (
	ActionAnswer  = "answer"
	ActionDecline = "decline"
	ActionApprove = "approve"
	ActionDeny    = "deny"
	// ActionDelegate asks AnswerAttempt.Delegate to answer too; ActionSnooze
	// moves the sender's next reminder (AnswerAttempt.Snooze). Neither
	// settles the question (docs/contract.md "Delegate and snooze").
	ActionDelegate = "delegate"
	ActionSnooze   = "snooze"
)

// Snooze lengths: an hour, four hours, or tomorrow at 09:00 in the
// service's time zone (ASK_TIME_ZONE).
const (
	SnoozeHour     = "1h"
	SnoozeHours4   = "4h"
	SnoozeTomorrow = "tomorrow"
)

// AnswerAttempt is what a front-end proposes on ask.v1.answer.<tenant>.<job>.
// The runtime decides; an attempt is never an answer until it does.
type AnswerAttempt struct {
	Tenant     string `json:"tenant"`
	JobID      string `json:"job_id"`
	QuestionID string `json:"question_id"`
	// TaskVersion binds the attempt to the version the person saw; 0 means
	// the question's latest version (the CLI, which saw no card).
	TaskVersion int64 `json:"task_version,omitempty"`
	// ExactVersion says TaskVersion is the version the person saw even
	// when it is 0 (a question asked without a version): a card or form
	// of version 0 must not answer the question asked again at version 1.
	ExactVersion bool `json:"exact_version,omitempty"`
	// AttemptID is unique per interaction (Slack/Discord interaction id,
	// console form nonce); the same id twice is one attempt.
	AttemptID string `json:"attempt_id"`
	Action    string `json:"action"`
	// Answer is a string for choices and free text, an object keyed by field
	// name for typed fields.
	Answer  json.RawMessage `json:"answer,omitempty"`
	Comment string          `json:"comment,omitempty"`
	By      string          `json:"by"`
	ByName  string          `json:"by_name,omitempty"`
	Via     string          `json:"via,omitempty"`
	// Roles are platform roles the adapter saw (e.g. "admin" from a mapped
	// Discord role); the runtime adds them to the configured ones.
	Roles []string  `json:"roles,omitempty"`
	At    time.Time `json:"at,omitzero"`
	// ReplyTo is opaque to the runtime and echoed on the events this attempt
	// causes, so the adapter can answer the person who clicked.
	ReplyTo map[string]string `json:"reply_to,omitempty"`
	// Delegate, on a delegate, is the identity asked to answer.
	Delegate string `json:"delegate,omitempty"`
	// Snooze, on a snooze, is how long: 1h, 4h or tomorrow.
	Snooze string `json:"snooze,omitempty"`
}

// UnmarshalJSON reads an attempt, also accepting the spellings a hand-written
// client is likely to use: "reason" for comment, "decline": true, and an
// action (or "decision") given in the past tense ("declined", "approved",
// "denied"). The canonical form is what MarshalJSON writes.
func (a *AnswerAttempt) UnmarshalJSON(data []byte) error {
	type plain AnswerAttempt
	var aux struct {
		plain
		Reason   string `json:"reason"`
		Decline  bool   `json:"decline"`
		Decision string `json:"decision"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	*a = AnswerAttempt(aux.plain)
	if a.Comment == "" {
		a.Comment = aux.Reason
	}
	if a.Action == "" {
		a.Action = aux.Decision
	}
	if aux.Decline && a.Action == "" {
		a.Action = ActionDecline
	}
	switch a.Action {
	case "declined":
		a.Action = ActionDecline
	case "approved":
		a.Action = ActionApprove
	case "denied":
		a.Action = ActionDeny
	case "answered":
		a.Action = ActionAnswer
	}
	return nil
}
