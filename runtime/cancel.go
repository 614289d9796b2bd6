package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// cancelStore is what cancels need: end a job's questions, read what
// ended one first, and tell people through the outbox.
type cancelStore interface {
	Cancel(ctx context.Context, c record.JobCancel) ([]record.Record, error)
	Find(ctx context.Context, k record.Key) (*record.Record, error)
	Messages(ctx context.Context, question int64) ([]bridge.MessageRef, error)
	Enqueue(ctx context.Context, msgs []record.Message) error
}

// handleCancel cancels a job's pending questions, or bumps its task version
// and supersedes the older ones. A cancel from a person (By set, as from a
// chat command) needs the admin or owner role.
func (r *Runtime) handleCancel(ctx context.Context, msg jetstream.Msg) error {
	tenant, job, ok := subjectKey(msg.Subject(), bridge.PrefixCancel)
	if !ok {
		r.log.Warn("cancel on a subject without a valid tenant and job; dropped", "subject", msg.Subject())
		return nil
	}
	var c bridge.Cancel
	if err := json.Unmarshal(msg.Data(), &c); err != nil {
		r.log.Warn("malformed cancel dropped", "subject", msg.Subject(), "err", err)
		return nil
	}
	if (c.Tenant != "" && c.Tenant != tenant) || (c.JobID != "" && c.JobID != job) || c.TaskVersion < 0 {
		r.log.Warn("cancel does not match its subject; dropped", "subject", msg.Subject())
		return nil
	}
	if err := bridge.ValidateCancel(&c); err != nil {
		// Nothing ends: the agent hears why from its cancel's decision
		// reply, and the log keeps it.
		r.log.Warn("invalid cancel dropped", "tenant", tenant, "job", job, "question", c.QuestionID, "problem", err.Error())
		r.tellCanceller(msg, bridge.CancelDecision{Refused: err.Error()})
		return nil
	}
	now := r.stamp()
	if c.By != "" && !r.o.Roles.accessFor(tenant, c.By, c.Roles, nil).Admin {
		return r.refuseCancel(ctx, msg, tenant, job, &c, now)
	}
	if wait, err := r.questionInFlight(ctx, msg, tenant, job); err != nil {
		return err
	} else if wait {
		return errAfterQuestion
	}
	key := ""
	if meta, err := msg.Metadata(); err == nil {
		// This stored message, however often it is delivered.
		key = fmt.Sprintf("cancel.%d.%d", meta.Sequence.Stream, meta.Timestamp.UnixNano())
	}
	ended, err := r.cancelling.Cancel(ctx, record.JobCancel{
		Tenant: tenant, JobID: job, QuestionID: c.QuestionID, NewVersion: c.TaskVersion,
		Reason: cancelAuditReason(&c), By: c.By, Via: platformOf(c.By), At: now, Key: key,
		Outbox: func(rec *record.Record) []record.Message {
			refs, _ := r.cancelling.Messages(ctx, rec.ID)
			text, status := bridge.CancelText(c.Status, c.Reason, c.Evidence), c.Status
			if rec.State == bridge.StateSuperseded {
				text, status = bridge.SupersededText(c.TaskVersion), ""
			}
			return endedMessages(rec, rec.State, status, text, refs, now)
		},
	})
	if errors.Is(err, record.ErrDuplicate) {
		r.log.Info("cancel already applied; redelivered", "tenant", tenant, "job", job)
		r.tellCanceller(msg, bridge.CancelDecision{})
		return nil
	}
	if err != nil {
		return err
	}
	for _, rec := range ended {
		r.metrics.settled.WithLabelValues(rec.State).Inc()
	}
	if len(ended) > 0 {
		r.wakeRelay()
	}
	if len(ended) == 0 && c.By != "" && len(c.ReplyTo) > 0 && c.TaskVersion == 0 {
		// A person's cancel that found nothing waiting (an answer, a
		// timeout or another cancel ended it first) is told so, where
		// they asked, as a refused cancel is. Best effort: the cancel
		// itself is done, and a redelivery of it is a duplicate.
		if err := r.tellNothingCancelled(ctx, msg, tenant, job, &c, now); err != nil {
			r.log.Warn("could not tell a canceller that nothing was cancelled", "tenant", tenant, "job", job, "err", err)
		}
	}
	r.tellCanceller(msg, bridge.CancelDecision{Ended: len(ended)})
	r.log.Info("cancel applied", "tenant", tenant, "job", job, "question", c.QuestionID, "version", c.TaskVersion, "ended", len(ended))
	return nil
}

// cancelAuditReason is what the audit (and the question's record) keeps
// of a cancel: the agent's reason, or for a retired or implicitly answered
// question its sentence with the reason or evidence, and an implicitly
// answered question's reason beside its evidence.
func cancelAuditReason(c *bridge.Cancel) string {
	if c.Status == "" {
		return c.Reason
	}
	text := bridge.CancelText(c.Status, c.Reason, c.Evidence)
	if reason := strings.TrimSpace(c.Reason); c.Status == bridge.CancelImplicitlyAnswered && reason != "" {
		text += " Reason: " + reason
	}
	return text
}

