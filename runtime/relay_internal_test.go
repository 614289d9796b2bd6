package runtime

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/store/record"
)

// TestMarkPublishedStopsAtTheFirstFailure checks a clean stop marks sent
// only the rows before the first one JetStream refused: a restart publishes
// again from that row, so every row after it must still be unsent, or the
// job would read a later event before an earlier one.
func TestMarkPublishedStopsAtTheFirstFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "ask.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	msgs := make([]record.Message, 5)
	for i := range msgs {
		msgs[i] = record.Message{Subject: "ask.v1.event.acme.job-1", Data: []byte{'a' + byte(i)}}
	}
	if err := st.Enqueue(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	rows, err := st.Unsent(ctx, 0, 10, time.Time{})
	if err != nil || len(rows) != 5 {
		t.Fatalf("rows %v, %v", rows, err)
	}
	id := func(i int) int64 { return rows[i].ID }
	rl := &relay{st: st}
	rl.pending = []publishedRow{{id: id(0)}}
	rl.inflight = []*relayBatch{
		// Row 1 acknowledged, row 2 refused.
		{rows: rows[1:3], done: 2, sent: []int64{id(1)}, failed: errors.New("maximum messages exceeded")},
		// Acknowledged after the refusal; must wait for row 2.
		{rows: rows[3:5], done: 2, sent: []int64{id(3), id(4)}},
	}
	r := &Runtime{outbox: rl}
	if err := r.MarkPublished(ctx); err != nil {
		t.Fatal(err)
	}
	left, err := st.Unsent(ctx, 0, 10, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, row := range left {
		got = append(got, row.ID)
	}
	want := []int64{id(2), id(3), id(4)}
	if !slices.Equal(got, want) {
		t.Fatalf("unsent after a clean stop = %v, want %v (from the refused row on)", got, want)
	}
}

func TestIsDuplicateInProcess(t *testing.T) {
	inProcess := &jetstream.APIError{Code: 409, ErrorCode: codeDuplicateInProcess, Description: "duplicate message id is in process"}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("publish ob-x-1: %w", inProcess), true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10077}, false},
		{errors.New("nats: timeout"), false},
		{nil, false},
	} {
		if got := isDuplicateInProcess(c.err); got != c.want {
			t.Errorf("isDuplicateInProcess(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
