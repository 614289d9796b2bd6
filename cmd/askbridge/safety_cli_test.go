package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestCLIProposalFromAskToExecuted runs docs/safety.md's worked trace with
// the CLI alone, against the service in-process: a proposal asked with
// askbridge ask, two approvals under the policy (the owner refused),
// one execute through the gate, and the execution reported with
// askbridge executed, all in the trace.
func TestCLIProposalFromAskToExecuted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "policy.yaml")
	rule := "tenants:\n  acme:\n    actions:\n      refund: {require_approval: true, required_approvals: 2, forbid_self_approval: true, max_amount: 500, currency: USD, approvers: [admin]}\n"
	if err := os.WriteFile(policyFile, []byte(rule), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := startTestService(t, func(c *config.Config) { c.Admins, c.Policy = []string{"cli:alice", "cli:bob", "cli:carol"}, policyFile })
	const job = "job-refund-4471"
	as := func(identity string, cmd func(*cli) func(context.Context, []string) int, args ...string) (int, string) {
		t.Helper()
		c, out, errOut := testCLI(s, identity)
		code := cmd(c)(context.Background(), args)
		return code, out.String() + errOut.String()
	}
	ask := func(c *cli) func(context.Context, []string) int { return c.ask }
	answer := func(c *cli) func(context.Context, []string) int { return c.answer }
	gate := func(c *cli) func(context.Context, []string) int { return c.gate }
	executed := func(c *cli) func(context.Context, []string) int { return c.executed }
	trace := func(c *cli) func(context.Context, []string) int { return c.trace }

	if code, out := as("cli:agent", ask, "--tenant", "acme", "--job", job, "--id", "q-refund", "--owner", "cli:carol",
		"--proposal", "pr_8f2a", "--action", "refund", "--summary", "Refund $240 to Jane D.", "--arg", "order=4471", "--arg", "amount=240",
		"--amount", "240", "--currency", "USD", "--no-wait", "Approve this refund?"); code != exitOK {
		t.Fatalf("ask: exit %d: %s", code, out)
	}
	alice, _, _ := testCLI(s, "cli:alice")
	waitPending(t, alice, job, "q-refund")

	steps := []struct {
		name string
		code int
		run  func() (int, string)
		want string // a regular expression the whole output must match
	}{
		{"execute before any approval", exitError, func() (int, string) {
			return as("cli:agent", gate, "--tenant", "acme", "--version", "1", "--proposal", "pr_8f2a", "--execute", job, "refund")
		}, `^refused: approval_pending: proposal pr_8f2a is waiting for approval\n$`},
		{"the owner approves", exitError, func() (int, string) { return as("cli:carol", answer, "--tenant", "acme", job, "q-refund", "approve") },
			`^askbridge: refused: You can't approve this proposal: cli:carol is the owner of the job it acts for.*\n$`},
		{"the first approval", exitOK, func() (int, string) { return as("cli:alice", answer, "--tenant", "acme", job, "q-refund", "approve") },
			`^Approval recorded: 1 of 2 approvals: cli:alice\n$`},
		{"the second approval", exitOK, func() (int, string) { return as("cli:bob", answer, "--tenant", "acme", job, "q-refund", "approve") },
			`^Answered: The answer: approved\n$`},
		{"the execute", exitOK, func() (int, string) {
			return as("cli:agent", gate, "--tenant", "acme", "--version", "1", "--proposal", "pr_8f2a", "--execute", job, "refund")
		}, `^allowed: proposal pr_8f2a is approved and now taken for execution.*\narguments: \{"amount":240,"order":4471\}\nidempotency key: ik_[0-9a-f]{32}\n$`},
		{"a second execute", exitError, func() (int, string) {
			return as("cli:agent", gate, "--tenant", "acme", "--version", "1", "--proposal", "pr_8f2a", "--execute", job, "refund")
		}, `^refused: proposal_executed: proposal pr_8f2a was executed at .*\nidempotency key: ik_[0-9a-f]{32}\nexecuted at: .*\n$`},
		{"the report", exitOK, func() (int, string) {
			return as("cli:agent", executed, "--tenant", "acme", job, "pr_8f2a", "--detail", "Refunded $240 · ref rf_31c9")
		}, `^reported succeeded of proposal pr_8f2a in acme/job-refund-4471\n$`},
	}
	for _, st := range steps {
		code, out := st.run()
		if code != st.code || !regexp.MustCompile(st.want).MatchString(out) {
			t.Fatalf("%s: exit %d, printed\n%s\nwant exit %d and %s", st.name, code, out, st.code, st.want)
		}
	}
	// The report is recorded asynchronously: the trace shows it once it is.
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		code, out := as("cli:alice", trace, "--tenant", "acme", job)
		if code != exitOK || !strings.Contains(out, "pr_8f2a succeeded: Refunded $240 · ref rf_31c9") {
			return fmt.Errorf("trace: exit %d:\n%s", code, out)
		}
		for _, line := range []string{"refund: approval_pending (execute pr_8f2a)", "pr_8f2a approved by cli:alice (1 of 2)",
			"pr_8f2a approved by cli:bob (2 of 2)", "refund: allowed (execute pr_8f2a)", "refund: proposal_executed (execute pr_8f2a)",
			"You can't approve this proposal: cli:carol is the owner"} {
			if !strings.Contains(out, line) {
				t.Fatalf("the trace lacks %q:\n%s", line, out)
			}
		}
		return nil
	})
}
