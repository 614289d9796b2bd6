package engine

import (
	"context"
	"errors"
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

// ErrUndecided is PublishAttempt's error when the runtime did not record
// its decision on the attempt within ctx (ASK_NATS_SYNC=interval).
var ErrUndecided = errors.New("the runtime did not record its decision in time")

// PublishAttempt proposes at to the runtime durably: it returns nil only
// at the one moment a click may be acknowledged. That is once the attempt
// is in JetStream; with decided set (ASK_NATS_SYNC=interval, where
// JetStream's acknowledgement is not yet on disk) once the runtime has
// also committed its decision, within ctx: when ctx ends first, it
// returns ErrUndecided, and the attempt, in JetStream, may still be
// decided: a retry of it (the same attempt id) returns nil once it is.
func PublishAttempt(ctx context.Context, log *slog.Logger, decided *bridge.Decisions, js jetstream.JetStream, at *bridge.AnswerAttempt) error {
	ok, err := decided.PublishAttempt(ctx, js, at)
	if err != nil {
		log.ErrorContext(ctx, "could not publish an answer attempt", "attempt", at.AttemptID, "tenant", at.Tenant,
			"job", at.JobID, "question", at.QuestionID, "err", err)
		return fmt.Errorf("publish attempt %s: %w", at.AttemptID, err)
	}
	if decided != nil && !ok {
		// Not on disk yet as far as anyone knows: not acknowledged.
		log.WarnContext(ctx, "an answer attempt's decision did not come in time; not acknowledged", "attempt", at.AttemptID,
			"tenant", at.Tenant, "job", at.JobID, "question", at.QuestionID)
		return fmt.Errorf("attempt %s: %w", at.AttemptID, ErrUndecided)
	}
	return nil
}
