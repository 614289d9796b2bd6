package jsstore

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// TestDayMarksAreDroppedAtOpen: the day marks an older build wrote with
// each question are gone once a replica opens the record, and the
// questions are as they were.
func TestDayMarksAreDroppedAtOpen(t *testing.T) {
	t.Parallel()
	open := replicaServer(t)
	a := open()
	ctx := context.Background()
	r := mustAsk(t, a, newQ("job-1", "q-1", 1)).Record
	marks := []string{"askday.20261130", "asked.20261130.acme.job-1", "asked.20261201.acme.job-2"}
	for _, k := range marks {
		if _, err := a.kv.Put(ctx, k, nil); err != nil {
			t.Fatal(err)
		}
	}
	b := open()
	for _, k := range marks {
		if _, err := b.kv.Get(ctx, k); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Errorf("%s after a replica opened the record: %v, want it gone", k, err)
		}
	}
	if got, err := b.Get(ctx, r.ID); err != nil || got.JobID != "job-1" {
		t.Fatalf("the question after the purge: %+v, %v", got, err)
	}
	checkIndexes(t, b)
}
