package bridge

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// EventConsumer is the durable consumer through which the chat adapter of
// platform reads the events stream: named after the platform, every event
// from the stream's first, acknowledged one by one.
//
// The events stream keeps an event until every such consumer has
// acknowledged it, and drops one published while none exists. So the
// runtime makes the consumers of the platforms switched on before it
// publishes anything, and when one is made anew it asks that platform's
// pending questions again (runtime/eventconsumers.go); the adapter makes
// its consumer again when it is gone (Durable). Both take the
// configuration from here (docs/design.md).
func EventConsumer(platform string) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       platform,
		Description:   "askbridge " + platform + " adapter",
		FilterSubject: PrefixEvent + ".>",
		AckPolicy:     jetstream.AckExplicitPolicy,
		// Handling an event may take a while: a post waits for its
		// channel's turn, and tries back off.
		AckWait: 2 * time.Minute,
		// Events in hand, jobs put aside, and events whose acknowledgement
		// waits for their delivery report to be synced (engine.AckAfter): a
		// few seconds' worth at the asking path's pace.
		MaxAckPending: 8192,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
}
