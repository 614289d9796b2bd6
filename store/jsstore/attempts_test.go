package jsstore

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/store/record"
)

// An attempt's key goes on its own after as long as the runtime keeps
// attempt ids (runtime/prune.go: 31 days): the bucket deletes it, no prune
// lists it.
func TestAttemptKeysExpire(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	rec := mustAsk(t, s, newQ("job-1", "q-1", 1)).Record
	if errs, err := s.Decide(ctx, []record.Decision{{Refuse: &record.Refusal{AttemptID: "a-1", Question: rec.ID, At: t0}}}); err != nil || errs[0] != nil {
		t.Fatalf("refuse: %v %v", errs, err)
	}
	if s.AttemptExpiry() != 31*24*time.Hour {
		t.Errorf("attempt keys expire after %v, want the runtime's 31 days", s.AttemptExpiry())
	}
	m, err := s.stream.GetLastMsgForSubject(ctx, subjectPrefix+keyAttempt("a-1"))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Header.Get(jetstream.MsgTTLHeader); got != attemptTTL.String() {
		t.Errorf("the attempt's key has TTL %q, want %q", got, attemptTTL.String())
	}
}

// PruneAttempts deletes the old attempt keys written before keys expired
// on their own, and leaves the rest; once none that does not expire is
// left it notes so and lists nothing again.
func TestPruneAttemptsOfKeysThatDoNotExpire(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	legacy := func(id string, at time.Time) {
		t.Helper()
		data, _ := json.Marshal(map[string]time.Time{"at": at})
		if _, err := s.kv.Put(ctx, keyAttempt(id), data); err != nil {
			t.Fatal(err)
		}
	}
	rec := mustAsk(t, s, newQ("job-1", "q-1", 1)).Record
	if errs, err := s.Decide(ctx, []record.Decision{{Refuse: &record.Refusal{AttemptID: "expiring", Question: rec.ID, At: t0.Add(-40 * 24 * time.Hour)}}}); err != nil || errs[0] != nil {
		t.Fatalf("refuse: %v %v", errs, err)
	}
	legacy("old", t0.Add(-40*24*time.Hour))
	legacy("young", t0)
	kept := func(want map[string]bool) {
		t.Helper()
		for id, w := range want {
			if _, _, ok, err := s.get(ctx, keyAttempt(id)); err != nil || ok != w {
				t.Errorf("attempt %s kept = %v, %v; want %v", id, ok, err, w)
			}
		}
	}
	prune := func(before time.Time, want int64) {
		t.Helper()
		if n, err := s.PruneAttempts(ctx, before); err != nil || n != want {
			t.Fatalf("PruneAttempts(%v) = %d, %v; want %d", before, n, err, want)
		}
	}
	prune(t0.Add(-31*24*time.Hour), 1)
	kept(map[string]bool{"old": false, "young": true, "expiring": true})
	prune(t0.Add(time.Hour), 1)
	kept(map[string]bool{"young": false, "expiring": true})
	// None left that does not expire: a key written the old way now (a
	// replica not yet upgraded) is not read.
	legacy("late", t0.Add(-40*24*time.Hour))
	prune(t0.Add(time.Hour), 0)
	kept(map[string]bool{"late": true, "expiring": true})
}
