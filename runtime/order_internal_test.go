package runtime

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv/poll"
	"github.com/askbridge/askbridge/store"
)

func TestAttemptOrderAccountsForEarlierSequences(t *testing.T) {
	tests := []struct {
		name    string
		floor   uint64
		decided []uint64 // decided here before the batch
		batch   []uint64
		want    uint64 // the first sequence before the batch's last unaccounted for
	}{
		{"one runtime taking each in turn", 0, []uint64{1, 2, 3}, []uint64{4, 5}, 0},
		{"decided here out of order", 0, []uint64{1, 3, 2}, []uint64{4}, 0},
		{"below the consumer's floor", 10, nil, []uint64{11, 12}, 0},
		{"held by another replica", 0, []uint64{1, 2, 4}, []uint64{5}, 3},
		{"inside the batch", 0, []uint64{1, 2}, []uint64{3, 5, 6}, 4},
		{"a runtime just started", 0, nil, []uint64{1000}, 1},
		{"just started, the floor read", 999, nil, []uint64{1000}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &attemptOrder{}
			o.raise(tt.floor)
			o.decidedHere(tt.decided)
			if got := o.firstUnknown(tt.batch, tt.batch[len(tt.batch)-1]); got != tt.want {
				t.Errorf("firstUnknown = %d, want %d (floor %d, decided here %v)", got, tt.want, o.floor, o.done)
			}
		})
	}
}

func TestAttemptOrderFloorMovesOverWhatWasDecidedHere(t *testing.T) {
	o := &attemptOrder{}
	o.decidedHere([]uint64{1, 2, 4, 5})
	if o.floor != 2 || len(o.done) != 2 {
		t.Fatalf("floor %d, above it %v; want 2 and {4, 5}", o.floor, o.done)
	}
	o.raise(3) // the consumer's ack floor: 3 was decided elsewhere
	if o.floor != 5 || len(o.done) != 0 {
		t.Fatalf("floor %d, above it %v; want 5 and nothing", o.floor, o.done)
	}
}

// TestAttemptHandedBackWithEveryCopyOfIt checks that an attempt which must
// wait for an earlier one of its question is handed back with every copy
// of it in the batch: the same stored message delivered twice (its
// AckWait ran out while it was queued) must not be acknowledged through
// the second copy when the first is handed back, or the attempt would be
// acknowledged without ever being decided.
func TestAttemptHandedBackWithEveryCopyOfIt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), poll.Patience)
	defer cancel()
	n, err := bridge.ConnectNATS(ctx, bridge.NATSOptions{StoreDir: filepath.Join(t.TempDir(), "nats"), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "ask.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r, err := New(Options{NATS: n, Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if r.answers, err = n.JS.Stream(ctx, bridge.StreamAnswers); err != nil {
		t.Fatal(err)
	}
	cons, err := r.durableConsumer(ctx, bridge.StreamAnswers, r.durable(answersConsumer), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct{ id, answer string }{{"red", `"red"`}, {"blue", `"blue"`}} {
		at := bridge.AnswerAttempt{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 1, AttemptID: a.id,
			Answer: json.RawMessage(a.answer), By: "slack:UOP"}
		if err := bridge.Publish(ctx, n.JS, bridge.AnswerSubject("acme", "job-1"), "attempt-"+a.id, at); err != nil {
			t.Fatal(err)
		}
	}
	next := func() jetstream.Msg {
		t.Helper()
		m, err := cons.Next(jetstream.FetchMaxWait(poll.Patience))
		if err != nil {
			t.Fatalf("take an attempt: %v", err)
		}
		return m
	}
	if red := next(); !strings.Contains(string(red.Data()), `"red"`) {
		t.Fatalf("first taken: %s", red.Data()) // held by a replica that died: never acknowledged
	}
	first := next()
	// Its AckWait ran out: sent as the server does, not through first,
	// whose own acknowledgement is still to come.
	if err := n.Conn.Publish(first.Reply(), []byte("-NAK")); err != nil {
		t.Fatal(err)
	}
	again := next()
	for _, m := range []jetstream.Msg{first, again} {
		if meta, _ := m.Metadata(); meta == nil || meta.Sequence.Stream != 2 {
			t.Fatalf("took %s (%+v), want the blue attempt, sequence 2", m.Data(), meta)
		}
	}

	batch := []jetstream.Msg{r.hand.Hold(first), r.hand.Hold(again)}
	if err := r.decideAttempts(ctx, batch); err != nil {
		t.Fatal(err)
	}
	ackBatch(batch) // as consumeBatches does after a batch is decided
	for ctx.Err() == nil {
		m := next() // the red attempt may come back first, its AckWait over
		if meta, _ := m.Metadata(); meta != nil && meta.Sequence.Stream == 2 {
			return // handed back: it will be decided
		}
	}
	t.Fatal("the blue attempt never came back: it was acknowledged without a decision")
}
