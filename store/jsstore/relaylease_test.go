package jsstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// TestTwoClaimsAtOnce: of two replicas claiming a free relay at the same
// moment one holds it; the other is refused or told its claim lost
// (ErrConflict), never that it holds it too.
func TestTwoClaimsAtOnce(t *testing.T) {
	t.Parallel()
	open := replicaServer(t)
	stores := []*Store{open(), open()}
	for round := range 10 {
		holders := make([]bool, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() {
				holders[i], errs[i] = s.HoldRelay(context.Background(), fmt.Sprint("r", round, "-", i), time.Minute)
			})
		}
		wg.Wait()
		if holders[0] == holders[1] {
			t.Fatalf("round %d: both hold the relay, or neither (%v, %v)", round, errs[0], errs[1])
		}
		for i, err := range errs {
			if err != nil && !errors.Is(err, ErrConflict) {
				t.Fatalf("round %d: claim %d: %v", round, i, err)
			}
		}
		// Free it for the next round.
		for i := range stores {
			if err := stores[i].ReleaseRelay(context.Background(), fmt.Sprint("r", round, "-", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestOutboxChangedForAnotherReplicasRows: a replica's relay is woken by
// rows another replica wrote.
func TestOutboxChangedForAnotherReplicasRows(t *testing.T) {
	t.Parallel()
	open := replicaServer(t)
	a, b := open(), open()
	changed := a.OutboxChanged()
	select {
	case <-changed: // the watch is made
	case <-time.After(poll.Patience):
		t.Fatal("no signal when the watch was made")
	}
	if err := b.Enqueue(context.Background(), []record.Message{{Subject: "ask.v1.event.acme.job-1", Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(poll.Patience):
		t.Fatal("no signal for a row another replica wrote")
	}
}
