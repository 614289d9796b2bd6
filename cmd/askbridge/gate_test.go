package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/store/record"
)

// runGate runs askbridge gate as the CLI user and returns its exit code
// and what it printed.
func runGate(t *testing.T, s *service, args ...string) (int, string, string) {
	t.Helper()
	c, out, errOut := testCLI(s, "cli:agent")
	code := c.gate(context.Background(), args)
	return code, out.String(), errOut.String()
}

// TestGateRefusesWhileAQuestionWaitsEndToEnd runs the service in-process:
// an agent's questions close tools while they wait, askbridge gate says
// so, an answer opens them, a version bump makes old requests stale, and
// every decision is in the job's log and its trace.
func TestGateRefusesWhileAQuestionWaitsEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte("tenants:\n  acme:\n    actions:\n      delete_records: {require_approval: true}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := startTestService(t, func(c *config.Config) { c.Operators, c.Policy = []string{"cli:kevin"}, policyFile })
	a := agentFor(t, s)
	const job = "job-gate"
	date := &bridge.Question{Tenant: "acme", JobID: job, QuestionID: "q-75eaf712", TaskVersion: 3,
		Question: "When should I send the report?", Choices: []string{"today", "monday"},
		MissingField: "send_date", BlockedTools: []string{"send_report"}}
	who := &bridge.Question{Tenant: "acme", JobID: job, QuestionID: "q-who", TaskVersion: 3,
		Question: "Which customer should the reply go to?", Choices: []string{"Jane", "John"},
		AllowedTools: []string{"lookup_order", "draft_reply"}}
	// One after the other: the gate names the first blocking question
	// in the order they were asked.
	kevin, _, kevinErr := testCLI(s, "cli:kevin")
	dateOut := askAsync(t, a, date)
	waitPending(t, kevin, job, date.QuestionID)
	whoOut := askAsync(t, a, who)
	waitPending(t, kevin, job, who.QuestionID)

	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{job, "send_report", "--tenant", "acme", "--version", "3"}, exitError,
			"refused: blocked_by_question: question q-75eaf712 (send_date) is waiting and blocks send_report\n"},
		{[]string{job, "refund", "--tenant", "acme", "--version", "3"}, exitError,
			"refused: blocked_by_question: question q-who (\"Which customer should the reply go to?\") is waiting and blocks refund: only lookup_order, draft_reply may run while it waits\n"},
		{[]string{job, "lookup_order", "--tenant", "acme", "--version", "3"}, exitOK, "allowed\n"},
		{[]string{"job-other", "delete_records", "--tenant", "acme"}, exitError,
			"refused: approval_required: delete_records needs an approved proposal in tenant acme: ask for approval of a proposal whose action is delete_records, then execute it by its proposal_id\n"},
	} {
		code, out, errOut := runGate(t, s, c.args...)
		if code != c.code || out != c.out {
			t.Errorf("gate %v: exit %d, printed %q (%s); want exit %d, %q", c.args, code, out, errOut, c.code, c.out)
		}
	}
	code, out, _ := runGate(t, s, job, "send_report", "--tenant", "acme", "--version", "3", "--json")
	var reply bridge.GateReply
	if err := json.Unmarshal([]byte(out), &reply); err != nil || code != exitError || reply.Code != bridge.GateBlockedByQuestion || reply.QuestionID != "q-75eaf712" {
		t.Fatalf("--json: exit %d, %s", code, out)
	}

	for _, q := range []struct{ id, answer string }{{date.QuestionID, "monday"}, {who.QuestionID, "Jane"}} {
		if code := kevin.answer(context.Background(), []string{"--tenant", "acme", job, q.id, q.answer}); code != exitOK {
			t.Fatalf("answer %s: exit %d: %s", q.id, code, kevinErr)
		}
	}
	waitOutcome(t, dateOut)
	waitOutcome(t, whoOut)
	if code, out, _ := runGate(t, s, job, "send_report", "--tenant", "acme", "--version", "3"); code != exitOK || out != "allowed\n" {
		t.Fatalf("after the answers: exit %d, %q", code, out)
	}

	// The job moves to version 4: a request of version 3 is stale.
	if err := bridge.Publish(context.Background(), s.nats.JS, bridge.CancelSubject("acme", job), "bump-"+job,
		bridge.Cancel{Tenant: "acme", JobID: job, TaskVersion: 4}); err != nil {
		t.Fatal(err)
	}
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		if _, out, _ := runGate(t, s, job, "send_report", "--tenant", "acme", "--version", "3"); !strings.HasPrefix(out, "refused: stale_version") {
			return &gateWait{out}
		}
		return nil
	})
	code, out, _ = runGate(t, s, job, "send_report", "--tenant", "acme", "--version", "3")
	if code != exitError || out != "refused: stale_version: task version 3 is older than the job's task version 4: the job changed since; plan again before acting\n" {
		t.Fatalf("stale: exit %d, %q", code, out)
	}
	// Without --version the gate decides at the job's current version,
	// 4, though none of its questions has it.
	code, out, errOut := runGate(t, s, job, "send_report")
	if code != exitOK || out != "allowed\n" || errOut != "" {
		t.Fatalf("without --version after the bump: exit %d, %q, %q", code, out, errOut)
	}
	if code, out, _ := runGate(t, s, job, "send_report", "--version", "4"); code != exitOK || out != "allowed\n" {
		t.Fatalf("--version 4 without --tenant: exit %d, %q", code, out)
	}

	entries, err := s.store.JobLog(context.Background(), "acme", job)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	var versions []int64
	for _, e := range entries {
		if e.Kind == record.LogGate {
			var b struct {
				Tool, Code  string
				TaskVersion int64 `json:"task_version"`
			}
			_ = json.Unmarshal(e.Body, &b)
			codes, versions = append(codes, b.Tool+"="+b.Code), append(versions, b.TaskVersion)
		}
	}
	// The request without --version is logged at the version it was
	// decided at.
	if n := len(versions); n < 2 || versions[n-2] != 4 {
		t.Errorf("the job log's gate versions: %v, want 4 next to last", versions)
	}
	// Every request, in order; the wait for the bump asked until it saw
	// it, so allowed and then stale repeat.
	want := regexp.MustCompile(`^send_report=blocked_by_question refund=blocked_by_question lookup_order=allowed ` +
		`send_report=blocked_by_question send_report=allowed( send_report=allowed)*( send_report=stale_version){2,} send_report=allowed send_report=allowed$`)
	if got := strings.Join(codes, " "); !want.MatchString(got) {
		t.Fatalf("the job log's gate decisions: %s", got)
	}
	// The trace shows them to a person.
	tr, trOut, trErr := testCLI(s, "cli:kevin")
	if code := tr.trace(context.Background(), []string{"--tenant", "acme", job}); code != exitOK {
		t.Fatalf("trace: exit %d: %s", code, trErr)
	}
	for _, want := range []string{"send_report: blocked_by_question", "refund: blocked_by_question", "send_report: allowed", "send_report: stale_version"} {
		if !strings.Contains(trOut.String(), want) {
			t.Errorf("the trace lacks %q:\n%s", want, trOut)
		}
	}
}

