package jsstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/testenv/poll"
	"github.com/askbridge/askbridge/store/record"
)

// TestOneReplicaHoldsTheRelay: of two replicas claiming the relay, the
// first holds it and renews it while the other is refused; given up, it
// goes to the other at its next claim; left unrenewed, it lapses on the
// server's clock and goes to the other as well.
func TestOneReplicaHoldsTheRelay(t *testing.T) {
	t.Parallel()
	open := replicaServer(t)
	a, b := open(), open()
	ctx := context.Background()
	claim := func(s *Store, holder string, ttl time.Duration) bool {
		t.Helper()
		held, err := s.HoldRelay(ctx, holder, ttl)
		if err != nil {
			t.Fatalf("%s claims the relay: %v", holder, err)
		}
		return held
	}
	if !claim(a, "a", time.Minute) {
		t.Fatal("the first claim was refused")
	}
	if claim(b, "b", time.Minute) {
		t.Fatal("b holds the relay a holds")
	}
	if !claim(a, "a", time.Minute) {
		t.Fatal("a could not renew its claim")
	}
	if err := b.ReleaseRelay(ctx, "b"); err != nil || claim(b, "b", time.Minute) {
		t.Fatalf("b gave up a claim it never had (%v) and took a's", err)
	}
	if err := a.ReleaseRelay(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if !claim(b, "b", time.Second) {
		t.Fatal("b was refused the relay a gave up")
	}
	if claim(a, "a", time.Minute) {
		t.Fatal("a took the relay back while b held it")
	}
	// b stops renewing: its one-second claim lapses on the server.
	poll.CheckFor(t, poll.Patience, 50*time.Millisecond, func() error {
		if !claim(a, "a", time.Minute) {
			return fmt.Errorf("a is still refused the relay b stopped renewing")
		}
		return nil
	})
}

// TestOutboxChangedForAnotherReplicasRows: a replica's relay is woken by
// rows another replica wrote.
func TestOutboxChangedForAnotherReplicasRows(t *testing.T) {
	t.Parallel()
	open := replicaServer(t)
	a, b := open(), open()
	changed := a.OutboxChanged()
	if err := b.Enqueue(context.Background(), []record.Message{{Subject: "ask.v1.event.acme.job-1", Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(poll.Patience):
		t.Fatal("no signal for a row another replica wrote")
	}
}
