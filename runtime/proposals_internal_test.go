package runtime

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/store/record"
)

// TestApprovalAfterTheExpiryIsRefused checks an approve or deny decided
// after the proposal's expires_at, before the ladder ended its question,
// is refused saying it expired.
func TestApprovalAfterTheExpiryIsRefused(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	n, err := bridge.ConnectNATS(ctx, bridge.NATSOptions{StoreDir: filepath.Join(dir, "nats"), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	st, err := store.Open(ctx, filepath.Join(dir, "askbridge.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r, err := New(Options{NATS: n, Store: st, Roles: Roles{Operators: []string{"slack:UOP"}}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	expiry := now.Add(time.Minute)
	q := &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 1, Kind: bridge.KindApproval,
		Question: "May I refund?", Proposal: &bridge.Proposal{ID: "pr_1", Action: "refund", Summary: []string{"Refund $5"}, ExpiresAt: expiry}}
	nq, err := r.newQuestion(ctx, q, now)
	if err != nil {
		t.Fatal(err)
	}
	if !nq.Deadline.Equal(expiry) {
		t.Fatalf("deadline %s, want the expiry %s", nq.Deadline, expiry)
	}
	if _, err := st.Ask(ctx, nq); err != nil {
		t.Fatal(err)
	}
	for _, action := range []string{bridge.ActionApprove, bridge.ActionDeny} {
		it := &attemptItem{tenant: "acme", job: "job-1", a: bridge.AnswerAttempt{Tenant: "acme", JobID: "job-1", QuestionID: "q-1",
			AttemptID: action, Action: action, By: "slack:UOP"}}
		_, err := st.DecideEach(ctx, 1, func(_ int, l record.Lookup) (record.Decision, error) {
			return record.Decision{}, r.decideItem(ctx, l, it, expiry)
		})
		if err != nil {
			t.Fatal(err)
		}
		want := "This proposal (pr_1) expired at " + expiry.Format(time.RFC3339) + "; it can no longer be approved or denied."
		if it.ref == nil || it.ref.reason != bridge.RefusedExpired || it.ref.text != want {
			t.Fatalf("%s: refusal %+v", action, it.ref)
		}
	}
}
