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

// noticeStore is what notices need: the job's threads, and one
// transaction writing the job's trail and the outbox.
type noticeStore interface {
	RecordNotice(ctx context.Context, e record.LogEntry, noticeID string, msgs []record.Message) error
	JobThreads(ctx context.Context, tenant, job string) ([]bridge.MessageRef, error)
}

// handleNotice records a failure an agent reported on
// ask.v1.notice.<tenant>.<job> and announces it to the front-ends
// (docs/contract.md, "Notices"). A notice that is not valid is refused
// with a log line naming the field, and acked: the agent is told nothing,
// as a notice expects no reply. Every text is masked before it is stored,
// logged or shown.
func (r *Runtime) handleNotice(ctx context.Context, msg jetstream.Msg) error {
	tenant, job, ok := subjectKey(msg.Subject(), bridge.PrefixNotice)
	if !ok {
		r.metrics.noticesRefused.Inc()
		r.log.Warn("notice refused", "field", "subject", "problem", "the subject must be ask.v1.notice.<tenant>.<job>",
			"subject", bridge.Truncate(bridge.MaskSecrets(msg.Subject()), 200))
		return nil
	}
	n, err := bridge.DecodeNotice(msg.Data(), tenant, job)
	if err != nil {
		r.metrics.noticesRefused.Inc()
		r.log.Warn("notice refused", "tenant", tenant, "job", job, "field", problemField(err), "problem", err.Error())
		return nil
	}
	now := r.stamp()
	if n.NoticeID == "" {
		n.NoticeID = noticeIDOf(msg, now)
	}
	if n.At.IsZero() {
		n.At = now.UTC()
	}
	threads, err := r.notices.JobThreads(ctx, tenant, job)
	if err != nil {
		return err
	}
	body, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("runtime: encode notice: %w", err)
	}
	ev := bridge.Event{Type: bridge.EventNotice, EventID: noticeEventID(tenant, job, n.NoticeID), Tenant: tenant, JobID: job,
		Notice: n, Threads: threads, At: now.UTC()}
	err = r.notices.RecordNotice(ctx, record.LogEntry{Tenant: tenant, JobID: job, Body: body, At: now}, n.NoticeID, []record.Message{eventMsg(ev)})
	if errors.Is(err, record.ErrDuplicate) {
		r.log.Info("notice already recorded; redelivered", "tenant", tenant, "job", job, "notice", n.NoticeID)
		return nil
	}
	if err != nil {
		return err
	}
	r.metrics.notices.WithLabelValues(n.Code).Inc()
	r.wakeRelay()
	r.log.Info("notice recorded", "tenant", tenant, "job", job, "notice", n.NoticeID, "code", n.Code,
		"dependency", n.Dependency, "operation", n.Operation, "retryable", n.Retryable)
	return nil
}

// noticeEventID names a notice's event: one event per notice, however
// often its message is delivered.
func noticeEventID(tenant, job, noticeID string) string {
	return tenant + "." + job + ".notice." + noticeID
}

// noticeIDOf names a notice published without an id by its place in the
// stream and its time (as cancelEventID does): a redelivery has the same
// id, and a stream made anew, numbering from 1 again, gives a new one.
func noticeIDOf(msg jetstream.Msg, now time.Time) string {
	if meta, err := msg.Metadata(); err == nil {
		return fmt.Sprintf("n-%d-%d", meta.Sequence.Stream, meta.Timestamp.UnixNano())
	}
	return fmt.Sprintf("n-t%d", now.UnixNano())
}

// problemField is the field a refusal's first problem names
// ("operation: is required" names operation).
func problemField(err error) string {
	var ve *bridge.ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) == 0 {
		return "notice"
	}
	field, _, _ := strings.Cut(ve.Problems[0], ":")
	return field
}
