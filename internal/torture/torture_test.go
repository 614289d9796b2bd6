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
	"github.com/askbridge/askbridge/internal/testenv/testmain"
	"github.com/askbridge/askbridge/internal/torture"
)

// bin is cmd/askbridge, built once for the package's tests by TestMain.
var bin string

func TestMain(m *testing.M) {
	testmain.Exit(func() int {
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
		return testmain.Run(m, 0)
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

// cardHang is the tests' bound on a card's coming: it detects a card that
// never comes, and measures nothing.
const cardHang = time.Minute

// TestTortureShort is the CI variant of 'askbridge torture': questions,
// shown on a fake Slack and answered by clicks and on NATS, for 8 s, and on
// until the real server process has been SIGKILLed (every ~2.5 s, every
// other kill aimed at a click in flight) and restarted on the same data
// directory three times.
func TestTortureShort(t *testing.T) {
	t.Parallel()
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
		// Only a card that never comes fails the test: how soon cards come
		// is the command's figure (docs/benchmarks.md), which a loaded
		// machine would turn into a coin toss here.
		CardWithin: cardHang,
	})
	if rep.Kills < 3 {
		t.Errorf("%d kills; want at least 3", rep.Kills)
	}
	if rep.AnswersAcked == 0 || rep.AckedAcrossKills == 0 {
		t.Errorf("answers acked %d, across kills %d; want some of each", rep.AnswersAcked, rep.AckedAcrossKills)
	}
	checkShown(t, rep)
}

// checkShown checks what every variant must show besides no violation:
// every question stored, cards shown and clicked, questions timed out and
// ladders climbed, kills aimed at clicks.
func checkShown(t *testing.T, rep *torture.Report) {
	t.Helper()
	if rep.Asked == 0 || rep.Stored != rep.Asked {
		t.Errorf("asked %d, stored %d", rep.Asked, rep.Stored)
	}
	if rep.Cards == 0 || rep.ClicksAcked == 0 {
		t.Errorf("%d cards, %d clicks acked; want some of each", rep.Cards, rep.ClicksAcked)
	}
	if rep.AimedKills == 0 {
		t.Errorf("no kill was aimed at a click")
	}
	if rep.TimedOut+rep.Failed == 0 || rep.LadderSteps == 0 {
		t.Errorf("timed out %d, failed %d, ladder steps %d: the run should time questions out and climb ladders",
			rep.TimedOut, rep.Failed, rep.LadderSteps)
	}
	// The figures are measured: every settling answer, every step.
	if rep.ResumesMeasured != rep.Settled || rep.StepsMeasured < rep.LadderSteps {
		t.Errorf("%d answers measured to their resume of %d settled, %d ladder steps measured of %d fired",
			rep.ResumesMeasured, rep.Settled, rep.StepsMeasured, rep.LadderSteps)
	}
}

// TestTortureClusterShort is the CI variant of 'askbridge torture
// --cluster': two askbridge replicas (ASK_STORE=jetstream) on a 3-node
// NATS cluster, questions shown on a fake Slack and answered by signed
// clicks on a random replica for 6 s, and on until a replica has been
// SIGKILLed under a click and another with a NATS node, and restarted.
func TestTortureClusterShort(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kill -9 cluster torture test: skipped with -short")
	}
	rep := runTorture(t, 4*time.Minute, torture.Options{
		DataDir:    filepath.Join(t.TempDir(), "data"),
		Replicas:   2,
		Duration:   6 * time.Second,
		Rate:       15,
		KillEvery:  3 * time.Second,
		MinKills:   2,
		ShortMin:   2 * time.Second,
		ShortMax:   4 * time.Second,
		CardWithin: cardHang,
	})
	if rep.Kills < 2 || rep.NodeKills < 1 {
		t.Errorf("%d replica kills, %d NATS node kills; want two and one", rep.Kills, rep.NodeKills)
	}
	if rep.AnswersAcked == 0 || rep.Settled == 0 {
		t.Errorf("answers acked %d, settled %d; want some of each", rep.AnswersAcked, rep.Settled)
	}
	checkShown(t, rep)
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
