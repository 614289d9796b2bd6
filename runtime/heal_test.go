package runtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// TestDeletedConsumersAndStreamsAreMadeAgain checks the runtime goes on
// after its consumers, its streams and its lease bucket were deleted (as
// when the NATS server restarted without its store): a deleted consumer
// used to end the runtime's consumption for good, until a restart.
func TestDeletedConsumersAndStreamsAreMadeAgain(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	// The runtime's warnings and errors say why a heal did not happen;
	// shown only when the test fails.
	logs := &testenv.LockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("runtime log:\n%s", logs)
		}
	})
	// The runtime looks for its streams, and renews its lease, every 100 ms
	// rather than every 5 s: most deletes here are noticed only by that
	// look, and the lease bucket's only by the renewal.
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock, HealEvery: 100 * time.Millisecond, LeaseRenew: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	ctx := context.Background()
	ask := func(job string) {
		t.Helper()
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		q := choiceQuestion(job)
		q.Timeout = "1s"
		var out *bridge.Resume
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			out, err = env.Agent.Ask(actx, q)
		}()
		clock.AdvanceUntil(t, 100*time.Millisecond, testenv.Patience, func() error {
			select {
			case <-done:
				return nil
			default:
				return fmt.Errorf("no outcome yet; %s", env.WhereIs(q))
			}
		})
		if err != nil || out.Outcome != bridge.OutcomeTimedOut {
			t.Fatalf("%s: outcome %+v, %v", job, out, err)
		}
	}
	ask("job-before")

	// A consumer deleted on its own: its Consume ends for good.
	if err := env.NATS.JS.DeleteConsumer(ctx, bridge.StreamQuestions, "runtime-questions"); err != nil {
		t.Fatal(err)
	}
	ask("job-consumer")

	// Every stream and the lease bucket gone, a few at a time, each group
	// made again before the next goes: a delete that overlaps the heal's
	// create of the same stream can leave nats-server (v2.15.2) holding a
	// stream whose directory is gone, which no create or update mends (a
	// server race, not the runtime's). A group's deletes are answered long
	// before the heal's pause (bridge.EnsureStreams) ends, and each group
	// costs one pause, not one a stream. All at once, as a server that
	// lost its store, is TestExternalNATSWipedStore in cmd/askbridge.
	for group := range slices.Chunk(append(bridge.StreamNames(), "KV_"+runtime.RuntimeBucket), 4) {
		for _, s := range group {
			if err := env.NATS.JS.DeleteStream(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		testenv.CheckFor(t, testenv.Patience, 50*time.Millisecond, func() error {
			if err := bridge.CheckStreams(ctx, env.NATS.JS); err != nil {
				return err
			}
			return env.Runtime.Check(ctx)
		})
	}
	ask("job-streams")
	// The lease is held again.
	testenv.CheckFor(t, testenv.Patience, 50*time.Millisecond, func() error {
		kv, err := env.NATS.JS.KeyValue(ctx, runtime.RuntimeBucket)
		if err != nil {
			return err
		}
		if _, err := kv.Get(ctx, "lease"); err != nil {
			return fmt.Errorf("lease: %w", err)
		}
		return nil
	})
}
