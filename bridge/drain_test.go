package bridge

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/internal/testenv/poll"
)

// TestDrainReturnsWhatWasDelivered checks a drained pull hands its reader
// the events JetStream already delivered to it: dropped, as a stop drops
// them, they would come to the next reader only after the consumer's
// AckWait (two minutes here).
func TestDrainReturnsWhatWasDelivered(t *testing.T) {
	n := startNATS(t)
	ctx := context.Background()
	// The reader has a connection of its own, so what that connection
	// received is what was delivered to the reader: JetStream's count of
	// delivered events runs ahead of what reached the client.
	reader, err := ConnectNATS(ctx, NATSOptions{URL: n.ClientURL(), ConnOptions: []nats.Option{n.Admin()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reader.Close)
	nc := reader.Conn
	cfg := jetstream.ConsumerConfig{Durable: "drain-test", FilterSubject: PrefixEvent + ".>",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 2 * time.Minute, DeliverPolicy: jetstream.DeliverAllPolicy}
	d := &Durable{NATS: reader, Stream: StreamEvents, Config: cfg, HealEvery: time.Hour}
	// No heartbeat within the test: the connection receives the events alone.
	it, err := d.Messages(ctx, jetstream.PullMaxMessages(64), jetstream.PullExpiry(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	before := nc.Stats().InMsgs
	const events = 5
	for i := range events {
		if _, err := n.JS.Publish(ctx, fmt.Sprintf("%s.acme.job-1.q-%d", PrefixEvent, i), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	first, err := it.Next()
	if err != nil {
		t.Fatal(err)
	}
	_ = first.Ack()
	poll.CheckFor(t, poll.Patience, 10*time.Millisecond, func() error {
		if got := nc.Stats().InMsgs - before; got < events {
			return fmt.Errorf("%d events delivered to the client, want %d", got, events)
		}
		return nil
	})
	// A round trip: the client has handed each one to the pull.
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	it.Drain()
	got := 1
	for {
		m, err := it.Next()
		if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
			break
		}
		if err != nil {
			t.Fatalf("Next after Drain: %v", err)
		}
		got++
		_ = m.Ack()
	}
	if got != events {
		t.Errorf("Next returned %d events in all, want the %d delivered", got, events)
	}
}
