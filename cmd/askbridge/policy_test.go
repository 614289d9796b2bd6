package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

const (
	// onePolicy gates refunds in acme.
	onePolicy = "tenants:\n  acme:\n    actions:\n      refund: {require_approval: true, required_approvals: 2}\n"
	// twoPolicy replaces it: acme's refund is no longer gated; globex's
	// wire is.
	twoPolicy = "tenants:\n  acme:\n    actions:\n      delete_records: {require_approval: true}\n" +
		"      send_report: {}\n  globex:\n    actions:\n      wire: {require_approval: true, max_amount: 1000, currency: EUR}\n"
	// badPolicy has its problem on line 4.
	badPolicy = "tenants:\n  acme:\n    actions:\n      refund: {required_approvals: two}\n"
	badLine   = `:4: tenants.acme.actions.refund.required_approvals: must be a whole number of 1 or more, not "two"`
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// gateCodes asks the gate about refund and delete_records in a job of
// acme, as an agent does before calling them, and says what it answered:
// "refund=approval_required delete_records=allowed".
func gateCodes(t *testing.T, a *agent.Client) string {
	t.Helper()
	var out []string
	for _, tool := range []string{"refund", "delete_records"} {
		r, err := a.Gate(context.Background(), "acme", "job-policy", 1, tool)
		if err != nil {
			t.Fatalf("gate %s: %v", tool, err)
		}
		out = append(out, tool+"="+r.Code)
	}
	return strings.Join(out, " ")
}

const (
	gatedByOne = "refund=approval_required delete_records=allowed"
	gatedByTwo = "refund=allowed delete_records=approval_required"
)

// policyHelp is what askbridge policy -h prints.
const policyHelp = "Usage: askbridge policy check FILE\n\n" +
	"Check a policy file (ASK_POLICY, docs/contract.md \"The policy file\") without starting anything:\n" +
	"print \"FILE: ok (N tenants, M actions)\" and exit 0, or its first problem as FILE:LINE: ... and exit 2.\n"

func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good, two, bad := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "two.yaml"), filepath.Join(dir, "bad.yaml")
	writeFile(t, good, onePolicy)
	writeFile(t, two, twoPolicy)
	writeFile(t, bad, badPolicy)
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"one tenant, one action", []string{"policy", "check", good}, exitOK, good + ": ok (1 tenant, 1 action)\n", ""},
		{"two of each", []string{"policy", "check", two}, exitOK, two + ": ok (2 tenants, 3 actions)\n", ""},
		{"a bad file", []string{"policy", "check", bad}, exitConfig, "", bad + badLine + "\n"},
		{"no such file", []string{"policy", "check", filepath.Join(dir, "none.yaml")}, exitConfig, "",
			filepath.Join(dir, "none.yaml") + ": cannot read: no such file or directory\n"},
		{"a directory", []string{"policy", "check", dir}, exitConfig, "", dir + ": cannot read: is a directory\n"},
		{"no file", []string{"policy", "check"}, exitConfig, "", "askbridge policy check: name one file\n\n" + policyUsage},
		{"two files", []string{"policy", "check", good, two}, exitConfig, "", "askbridge policy check: name one file\n\n" + policyUsage},
		{"no command", []string{"policy"}, exitConfig, "", "askbridge policy: name a command: check FILE\n\n" + policyUsage},
		{"another command", []string{"policy", "load", good}, exitConfig, "",
			"askbridge policy: unknown command \"load\"; the command is check FILE\n\n" + policyUsage},
		{"help", []string{"policy", "-h"}, exitOK, policyHelp, ""},
		{"help after check", []string{"policy", "check", "--help"}, exitOK, policyHelp, ""},
		{"help policy", []string{"help", "policy"}, exitOK, policyHelp, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != tc.code || stdout.String() != tc.stdout || stderr.String() != tc.stderr {
				t.Fatalf("askbridge %s: exit %d\nstdout %q\nstderr %q\nwant exit %d\nstdout %q\nstderr %q",
					strings.Join(tc.args, " "), code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
			}
		})
	}
	var stderr bytes.Buffer
	if code := run([]string{"policy", "--no-such-flag"}, io.Discard, &stderr); code != exitConfig || !strings.Contains(stderr.String(), "flag provided but not defined: -no-such-flag") {
		t.Errorf("askbridge policy --no-such-flag: exit %d, stderr %q", code, stderr.String())
	}
	var stdout bytes.Buffer
	if run([]string{"help"}, &stdout, io.Discard); !strings.Contains(stdout.String(), "askbridge policy check FILE") {
		t.Errorf("the usage does not list policy check:\n%s", stdout.String())
	}
}

