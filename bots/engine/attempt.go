package engine

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// Person is who acts on a question through a chat adapter.
type Person struct {
	Identity string   // "slack:U0123"
	Name     string   // as the platform shows them
	Roles    []string // roles the platform vouches for (Discord's), if any
}

// Question names the question (and task version) a person acts on.
type Question struct {
	Tenant, JobID, QuestionID string
	TaskVersion               int64
	// Exact says the person saw this task version (a card or a form);
	// a command names none and means the latest.
	Exact bool
}

// NewAttempt is the answer attempt a person's click, form or command
// makes; the runtime decides it. id is the same for the platform's
// retries of one interaction (docs/contract.md); replyTo is echoed on a
// refusal so the adapter can tell the person. A decline carries no answer.
func NewAttempt(via, id string, q Question, by Person, action string, answer []byte, comment string,
	at time.Time, replyTo map[string]string) bridge.AnswerAttempt {
	if action == bridge.ActionDecline {
		answer = nil
	}
	return bridge.AnswerAttempt{
		Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion, ExactVersion: q.Exact,
		AttemptID: id, Action: action, Answer: answer, Comment: comment,
		By: by.Identity, ByName: by.Name, Roles: by.Roles, Via: via, At: at.UTC(), ReplyTo: replyTo,
	}
}

// PublishAttempt proposes at to the runtime durably: it returns nil only
// once the attempt is in JetStream, the one moment a click may be
// acknowledged. With decided set (ASK_NATS_SYNC=interval) it also waits,
// within ctx, for the runtime to record its decision.
func PublishAttempt(ctx context.Context, log *slog.Logger, decided *bridge.Decisions, js jetstream.JetStream, at *bridge.AnswerAttempt) error {
	ok, err := decided.PublishAttempt(ctx, js, at)
	if err != nil {
		log.ErrorContext(ctx, "could not publish an answer attempt", "attempt", at.AttemptID, "tenant", at.Tenant,
			"job", at.JobID, "question", at.QuestionID, "err", err)
		return fmt.Errorf("publish attempt %s: %w", at.AttemptID, err)
	}
	if decided != nil && !ok {
		// The platform's time is up; the attempt is in JetStream and will be decided.
		log.WarnContext(ctx, "answered an interaction before its decision", "attempt", at.AttemptID)
	}
	return nil
}
