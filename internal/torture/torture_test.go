package torture_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/internal/torture"
)

// buildAskbridge builds cmd/askbridge from the module root into dir.
func buildAskbridge(t *testing.T, dir string) string {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	bin := filepath.Join(dir, "askbridge")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/askbridge")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/askbridge: %v\n%s", err, out)
	}
	return bin
}

// TestTortureShort is the CI variant of 'askbridge torture': questions and
// answers for 8 s, and on until the real server process has been SIGKILLed
// (every ~2.5 s) and restarted on the same data directory three times.
func TestTortureShort(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 torture test: skipped with -short")
	}
	tmp := t.TempDir()
	bin := buildAskbridge(t, tmp)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	serverLog := &testenv.LockedBuffer{}
	rep, err := torture.Run(ctx, torture.Options{
		Binary:    bin,
		DataDir:   filepath.Join(tmp, "data"),
		Duration:  8 * time.Second,
		Rate:      30,
		KillEvery: 2500 * time.Millisecond,
		MinKills:  3,
		ShortMin:  2 * time.Second,
		ShortMax:  4 * time.Second,
		Progress:  &progress,
		ServerLog: serverLog,
	})
	t.Logf("progress:\n%s", progress.String())
	if err != nil || len(rep.Violations) > 0 {
		t.Logf("server log (level warn):\n%s", serverLog.String())
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
