package torture_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/internal/torture"
)

// bin is cmd/askbridge, built once for the package's tests by TestMain.
var bin string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "askbridge-torture-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if bin, err = buildAskbridge(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}())
}

// buildAskbridge builds cmd/askbridge from the module root into dir.
func buildAskbridge(dir string) (string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	bin := filepath.Join(dir, "askbridge")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/askbridge")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/askbridge: %w\n%s", err, out)
	}
	return bin, nil
}

// TestTortureShort is the CI variant of 'askbridge torture': questions and
// answers for 8 s, and on until the real server process has been SIGKILLed
// (every ~2.5 s) and restarted on the same data directory three times.
func TestTortureShort(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 torture test: skipped with -short")
	}
	rep := runTorture(t, 2*time.Minute, torture.Options{
		DataDir:   filepath.Join(t.TempDir(), "data"),
		Duration:  8 * time.Second,
		Rate:      30,
		KillEvery: 2500 * time.Millisecond,
		MinKills:  3,
		ShortMin:  2 * time.Second,
		ShortMax:  4 * time.Second,
	})
	if rep.Kills < 3 {
		t.Errorf("%d kills; want at least 3", rep.Kills)
	}
	if rep.AnswersAcked == 0 || rep.AckedAcrossKills == 0 {
		t.Errorf("answers acked %d, across kills %d; want some of each", rep.AnswersAcked, rep.AckedAcrossKills)
	}
	if rep.Asked == 0 || rep.Stored != rep.Asked {
		t.Errorf("asked %d, stored %d", rep.Asked, rep.Stored)
	}
	if rep.TimedOut+rep.Failed == 0 || rep.LadderSteps == 0 {
		t.Errorf("timed out %d, failed %d, ladder steps %d: the run should time questions out and climb ladders",
			rep.TimedOut, rep.Failed, rep.LadderSteps)
	}
}

// TestTortureClusterShort is the CI variant of 'askbridge torture
// --cluster': three askbridge replicas (ASK_STORE=jetstream) on a 3-node
// NATS cluster, questions and answers for 6 s and on until one replica and
// one NATS node have been SIGKILLed together and restarted.
func TestTortureClusterShort(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 cluster torture test: skipped with -short")
	}
	rep := runTorture(t, 3*time.Minute, torture.Options{
		DataDir:   filepath.Join(t.TempDir(), "data"),
		Replicas:  3,
		Duration:  6 * time.Second,
		Rate:      15,
		KillEvery: 3 * time.Second,
		MinKills:  1,
		ShortMin:  2 * time.Second,
		ShortMax:  4 * time.Second,
	})
	if rep.Kills < 1 || rep.NodeKills < 1 {
		t.Errorf("%d replica kills, %d NATS node kills; want at least one of each", rep.Kills, rep.NodeKills)
	}
	if rep.AnswersAcked == 0 || rep.Settled == 0 {
		t.Errorf("answers acked %d, settled %d; want some of each", rep.AnswersAcked, rep.Settled)
	}
	if rep.Asked == 0 || rep.Stored != rep.Asked {
		t.Errorf("asked %d, stored %d", rep.Asked, rep.Stored)
	}
	if rep.TimedOut+rep.Failed == 0 || rep.LadderSteps == 0 {
		t.Errorf("timed out %d, failed %d, ladder steps %d: the run should time questions out and climb ladders",
			rep.TimedOut, rep.Failed, rep.LadderSteps)
	}
}

// runTorture runs torture with the built binary within timeout, logs its
// progress (and the servers' warnings when it went wrong), and fails the
// test when the run fails, finds a violation, or loses or doubles an
// outcome. The caller checks what its variant must also show.
func runTorture(t *testing.T, timeout time.Duration, o torture.Options) *torture.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var progress bytes.Buffer
	serverLog := &testenv.LockedBuffer{}
	o.Binary, o.Progress, o.ServerLog = bin, &progress, serverLog
	rep, err := torture.Run(ctx, o)
	t.Logf("progress:\n%s", progress.String())
	if err != nil || len(rep.Violations) > 0 {
		t.Logf("servers' log (level warn):\n%s", serverLog.String())
	}
	if err != nil {
		t.Fatalf("torture run: %v", err)
	}
	t.Logf("%+v", *rep)
	for _, v := range rep.Violations {
		t.Errorf("violation: %s", v)
	}
	if rep.Lost != 0 || rep.Duplicates != 0 {
		t.Errorf("lost %d, duplicates %d; want none", rep.Lost, rep.Duplicates)
	}
	return rep
}
