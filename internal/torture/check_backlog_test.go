package torture

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
)

// TestBacklogIsStuckOnlyWhenItStays: rows the outbox wrote after the run
// settled (reminders of questions still waiting) are relayed a moment
// later, and the check does not call them stuck; rows still unsent after
// the grace are.
func TestBacklogIsStuckOnlyWhenItStays(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		backlogs []int64 // what each stats request answers; the last repeats
		want     int64
	}{
		{"relayed a moment later", []int64{2, 1, 0}, 0},
		{"none", []int64{0}, 0},
		{"stuck", []int64{2}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, err := bridge.ConnectNATS(context.Background(), bridge.NATSOptions{Listen: "127.0.0.1:0", StoreDir: filepath.Join(t.TempDir(), "nats")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(n.Close)
			var mu sync.Mutex
			asked := 0
			sub, err := n.Conn.Subscribe(bridge.APIStats, func(m *nats.Msg) {
				mu.Lock()
				backlog := tc.backlogs[min(asked, len(tc.backlogs)-1)]
				asked++
				mu.Unlock()
				reply, _ := json.Marshal(bridge.StatsReply{ByState: map[string]int64{}, OutboxBacklog: backlog})
				_ = m.Respond(reply)
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sub.Unsubscribe() })
			r := &run{out: io.Discard, start: time.Now(), nc: n.Conn, backlogGrace: time.Second}
			got, err := r.stuckBacklog(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if got != tc.want {
				t.Fatalf("stuck backlog %d after %d reads of %v, want %d", got, asked, tc.backlogs, tc.want)
			}
			if tc.want == 0 && asked != len(tc.backlogs) {
				t.Fatalf("%d reads, want %d: it stops at the first empty backlog", asked, len(tc.backlogs))
			}
		})
	}
}
