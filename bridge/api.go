package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// ListRequest asks ask.v1.api.list for the questions an identity may see.
type ListRequest struct {
	// As is the identity asking ("slack:U0123"); it decides what is shown.
	As    string   `json:"as"`
	Roles []string `json:"roles,omitempty"`
	// Tenant limits the list to one tenant; empty lists all.
	Tenant string `json:"tenant,omitempty"`
	JobID  string `json:"job_id,omitempty"`
	// State defaults to pending; "all" lists every state.
	State string `json:"state,omitempty"`
	Limit int    `json:"limit,omitempty"`
	// After is the cursor a previous reply returned as Next.
	After string `json:"after,omitempty"`
}

// ListReply answers ListRequest.
type ListReply struct {
	Questions []QuestionView `json:"questions"`
	Next      string         `json:"next,omitempty"`
	// Roles are the roles the asking identity holds, as a person:
	// "operator" in every tenant, "acme/operator" in tenant acme (an
	// addition, docs/contract.md "Request/reply API"). None: it holds no
	// role, and sees only the questions that name it.
	Roles []string `json:"roles,omitempty"`
	Error string   `json:"error,omitempty"`
}

// errorOnly is the JSON of a refused request: the contract says errors come
// back as {"error": "..."}, with nothing else beside them.
type errorOnly struct {
	Error string `json:"error"`
}

// MarshalJSON writes a refused list as {"error": "..."}, not with a
// "questions": null that a client could read as an empty list.
func (r ListReply) MarshalJSON() ([]byte, error) {
	if r.Error != "" && r.Questions == nil {
		return json.Marshal(errorOnly{r.Error})
	}
	type plain ListReply
	return json.Marshal(plain(r))
}

// ShowRequest asks ask.v1.api.show for one question and its audit trail.
// JobID may be empty when QuestionID is unique in the tenant.
type ShowRequest struct {
	As          string   `json:"as"`
	Roles       []string `json:"roles,omitempty"`
	Tenant      string   `json:"tenant,omitempty"`
	JobID       string   `json:"job_id,omitempty"`
	QuestionID  string   `json:"question_id"`
	TaskVersion int64    `json:"task_version,omitempty"`
}

// ShowReply answers ShowRequest.
type ShowReply struct {
	Question *QuestionView `json:"question,omitempty"`
	Audit    []AuditEntry  `json:"audit,omitempty"`
	Error    string        `json:"error,omitempty"`
}

// NoQuestionShown is ask.v1.api.show's error for a question that does not
// exist or that the asking identity may not know of (the two are not told
// apart). Other errors say the runtime could not look.
func NoQuestionShown(questionID string) string {
	return "There is no question " + questionID + " that you can see."
}

// StatsReply answers ask.v1.api.stats (a StatsRequest, or any body).
// ByState and OutboxBacklog count the whole service: nil ByState leaves
// both out, as for a person who holds roles in some tenants only.
type StatsReply struct {
	ByState       map[string]int64 `json:"by_state"`
	OutboxBacklog int64            `json:"outbox_backlog"`
	// Clarification is the measures of the request's window.
	Clarification *Clarification `json:"clarification,omitempty"`
	Error         string         `json:"error,omitempty"`
}

// MarshalJSON writes a failed stats request as {"error": "..."}, and one
// without the whole service's counts without them: not with "by_state":
// null and an outbox backlog of 0 that read as an idle service.
func (r StatsReply) MarshalJSON() ([]byte, error) {
	switch {
	case r.Error != "" && r.ByState == nil:
		return json.Marshal(errorOnly{r.Error})
	case r.ByState == nil:
		return json.Marshal(struct {
			Clarification *Clarification `json:"clarification,omitempty"`
		}{r.Clarification})
	}
	type plain StatsReply
	return json.Marshal(plain(r))
}

// QuestionView is a stored question as one identity may see it. When Hidden
// is set the asker may know that it waits, not what it asks: Question is nil.
type QuestionView struct {
	Tenant      string `json:"tenant"`
	JobID       string `json:"job_id"`
	QuestionID  string `json:"question_id"`
	TaskVersion int64  `json:"task_version"`
	Kind        string `json:"kind"`
	State       string `json:"state"`
	Hidden      bool   `json:"hidden,omitempty"`
	// Restricted says the question's content is for its answerers, its
	// owner, admins and owners only ("visibility": "restricted").
	Restricted bool `json:"restricted,omitempty"`
	// WaitsFor, when a restricted question is hidden from the asker, names
	// the people it waits for besides admins and owners: its answerers,
	// then its owner. It is all such an asker learns of who may answer.
	WaitsFor []string  `json:"waits_for,omitempty"`
	Question *Question `json:"question,omitempty"`
	AskedAt  time.Time `json:"asked_at"`
	Deadline time.Time `json:"deadline"`
	// CanAnswer and CanDecline say what the asking identity may do.
	CanAnswer  bool `json:"can_answer"`
	CanDecline bool `json:"can_decline"`
	// CannotAnswer, for a pending question the asking identity may not
	// answer, says why in the words a refused answer gets ("You can't
	// answer this question: ..."), for a front-end to show before any form.
	CannotAnswer string `json:"cannot_answer,omitempty"`
	// Settlement, once the question is no longer pending.
	By         string          `json:"by,omitempty"`
	ByName     string          `json:"by_name,omitempty"`
	Via        string          `json:"via,omitempty"`
	Answer     json.RawMessage `json:"answer,omitempty"`
	AnswerText string          `json:"answer_text,omitempty"`
	Comment    string          `json:"comment,omitempty"`
	Text       string          `json:"text,omitempty"`
	SettledAt  time.Time       `json:"settled_at,omitzero"`
	Messages   []MessageRef    `json:"messages,omitempty"`
	// Proposal is an approval's proposal as it stands (approvals so far,
	// decided, expired, executed), for cards and the console; nil for a
	// question, or when the reader may not see the content.
	Proposal *ProposalStatus `json:"proposal,omitempty"`
}

// AuditEntry is one transition of a question's state.
type AuditEntry struct {
	From   string    `json:"from"`
	To     string    `json:"to"`
	By     string    `json:"by,omitempty"`
	Via    string    `json:"via,omitempty"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// ErrBadReply is a reply of the runtime's API that is not JSON.
var ErrBadReply = errors.New("the reply is not JSON")

// Request asks the runtime's request/reply API (ask.v1.api.<op>) and
// decodes its reply into reply. A runtime that is not running is an error
// wrapping nats.ErrNoResponders; ctx bounds the wait.
func Request(ctx context.Context, nc *nats.Conn, subject string, req, reply any) error {
	data, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%s: encode the request: %w", subject, err)
	}
	msg, err := nc.RequestWithContext(ctx, subject, data)
	if err != nil {
		return fmt.Errorf("%s: %w", subject, err)
	}
	if err := json.Unmarshal(msg.Data, reply); err != nil {
		return fmt.Errorf("%s: %w: %w", subject, ErrBadReply, err)
	}
	return nil
}