// TestServeRefusesABadPolicyWithExitCode2 checks a bad ASK_POLICY stops
// the service before anything starts, with one line naming the file, the
// line and the problem, and exit 2. It runs alone (no t.Parallel):
// askbridge serve reads the process environment, which t.Setenv sets.
func TestServeRefusesABadPolicyWithExitCode2(t *testing.T) {
	dir := t.TempDir()
	bad, missing := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "none.yaml")
	writeFile(t, bad, badPolicy)
	data := filepath.Join(dir, "data")
	t.Setenv("ASK_DATA_DIR", data)
	t.Setenv("ASK_HTTP_ADDR", "127.0.0.1:0")
	t.Setenv("ASK_NATS_LISTEN", "127.0.0.1:0")
	for path, want := range map[string]string{
		bad:     "askbridge: " + bad + badLine + "\n",
		missing: "askbridge: " + missing + ": cannot read: no such file or directory\n",
	} {
		t.Setenv("ASK_POLICY", path)
		var stderr bytes.Buffer
		code := run([]string{"serve"}, io.Discard, &stderr)
		if code != exitConfig || stderr.String() != want {
			t.Errorf("exit %d, stderr %q; want exit %d, %q", code, stderr.String(), exitConfig, want)
		}
		if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the data directory was made (%v): the service began starting", err)
		}
	}
}

// startPolicyService runs the service in-process as startTestService does,
// logging to the buffer returned.
func startPolicyService(t *testing.T, set func(*config.Config)) (*service, *testenv.LockedBuffer) {
	t.Helper()
	cfg := testConfig(t, set)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logs := &testenv.LockedBuffer{}
	s, err := startService(ctx, cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { s.stop(context.Background()) })
	return s, logs
}

// TestPolicyReload checks what SIGHUP does (reloadPolicy): a good file
// replaces the policy in force whole, and the gate answers by it; a bad or
// missing one is logged at ERROR with its line and the policy in force is
// kept.
func TestPolicyReload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, onePolicy)
	s, logs := startPolicyService(t, func(c *config.Config) { c.Policy = path })
	if !strings.Contains(logs.String(), fmt.Sprintf(`level=INFO msg="policy loaded" path=%s tenants=1 actions=1`, path)) {
		t.Errorf("the start does not log the policy:\n%s", logs)
	}
	if r, ok := s.policy.Load().Rule("acme", "refund"); !ok || !r.RequireApproval || r.Approvals() != 2 {
		t.Fatalf("acme's refund at start: %+v, %v", r, ok)
	}
	a := agentFor(t, s)
	if got := gateCodes(t, a); got != gatedByOne {
		t.Fatalf("the gate at start: %s, want %s", got, gatedByOne)
	}

	writeFile(t, path, twoPolicy)
	s.reloadPolicy()
	if _, ok := s.policy.Load().Rule("acme", "refund"); ok {
		t.Error("acme's refund is still gated: the old policy was merged, not replaced")
	}
	if r, ok := s.policy.Load().Rule("globex", "wire"); !ok || *r.MaxAmount != 1000 || r.Currency != "EUR" {
		t.Errorf("globex's wire after the reload: %+v, %v", r, ok)
	}
	if !strings.Contains(logs.String(), fmt.Sprintf(`level=INFO msg="policy reloaded" path=%s tenants=2 actions=3`, path)) {
		t.Errorf("the reload is not logged:\n%s", logs)
	}
	if got := gateCodes(t, a); got != gatedByTwo {
		t.Errorf("the gate after the reload: %s, want %s", got, gatedByTwo)
	}
	inForce := s.policy.Load()

	writeFile(t, path, badPolicy)
	s.reloadPolicy()
	want := fmt.Sprintf(`level=ERROR msg="policy not reloaded; the policy in force is kept" path=%s line=4 err="%s%s"`,
		path, path, strings.ReplaceAll(badLine, `"`, `\"`))
	if !strings.Contains(logs.String(), want) {
		t.Errorf("the bad file is not logged as\n%s\nlogs:\n%s", want, logs)
	}
	if s.policy.Load() != inForce {
		t.Error("a bad file replaced the policy in force")
	}
	if got := gateCodes(t, a); got != gatedByTwo {
		t.Errorf("the gate after a bad file: %s, want %s (the policy in force)", got, gatedByTwo)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	s.reloadPolicy()
	if !strings.Contains(logs.String(), fmt.Sprintf(`level=ERROR msg="policy not reloaded; the policy in force is kept" path=%s line=0 err="%s: cannot read: no such file or directory"`, path, path)) {
		t.Errorf("a missing file is not logged:\n%s", logs)
	}
	if s.policy.Load() != inForce {
		t.Error("a missing file replaced the policy in force")
	}
}

