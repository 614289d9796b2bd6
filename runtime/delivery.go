package runtime

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// deliveryStore is what delivery reports need: the question reported on,
// and a place to record where it is shown.
type deliveryStore interface {
	Find(ctx context.Context, k record.Key) (*record.Record, error)
	RecordDelivery(ctx context.Context, question int64, d bridge.Delivery, at time.Time) ([]record.DeliveryRow, error)
	RecordDeliveries(ctx context.Context, reports []record.ReportedDelivery, at time.Time) error
	Enqueue(ctx context.Context, msgs []record.Message) error
}

// handleDeliveries stores where the platforms showed questions: the cards
// shown in one transaction (one commit for the batch, as questions are
// asked), and each failure on its own, failing the job loudly when every
// platform that was to show the question could not.
func (r *Runtime) handleDeliveries(ctx context.Context, msgs []jetstream.Msg) error {
	now := r.stamp()
	var shown []record.ReportedDelivery
	flush := func() error {
		if len(shown) == 0 {
			return nil
		}
		if err := r.reports.RecordDeliveries(ctx, shown, now); err != nil {
			return err
		}
		for _, s := range shown {
			r.metrics.deliveries.WithLabelValues(r.metrics.frontEnd(s.Delivery.Platform), "ok").Inc()
		}
		shown = shown[:0]
		return nil
	}
	for _, msg := range msgs {
		d, rec, err := r.readDelivery(ctx, msg)
		switch {
		case err != nil:
			return err
		case rec == nil:
			continue // dropped, and logged
		case d.OK:
			shown = append(shown, record.ReportedDelivery{Question: rec.ID, Delivery: d})
			continue
		}
		// In order: a failure after a card shown, of one question and
		// platform, is the latest report.
		if err := flush(); err != nil {
			return err
		}
		if err := r.recordFailedDelivery(ctx, rec, d, now); err != nil {
			return err
		}
	}
	return flush()
}

// readDelivery reads a delivery report and the question it reports on;
// rec is nil for a report dropped (malformed, or about no question of its
// version), which is logged.
func (r *Runtime) readDelivery(ctx context.Context, msg jetstream.Msg) (bridge.Delivery, *record.Record, error) {
	var d bridge.Delivery
	if err := json.Unmarshal(msg.Data(), &d); err != nil || !bridge.ValidToken(d.Tenant) || !bridge.ValidToken(d.JobID) || !bridge.ValidToken(d.QuestionID) || d.Platform == "" {
		r.log.Warn("malformed delivery report dropped", "subject", msg.Subject())
		return d, nil, nil
	}
	key := record.Key{Tenant: d.Tenant, JobID: d.JobID, QuestionID: d.QuestionID, TaskVersion: d.TaskVersion}
	if d.OK && d.TaskVersion != 0 {
		if id, ok := r.recorded.Get(key.String()); ok {
			// A card shown, of a question this runtime recorded lately:
			// its row id is all the report needs, and a key's never changes.
			return d, &record.Record{ID: id, Key: key}, nil
		}
	}
	rec, err := r.reports.Find(ctx, key)
	if err == record.ErrNotFound {
		r.log.Warn("delivery report for an unknown question", "tenant", d.Tenant, "job", d.JobID, "question", d.QuestionID)
		return d, nil, nil
	}
	if err != nil {
		return d, nil, err
	}
	if rec.TaskVersion != d.TaskVersion {
		// A report for a question asked without a version, which was
		// asked again since (Find gives the latest version): that question
		// has ended, and its card says nothing about the new one's.
		r.log.Info("delivery report for a question asked again since; dropped", "tenant", d.Tenant, "job", d.JobID, "question", d.QuestionID, "platform", d.Platform)
		return d, nil, nil
	}
	return d, rec, nil
}

// recordFailedDelivery stores a platform's failure to show a question, and
// fails the job loudly when every platform that was to show it could not.
func (r *Runtime) recordFailedDelivery(ctx context.Context, rec *record.Record, d bridge.Delivery, now time.Time) error {
	if d.Failure == nil {
		d.Failure = &bridge.Failure{Code: bridge.CodeSourceUnreliable, Dependency: d.Platform, Operation: "post_question", OperatorMessage: d.Platform + " could not show the question."}
	}
	all, err := r.reports.RecordDelivery(ctx, rec.ID, d, now)
	if err != nil {
		return err
	}
	result := "other"
	if knownFailureCodes[d.Failure.Code] {
		result = d.Failure.Code
	}
	r.metrics.deliveries.WithLabelValues(r.metrics.frontEnd(d.Platform), result).Inc()
	if rec.State != bridge.StatePending {
		return nil
	}
	r.log.Warn("question could not be delivered", "tenant", rec.Tenant, "job", rec.JobID, "question", rec.QuestionID, "platform", d.Platform, "code", d.Failure.Code)
	q := decodeBody(rec)
	failed := map[string]bool{}
	for _, row := range all {
		if row.OK {
			return r.announceDeliveryFailure(ctx, rec, d, now)
		}
		failed[row.Platform] = true
	}
	for _, p := range r.expectedPlatforms(q) {
		if !failed[p] {
			// Another platform may still show it.
			return r.announceDeliveryFailure(ctx, rec, d, now)
		}
	}
	f := *d.Failure
	return r.failQuestion(ctx, rec, &f, d.Platform, now)
}

// announceDeliveryFailure tells the front-ends one platform failed while the
// question still waits elsewhere.
func (r *Runtime) announceDeliveryFailure(ctx context.Context, rec *record.Record, d bridge.Delivery, now time.Time) error {
	ev := eventFor(rec, bridge.EventDeliveryFailed, now)
	ev.EventID += "." + d.Platform
	ev.Via = d.Platform
	ev.Failure = d.Failure
	ev.State = bridge.StatePending
	if err := r.reports.Enqueue(ctx, []record.Message{eventMsg(ev)}); err != nil {
		return err
	}
	r.wakeRelay()
	return nil
}