// refuseCancel tells a person without the admin or owner role that they
// may not cancel.
func (r *Runtime) refuseCancel(ctx context.Context, msg jetstream.Msg, tenant, job string, c *bridge.Cancel, now time.Time) error {
	ev := bridge.Event{
		Type: bridge.EventRefused, Tenant: tenant, JobID: job, QuestionID: c.QuestionID, To: c.By, By: c.By,
		Reason: bridge.RefusedForbidden, Text: "You can't cancel questions: that needs the admin or owner role.",
		ReplyTo: c.ReplyTo, At: now,
	}
	ev.EventID = fmt.Sprintf("%s.%s.%s.cancel-refused.%s", tenant, job, c.QuestionID, cancelEventID(msg, now))
	if err := r.cancelling.Enqueue(ctx, []record.Message{eventMsg(ev)}); err != nil {
		return err
	}
	r.metrics.refusals.WithLabelValues(bridge.RefusedForbidden).Inc()
	r.wakeRelay()
	r.tellCanceller(msg, bridge.CancelDecision{Refused: ev.Text})
	return nil
}

// cancelEventID names what a cancel tells its person by the cancel's place
// in its stream and its time: a redelivered cancel's event has the same id,
// and front-ends tell a person once per event id; a stream made anew
// numbers from 1 again, so the sequence alone would name an earlier event.
func cancelEventID(msg jetstream.Msg, now time.Time) string {
	if meta, err := msg.Metadata(); err == nil {
		return fmt.Sprintf("seq-%d-%d", meta.Sequence.Stream, meta.Timestamp.UnixNano())
	}
	return fmt.Sprint(now.UnixNano())
}

// tellCanceller tells the front-end that asked (bridge.HeaderDecidedTo)
// what its cancel did. It is best effort: the events tell it too.
func (r *Runtime) tellCanceller(msg jetstream.Msg, d bridge.CancelDecision) {
	if to := msg.Headers().Get(bridge.HeaderDecidedTo); bridge.ValidNotifySubject(to) {
		data, _ := json.Marshal(d)
		if err := r.nc.Publish(to, data); err != nil {
			r.log.Debug("tell a canceller the decision", "err", err)
		}
	}
}

// tellNothingCancelled sends the person whose cancel ended nothing a
// refused event (reason not_pending) saying what ended the question, or
// that the job had no question waiting.
func (r *Runtime) tellNothingCancelled(ctx context.Context, msg jetstream.Msg, tenant, job string, c *bridge.Cancel, now time.Time) error {
	text := fmt.Sprintf("Nothing was cancelled: job %s has no question waiting.", job)
	if c.QuestionID != "" {
		text = fmt.Sprintf("Nothing was cancelled: there is no question %s in job %s.", c.QuestionID, job)
		rec, err := r.cancelling.Find(ctx, record.Key{Tenant: tenant, JobID: job, QuestionID: c.QuestionID})
		switch {
		case err == nil && rec.State == bridge.StateSuperseded:
			text = fmt.Sprintf("Nothing was cancelled: a newer version of the task replaced this question at %s.", rec.SettledAt.UTC().Format(time.RFC3339))
		case err == nil:
			// "This question was already answered by ..." as a late answer is told.
			late := notPending(rec).text
			text = "Nothing was cancelled: t" + strings.TrimPrefix(late, "T")
		case !errors.Is(err, record.ErrNotFound):
			return err
		}
	}
	ev := bridge.Event{
		Type: bridge.EventRefused, Tenant: tenant, JobID: job, QuestionID: c.QuestionID, To: c.By, By: c.By,
		Reason: bridge.RefusedNotPending, Text: text, ReplyTo: c.ReplyTo, At: now,
	}
	ev.EventID = fmt.Sprintf("%s.%s.%s.cancel-ended-nothing.%s", tenant, job, c.QuestionID, cancelEventID(msg, now))
	if err := r.cancelling.Enqueue(ctx, []record.Message{eventMsg(ev)}); err != nil {
		return err
	}
	r.wakeRelay()
	return nil
}

// errAfterQuestion retries a cancel shortly, once the question published
// before it is stored.
var errAfterQuestion = errors.New("runtime: a question published before this cancel is not stored yet")

// maxCancelWaits bounds how often a cancel waits for a question, so a
// question the runtime cannot store never holds a cancel forever.
const maxCancelWaits = 1500 // about 30 s

// questionInFlight reports whether a question of the job, published before
// the cancel, still waits in the questions stream. Questions and cancels
// come through separate consumers, so an agent that asks and at once
// cancels would otherwise often have its cancel applied first, to nothing,
// and the question would then wait. The stream is a work queue: what it
// holds, the runtime has not stored yet.
func (r *Runtime) questionInFlight(ctx context.Context, msg jetstream.Msg, tenant, job string) (bool, error) {
	meta, err := msg.Metadata()
	if err != nil {
		return false, nil
	}
	if meta.NumDelivered > maxCancelWaits {
		r.log.Warn("cancel applied although a question published before it is still not stored", "tenant", tenant, "job", job)
		return false, nil
	}
	first, err := r.questions.GetMsg(ctx, 0, jetstream.WithGetMsgSubject(bridge.QuestionSubject(tenant, job)))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("runtime: look for questions before a cancel: %w", err)
	}
	return !first.Time.After(meta.Timestamp), nil
}
