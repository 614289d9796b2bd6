package jsstore

import (
	"context"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// TestDueChangedHearsOtherReplicas checks that a replica hears of a step
// another replica scheduled earlier than any it knew, and of the earliest
// step taken, and not of a step scheduled later than the earliest: its
// ladder wakes to read NextDue exactly when that moved.
func TestDueChangedHearsOtherReplicas(t *testing.T) {
	t.Parallel()
	open := replicaServer(t)
	a, b := open(), open()
	ctx := context.Background()
	changed := a.DueChanged()
	drain := func() {
		for {
			select {
			case <-changed:
			case <-time.After(200 * time.Millisecond):
				return
			}
		}
	}
	expect := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatalf("replica a did not hear %s", what)
		}
		drain()
	}
	drain()

	first := mustAsk(t, b, newQ("job-1", "q-1", 1))
	expect("the first step replica b scheduled")
	if next, ok, err := a.NextDue(ctx); err != nil || !ok || !next.Equal(t0.Add(time.Hour)) {
		t.Fatalf("NextDue = %v, %v, %v", next, ok, err)
	}

	later := newQ("job-2", "q-2", 1)
	later.Steps[0].Due = t0.Add(2 * time.Hour)
	mustAsk(t, b, later)
	select {
	case <-changed:
		t.Fatal("replica a woke for a step later than its earliest")
	case <-time.After(500 * time.Millisecond):
	}

	earlier := newQ("job-3", "q-3", 1)
	earlier.Steps[0].Due = t0.Add(time.Minute)
	third := mustAsk(t, b, earlier)
	expect("an earlier step replica b scheduled")

	for _, q := range []int64{third.Record.ID, first.Record.ID} {
		st := record.Settlement{Question: q, State: bridge.StateTimedOut, Text: "timed out", Reason: "timed out", At: t0.Add(time.Minute)}
		if err := b.Settle(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	expect("the earliest steps settled on replica b")
	if next, ok, err := a.NextDue(ctx); err != nil || !ok || !next.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("NextDue after settling = %v, %v, %v", next, ok, err)
	}
}
