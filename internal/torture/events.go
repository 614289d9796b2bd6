package torture

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// eventsConsumer names the run's durable consumer on the events stream.
func (r *run) eventsConsumer() string { return "torture-" + r.runID }

// keepEvents makes the run's consumer on the events stream before the
// load. The stream keeps an event only until every consumer has it, and
// none while there is no consumer (docs/contract.md "Streams"); this one
// reads nothing until the check, so the stream keeps every event of the
// run for it.
func (r *run) keepEvents(ctx context.Context) error {
	var filters []string
	for _, tenant := range r.tenants() {
		filters = append(filters, bridge.EventSubject(tenant, ">"))
	}
	_, err := r.js.CreateOrUpdateConsumer(ctx, bridge.StreamEvents, jetstream.ConsumerConfig{
		Durable: r.eventsConsumer(), Description: "askbridge torture: this run's events, read back by its check",
		FilterSubjects: filters, AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("consumer %s on %s: %w", r.eventsConsumer(), bridge.StreamEvents, err)
	}
	return nil
}

// dropEvents deletes the run's consumer, once: the events it held go.
func (r *run) dropEvents() {
	if r.dropped {
		return
	}
	r.dropped = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.js.DeleteConsumer(ctx, bridge.StreamEvents, r.eventsConsumer()); err != nil {
		r.logf("could not delete consumer %s on %s: %v", r.eventsConsumer(), bridge.StreamEvents, err)
	}
}

// readEvents reads every event the run's consumer holds.
func (r *run) readEvents(ctx context.Context, each func(m *jetstream.MsgMetadata, data []byte) error) error {
	cons, err := r.js.Consumer(ctx, bridge.StreamEvents, r.eventsConsumer())
	if err != nil {
		return fmt.Errorf("stream %s: %w", bridge.StreamEvents, err)
	}
	if cons.CachedInfo().NumPending == 0 {
		return nil
	}
	return r.readAll(ctx, bridge.StreamEvents, cons, func(m *jetstream.MsgMetadata) bool { return m.NumPending == 0 }, each)
}
