package torture

import (
	"testing"
	"time"
)

// TestFoldedIntoAClickSentAfterIt: two clicks of the same button in
// flight together are handled in either order, so the one sent first can
// be the one folded (as a stress run saw: sent 10 ms before the other,
// answered 518 ms after it was sent). A click answered before the other
// was sent cannot be folded into it.
func TestFoldedIntoAClickSentAfterIt(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 6, 20, 13, 8, 795_000_000, time.UTC)
	q := &question{}
	newAttempt := func(id string, sent, acked time.Duration) *attempt {
		return &attempt{id: id, q: q, click: &click{value: "blue", lastReqAt: t0.Add(sent)},
			sent: true, acked: true, sentAt: t0.Add(sent), ackedAt: t0.Add(acked)}
	}
	for _, tc := range []struct {
		name         string
		first        *attempt // sent first; its own attempt never stored
		second       *attempt // sent after; stored and decided
		wantFoldedIn bool
	}{
		{"handled after the click sent after it", newAttempt("a", 0, 518*time.Millisecond), newAttempt("b", 10*time.Millisecond, 403*time.Millisecond), true},
		{"answered before the other was sent", newAttempt("a", 0, 5*time.Millisecond), newAttempt("b", 10*time.Millisecond, 403*time.Millisecond), false},
		{"past the fold window", newAttempt("a", 15*time.Second, 15*time.Second+time.Millisecond), newAttempt("b", 0, 10*time.Millisecond), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &run{attempts: []*attempt{tc.first, tc.second}}
			rb := &readBack{stored: map[string]time.Time{tc.second.id: tc.second.ackedAt},
				byAttempt: map[string][]streamMsg{tc.second.id: {{}}}}
			got := r.foldedInto(tc.first, rb)
			if (got == tc.second) != tc.wantFoldedIn {
				t.Fatalf("folded into %v, want folded: %v", got, tc.wantFoldedIn)
			}
		})
	}
}
