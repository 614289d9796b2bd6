package bridge

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge/principal"

	"github.com/askbridge/askbridge/internal/testenv/poll"
)

// eventsHeld is how many events ASK_EVENTS holds, and on how many subjects
// (each costs JetStream an index entry in memory).
func eventsHeld(t *testing.T, js jetstream.JetStream) (msgs uint64, subjects int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(PrefixEvent+".>"))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs, len(info.State.Subjects)
}

// ackEvents takes n events from an adapter's consumer and acknowledges them.
// Its waits only detect a hang: the fetch ends once it has n events, and
// may wait for a pin an earlier call let go of to lapse on a busy server.
func ackEvents(t *testing.T, js jetstream.JetStream, platform string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), poll.Patience)
	defer cancel()
	c, err := js.Consumer(ctx, StreamEvents, EventConsumer(platform).Durable)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.Fetch(n, jetstream.FetchMaxWait(poll.Patience/2), jetstream.FetchPriorityGroup(EventGroup))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
		got++
	}
	if got != n {
		t.Fatalf("%s: fetched %d events, want %d (%v)", platform, got, n, batch.Error())
	}
	// Each call reads as a new replica: this one lets go of the pin, as
	// an adapter that stops does.
	s, err := js.Stream(ctx, StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UnpinConsumer(ctx, EventConsumer(platform).Durable, EventGroup); err != nil {
		t.Fatal(err)
	}
}

func waitHeld(t *testing.T, js jetstream.JetStream, want uint64) {
	t.Helper()
	poll.CheckFor(t, poll.Patience, 10*time.Millisecond, func() error {
		if msgs, subjects := eventsHeld(t, js); msgs != want || subjects != int(want) {
			return fmt.Errorf("ASK_EVENTS holds %d events on %d subjects, want %d", msgs, subjects, want)
		}
		return nil
	})
}

// TestEventsStayUntilEveryAdapterHasThem checks the events stream's
// interest retention: an event stays while one adapter's consumer has
// not acknowledged it and goes once both have, and an event published
// while no consumer exists is not kept at all (why the runtime makes the
// consumers before it publishes).
func TestEventsStayUntilEveryAdapterHasThem(t *testing.T) {
	t.Parallel()
	n := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*poll.Patience)
	defer cancel()
	publish := func(job string) {
		t.Helper()
		if err := Publish(ctx, n.JS, EventSubject("acme", job), "ev-"+job, Event{Type: EventAsked, Tenant: "acme", JobID: job}); err != nil {
			t.Fatal(err)
		}
	}
	publish("job-none")
	waitHeld(t, n.JS, 0)

	for _, p := range []string{PlatformSlack, PlatformDiscord} {
		if _, err := n.JS.CreateOrUpdateConsumer(ctx, StreamEvents, EventConsumer(p)); err != nil {
			t.Fatal(err)
		}
	}
	publish("job-1")
	publish("job-2")
	waitHeld(t, n.JS, 2)
	ackEvents(t, n.JS, PlatformSlack, 2)
	waitHeld(t, n.JS, 2) // Discord has not read them
	ackEvents(t, n.JS, PlatformDiscord, 1)
	waitHeld(t, n.JS, 1)
	ackEvents(t, n.JS, PlatformDiscord, 1)
	waitHeld(t, n.JS, 0)
}

// TestLimitsEventsStreamBecomesInterest checks an events stream made with
// limits retention (by an earlier askbridge) is turned into an interest
// stream at start: what both adapters acknowledged goes, what one has not
// stays for it.
func TestLimitsEventsStreamBecomesInterest(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*poll.Patience)
	defer cancel()
	dir := t.TempDir()
	keys, err := principal.LoadOrCreateKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := StartEmbedded(NATSOptions{StoreDir: dir, Listen: "127.0.0.1:0"}, keys)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := keys.Mint(principal.Spec{Kind: principal.KindAdmin, Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns), nats.UserJWTAndSeed(admin.JWT, admin.Seed))
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: StreamEvents, Subjects: []string{PrefixEvent + ".>"},
		Storage: jetstream.FileStorage, Retention: jetstream.LimitsPolicy, MaxAge: EventRetention, Duplicates: DuplicateWindow}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{PlatformSlack, PlatformDiscord} {
		if _, err := js.CreateOrUpdateConsumer(ctx, StreamEvents, EventConsumer(p)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		job := fmt.Sprintf("job-%d", i)
		if err := Publish(ctx, js, EventSubject("acme", job), "ev-"+job, Event{Type: EventAsked, Tenant: "acme", JobID: job}); err != nil {
			t.Fatal(err)
		}
	}
	ackEvents(t, js, PlatformSlack, 3)
	ackEvents(t, js, PlatformDiscord, 1)
	if msgs, _ := eventsHeld(t, js); msgs != 3 {
		t.Fatalf("the limits stream holds %d events, want all 3", msgs)
	}
	nc.Close()
	ns.Shutdown()
	ns.WaitForShutdown()

	var logs syncBuffer
	n, err := ConnectNATS(ctx, NATSOptions{StoreDir: dir, Listen: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("ConnectNATS on a limits events stream: %v", err)
	}
	defer n.Close()
	s, err := n.JS.Stream(ctx, StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := s.CachedInfo().Config; cfg.Retention != jetstream.InterestPolicy || cfg.MaxAge != EventRetention {
		t.Errorf("events stream after the start: retention %v, max age %v; want interest, %v", cfg.Retention, cfg.MaxAge, EventRetention)
	}
	if !strings.Contains(logs.String(), "retention Limits -> Interest") {
		t.Errorf("the change is not logged:\n%s", logs.String())
	}
	waitHeld(t, n.JS, 2) // the two Discord has not acknowledged
	ackEvents(t, n.JS, PlatformDiscord, 2)
	waitHeld(t, n.JS, 0)
}

// TestConsumerCreatedIsKeptAcrossRestarts checks the creation time by
// which the runtime and the adapters tell a consumer made anew: the same
// after the server restarted, also when read from an update's consumer
// (the update's reply names the time the server loaded it).
func TestConsumerCreatedIsKeptAcrossRestarts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*poll.Patience)
	defer cancel()
	dir := t.TempDir()
	n, err := ConnectNATS(ctx, NATSOptions{StoreDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := n.JS.CreateOrUpdateConsumer(ctx, StreamEvents, EventConsumer(PlatformSlack))
	if err != nil {
		t.Fatal(err)
	}
	made := ConsumerCreated(ctx, c)
	n.Close()
	n, err = ConnectNATS(ctx, NATSOptions{StoreDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	c, err = n.JS.CreateOrUpdateConsumer(ctx, StreamEvents, EventConsumer(PlatformSlack))
	if err != nil {
		t.Fatal(err)
	}
	if got := ConsumerCreated(ctx, c); !got.Equal(made) {
		t.Errorf("after a restart the consumer was made at %v, before at %v", got, made)
	}
}