// TestSIGHUPReloadsThePolicy sends real SIGHUPs to askbridge serve (this
// test binary as main): each re-reads ASK_POLICY and the gate answers by
// the new policy; a bad file is logged and the gate keeps answering by
// the policy in force; the service stops cleanly after.
func TestSIGHUPReloadsThePolicy(t *testing.T) {
	t.Parallel()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	writeFile(t, path, onePolicy)
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "ASKBRIDGE_TEST_AS_MAIN=1", "ASK_DATA_DIR="+filepath.Join(dir, "data"),
		"ASK_HTTP_ADDR=127.0.0.1:0", "ASK_NATS_LISTEN=127.0.0.1:0", "ASK_POLICY="+path)
	logs := &testenv.LockedBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitLog := func(want string) {
		t.Helper()
		testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
			if !strings.Contains(logs.String(), want) {
				return fmt.Errorf("no %q in the log:\n%s", want, logs)
			}
			return nil
		})
	}
	waitLog(`msg="askbridge serving"`)
	m := regexp.MustCompile(`msg="embedded NATS listening" url=(\S+)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no NATS URL in the log:\n%s", logs)
	}
	nc, err := nats.Connect(m[1], testenv.AdminOf(t, filepath.Join(dir, "data")))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	a, err := agent.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if got := gateCodes(t, a); got != gatedByOne {
		t.Fatalf("the gate at start: %s, want %s", got, gatedByOne)
	}

	writeFile(t, path, twoPolicy)
	_ = cmd.Process.Signal(syscall.SIGHUP)
	waitLog(fmt.Sprintf(`level=INFO msg="policy reloaded" path=%s tenants=2 actions=3`, path))
	if got := gateCodes(t, a); got != gatedByTwo {
		t.Errorf("the gate after SIGHUP: %s, want %s", got, gatedByTwo)
	}

	writeFile(t, path, badPolicy)
	_ = cmd.Process.Signal(syscall.SIGHUP)
	waitLog(fmt.Sprintf(`level=ERROR msg="policy not reloaded; the policy in force is kept" path=%s line=4`, path))
	if got := gateCodes(t, a); got != gatedByTwo {
		t.Errorf("the gate after SIGHUP with a bad file: %s, want %s (the policy in force)", got, gatedByTwo)
	}

	writeFile(t, path, onePolicy)
	_ = cmd.Process.Signal(syscall.SIGHUP)
	waitLog(fmt.Sprintf(`level=INFO msg="policy reloaded" path=%s tenants=1 actions=1`, path))
	if got := gateCodes(t, a); got != gatedByOne {
		t.Errorf("the gate after the last SIGHUP: %s, want %s", got, gatedByOne)
	}

	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("askbridge serve after three SIGHUPs and a SIGTERM: %v\n%s", err, logs)
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
		t.Errorf("%d ERROR lines, want the bad file's one:\n%s", n, logs)
	}
}
