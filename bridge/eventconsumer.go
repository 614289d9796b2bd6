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
//
// Every replica of an adapter pulls from the one consumer, in the priority
// group EventGroup with the pinned-client policy: JetStream hands the
// events to one replica (the pinned one) while it pulls, and to another
// once it has not pulled for EventPinnedTTL or unpinned itself on a stop.
// So one replica handles a job's events, in order, and posts its cards
// and threads (docs/design.md "Replicas"). A consumer made before the
// policy existed is updated in place by the adapter (Durable.Ensure): the
// server lets the priority settings change and keeps the consumer's
// acknowledgements.
func EventConsumer(platform string) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       platform,
		Description:   "askbridge " + platform + " adapter",
		FilterSubject: PrefixEvent + ".>",
		AckPolicy:     jetstream.AckExplicitPolicy,
		// Short, so that the events a dead replica held come to another
		// within seconds; the live one keeps what it holds in progress
		// however long it takes (InHand).
		AckWait: EventAckWait,
		// Events in hand, jobs put aside, and events whose acknowledgement
		// waits for their delivery report to be synced (engine.AckAfter): a
		// few seconds' worth at the asking path's pace.
		MaxAckPending: 8192,
		DeliverPolicy: jetstream.DeliverAllPolicy,

		PriorityPolicy: jetstream.PriorityPolicyPinned,
		PriorityGroups: []string{EventGroup},
		PinnedTTL:      EventPinnedTTL,
	}
}

// EventGroup is the priority group the adapters' replicas pull in.
const EventGroup = "adapters"

// EventPinnedTTL is how long the pinned replica of an adapter may go
// without pulling before JetStream pins another: a replica that died
// hands its adapter's events on after this long. A live replica pulls
// again every third of it (engine's pullExpiry), so it is two pulls'
// margin.
const EventPinnedTTL = 4 * time.Second

// EventAckWait is how long an event handed to a replica that goes silent
// stays with it. A live replica tells JetStream every third of it that
// each event it holds is still in hand (InProgress), from the moment it
// reads it to its acknowledgement, waits for a channel's turn and a
// platform's Retry-After included. It is longer than EventPinnedTTL: the
// pin has moved when the dead replica's events fall due again, so they go
// to the new replica in their order (JetStream turns its redelivery queue
// round while no pull of the pinned replica waits), docs/design.md
// "Failover". With the runtime's own failover (a question a dead replica
// held is asked within seconds) it keeps a card within 10 s of its
// question across a replica's death (docs/deploy.md).
const EventAckWait = 6 * time.Second
