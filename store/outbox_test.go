package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/store/record"
)

func TestOutboxMarkSentAndPrune(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	mustAsk(t, s, newQ("job-1", "q-1", 1))
	mustAsk(t, s, newQ("job-2", "q-1", 1))
	rows, _ := s.Unsent(ctx, 0, 10, time.Time{})
	if len(rows) != 2 || len(s.instance) != 16 || rows[0].MsgID() != fmt.Sprintf("ob-%s-%d", s.instance, rows[0].ID) {
		t.Fatalf("rows = %+v", rows)
	}
	// Another database's first row gets another message id.
	other := open(t)
	mustAsk(t, other, newQ("job-1", "q-1", 1))
	otherRows, _ := other.Unsent(ctx, 0, 10, time.Time{})
	if otherRows[0].ID != rows[0].ID || otherRows[0].MsgID() == rows[0].MsgID() {
		t.Fatalf("message ids %s and %s", otherRows[0].MsgID(), rows[0].MsgID())
	}
	if err := s.MarkSentThrough(ctx, rows[0].ID, t0); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.OutboxBacklog(ctx); n != 1 {
		t.Fatalf("backlog %d", n)
	}
	if n, err := s.PruneSent(ctx, t0.Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestOutboxIDsNeverGoBackAfterAPrune checks pruning every sent row
// leaves the newest, so that SQLite's next row id is above every id
// before it (the conformance suite's PruneSentKeepsIDsGoingUp checks the
// ids): the relay reads rows after the last id it published.
func TestOutboxIDsNeverGoBackAfterAPrune(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	if err := s.Enqueue(ctx, []record.Message{{Subject: "ev", Data: []byte("a")}, {Subject: "ev", Data: []byte("b")}}); err != nil {
		t.Fatal(err)
	}
	rows, _ := s.Unsent(ctx, 0, 10, time.Time{})
	last := rows[len(rows)-1].ID
	if err := s.MarkSentThrough(ctx, last, t0); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneSent(ctx, t0.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want every sent row but the newest", n, err)
	}
}

// TestPruneManyRows prunes more rows than one scan finds, and keeps what
// is not old yet or not sent yet.
func TestPruneManyRows(t *testing.T) {
	t.Parallel()
	s := open(t)
	s.pruneScan = 200
	ctx := context.Background()
	old, recent := 2*s.pruneScan+45, 7
	var ids []int64
	for len(ids) < old+recent+1 {
		var msgs []record.Message
		for range 100 {
			msgs = append(msgs, record.Message{Subject: "ev", Data: []byte("x")})
		}
		if err := s.Enqueue(ctx, msgs); err != nil {
			t.Fatal(err)
		}
		rows, err := s.Unsent(ctx, 0, 100000, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		ids = ids[:0]
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
	}
	// Old rows sent yesterday, a few sent just now, the last still unsent.
	if err := s.MarkSentThrough(ctx, ids[old-1], t0.Add(-24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSentThrough(ctx, ids[old+recent-1], t0); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneSent(ctx, t0.Add(-time.Hour)); err != nil || n != int64(old) {
		t.Fatalf("pruned %d, %v; want %d", n, err, old)
	}
	var left, unsent int64
	if err := s.w.QueryRowContext(ctx, "SELECT COUNT(*), COUNT(*) FILTER (WHERE sent_at IS NULL) FROM outbox").Scan(&left, &unsent); err != nil {
		t.Fatal(err)
	}
	if want := int64(len(ids) - old); left != want || unsent != want-int64(recent) {
		t.Fatalf("%d rows left (%d unsent), want %d (%d unsent)", left, unsent, want, want-int64(recent))
	}

	rec := mustAsk(t, s, newQ("job-1", "q-1", 1)).Record
	var ds []record.Decision
	for i := range old + recent {
		at := t0.Add(-48 * time.Hour)
		if i >= old {
			at = t0
		}
		ds = append(ds, record.Decision{Refuse: &record.Refusal{AttemptID: fmt.Sprint("a-", i), Question: rec.ID, At: at}})
	}
	if _, err := s.Decide(ctx, ds); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneAttempts(ctx, t0.Add(-time.Hour)); err != nil || n != int64(old) {
		t.Fatalf("pruned %d attempts, %v; want %d", n, err, old)
	}
	for _, i := range []int{0, old - 1, old, old + recent - 1} {
		if seen, _ := s.SeenAttempt(ctx, fmt.Sprint("a-", i)); seen != (i >= old) {
			t.Errorf("attempt a-%d seen = %v after the prune", i, seen)
		}
	}
}

// TestOutboxMsgID: the relay's Nats-Msg-Id is "ob-<instance>-<row id>",
// whatever the lengths (JetStream's duplicate window keys on it).
func TestOutboxMsgID(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100)
	for _, c := range []struct {
		row  record.OutboxRow
		want string
	}{
		{record.OutboxRow{ID: 1, Instance: "abc"}, "ob-abc-1"},
		{record.OutboxRow{ID: 123456789, Instance: "6f1c2a9e4b7d4e0f8a3b5c7d9e1f2a3b"}, "ob-6f1c2a9e4b7d4e0f8a3b5c7d9e1f2a3b-123456789"},
		{record.OutboxRow{ID: 9223372036854775807, Instance: long}, "ob-" + long + "-9223372036854775807"},
		{record.OutboxRow{}, "ob--0"},
	} {
		if got := c.row.MsgID(); got != c.want {
			t.Errorf("MsgID of %+v = %q, want %q", c.row, got, c.want)
		}
	}
}
