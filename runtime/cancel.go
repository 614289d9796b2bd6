package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store"
)

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
	now := time.Now().UTC()
	if c.By != "" {
		if !r.o.Roles.accessFor(tenant, c.By, c.Roles, nil).Admin {
			ev := bridge.Event{
				Type: bridge.EventRefused, Tenant: tenant, JobID: job, QuestionID: c.QuestionID, To: c.By, By: c.By,
				Reason: bridge.RefusedForbidden, Text: "You can't cancel questions: that needs the admin or owner role.",
				ReplyTo: c.ReplyTo, At: now,
			}
			ev.EventID = fmt.Sprintf("%s.%s.%s.cancel-refused.%d", tenant, job, c.QuestionID, now.UnixNano())
			if err := r.st.Enqueue(ctx, []store.Message{eventMsg(ev)}); err != nil {
				return err
			}
			r.metrics.refusals.WithLabelValues(bridge.RefusedForbidden).Inc()
			r.wakeRelay()
			return nil
		}
	}
	ended, err := r.st.Cancel(ctx, store.JobCancel{
		Tenant: tenant, JobID: job, QuestionID: c.QuestionID, NewVersion: c.TaskVersion,
		Reason: c.Reason, By: c.By, Via: platformOf(c.By), At: now,
		Outbox: func(rec *store.Record) []store.Message {
			refs, _ := r.st.Messages(ctx, rec.ID)
			text := bridge.CancelledText(c.Reason)
			if rec.State == bridge.StateSuperseded {
				text = bridge.SupersededText(c.TaskVersion)
			}
			return endedMessages(rec, rec.State, text, refs, now)
		},
	})
	if err != nil {
		return err
	}
	for _, rec := range ended {
		r.metrics.settled.WithLabelValues(rec.State).Inc()
	}
	if len(ended) > 0 {
		r.wakeRelay()
	}
	r.log.Info("cancel applied", "tenant", tenant, "job", job, "question", c.QuestionID, "version", c.TaskVersion, "ended", len(ended))
	return nil
}
