package torture

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/internal/testenv/cluster"
)

// TestCheckEarlyExitIsAViolation: a replica that exits before it is
// ready is started again, as its supervisor would, and the exit is a
// violation (a replica never exits for an election), counted in the
// report. The replica here is a program that always exits.
func TestCheckEarlyExitIsAViolation(t *testing.T) {
	t.Parallel()
	r := &run{out: io.Discard, start: time.Now(), nodes: &cluster.Cluster{},
		srvs: []*server{{bin: "false", httpAddr: "127.0.0.1:1", log: io.Discard}}, live: newLive(1)}
	rep := &Report{Kills: 2}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.restart(ctx, 0, rep) }()
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.problems) < 2 {
			return fmt.Errorf("%d problems, want two exits", len(r.problems))
		}
		return nil
	})
	cancel()
	if err := <-done; err == nil {
		t.Fatalf("restart of a program that always exits succeeded")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rep.EarlyExits < 2 || len(r.problems) != rep.EarlyExits {
		t.Fatalf("%d early exits, %d problems; want one problem an exit, two at least", rep.EarlyExits, len(r.problems))
	}
	if p := r.problems[0]; !strings.Contains(p, "replica r1 exited before it was ready (after 2 kills)") {
		t.Errorf("problem %q", p)
	}
}