type gateWait struct{ out string }

func (w *gateWait) Error() string { return "gate printed " + w.out }

func TestGateUsageMistakesExit2(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, nil)
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"job-1"}, "askbridge gate: takes a job and a tool"},
		{[]string{"job-1", "send report"}, `askbridge gate: tool: "send report" is not a tool's name`},
		{[]string{"job-1", "refund", "--execute"}, "askbridge gate: --execute takes an approved proposal: give --proposal ID"},
		{[]string{"job.1", "refund"}, "askbridge gate: job"},
		{[]string{"job-1", "refund", "--version", "x"}, `invalid value "x" for flag -version`},
	} {
		code, out, errOut := runGate(t, s, c.args...)
		if code != exitConfig || out != "" || !strings.Contains(errOut, c.err) {
			t.Errorf("gate %v: exit %d, printed %q, %q; want exit 2 and %q", c.args, code, out, errOut, c.err)
		}
	}
}

// TestGateFindsTheJobsTenant runs askbridge gate without --tenant and
// --version: it finds the one tenant that has the job and the job's
// version there, and fails closed, exit 1 with a sentence, when no tenant
// or several have it. The CLI user may read none of the questions: a
// question blocks the job whoever asks.
func TestGateFindsTheJobsTenant(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Operators = []string{"cli:kevin"} })
	a := agentFor(t, s)
	kevin, _, _ := testCLI(s, "cli:kevin")
	block := &bridge.Question{Tenant: "acme", JobID: "job-3", QuestionID: "q-send", TaskVersion: 2,
		Question: "Send the report now?", Choices: []string{"yes", "no"}, BlockedTools: []string{"send_report"}}
	askAsync(t, a, block)
	waitPending(t, kevin, "job-3", "q-send")
	for _, q := range []*bridge.Question{
		{Tenant: "acme", JobID: "job-twice", QuestionID: "q-a", TaskVersion: 1, Question: "A?"},
		{Tenant: "globex", JobID: "job-twice", QuestionID: "q-b", TaskVersion: 1, Question: "B?"},
	} {
		askAsync(t, a, q)
		waitPending(t, kevin, q.JobID, q.QuestionID)
	}

	for _, c := range []struct {
		args    []string
		code    int
		out, at string
	}{
		{[]string{"job-3", "send_report"}, exitError,
			"refused: blocked_by_question: question q-send (\"Send the report now?\") is waiting and blocks send_report\n", ""},
		{[]string{"job-3", "lookup_order"}, exitOK, "allowed\n", ""},
		// --version 1 is older than the job's 2: found, it is not 0.
		{[]string{"job-3", "lookup_order", "--version", "1"}, exitError,
			"refused: stale_version: task version 1 is older than the job's task version 2: the job changed since; plan again before acting\n", ""},
		{[]string{"job-nowhere", "send_report"}, exitError, "",
			"askbridge: no decision: no tenant has a job job-nowhere, so the gate cannot tell which job you mean: name its tenant with --tenant; do not call send_report\n"},
		{[]string{"job-twice", "send_report"}, exitError, "",
			"askbridge: no decision: job job-twice is in more than one tenant (acme, globex): name one with --tenant; do not call send_report\n"},
		{[]string{"job-twice", "send_report", "--tenant", "globex"}, exitOK, "allowed\n", ""},
	} {
		code, out, errOut := runGate(t, s, c.args...)
		if code != c.code || out != c.out || errOut != c.at {
			t.Errorf("gate %v: exit %d, printed %q, %q; want exit %d, %q, %q", c.args, code, out, errOut, c.code, c.out, c.at)
		}
	}
}
