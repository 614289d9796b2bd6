package bridge

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

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
	cfg := jetstream.ConsumerConfig{Durable: "drain-test", FilterSubject: PrefixEvent + ".>",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 2 * time.Minute, DeliverPolicy: jetstream.DeliverAllPolicy}
	d := &Durable{NATS: n, Stream: StreamEvents, Config: cfg}
	it, err := d.Messages(ctx, jetstream.PullMaxMessages(64))
	if err != nil {
		t.Fatal(err)
	}
	const events = 5
	for i := range events {
		if _, err := n.JS.Publish(ctx, fmt.Sprintf("%s.acme.job-1.q-%d", PrefixEvent, i), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	// The client pulls once it is first read.
	first, err := it.Next()
	if err != nil {
		t.Fatal(err)
	}
	_ = first.Ack()
	c, err := n.JS.Consumer(ctx, StreamEvents, cfg.Durable)
	if err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, poll.Patience, 10*time.Millisecond, func() error {
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumAckPending+int(info.AckFloor.Consumer) != events {
			return fmt.Errorf("%d events delivered to the client, want %d", info.NumAckPending+int(info.AckFloor.Consumer), events)
		}
		return nil
	})
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
