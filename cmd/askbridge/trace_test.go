package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/store/record"
)

var updateTrace = flag.Bool("update-trace", false, "rewrite testdata/trace*.golden")

// golden compares got with testdata/name, or rewrites it with -update-trace.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateTrace {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got\n%s--- want\n%s", name, got, want)
	}
}

// TestTracePrintsOneAlignedLineAnEntry prints every kind of entry, hidden
// ones too, the way `askbridge trace` does.
func TestTracePrintsOneAlignedLineAnEntry(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 10, 20, 7, 12, 3, 120_000_000, time.UTC)
	tick := func(d time.Duration) time.Time { at = at.Add(d); return at }
	entries := []bridge.TraceEntry{
		{At: tick(0), Kind: "asked", QuestionID: "q-7", TaskVersion: 3, Text: "send date", BlockedTools: []string{"send_report"}},
		{At: tick(882 * time.Millisecond), Kind: "gate", QuestionID: "q-7", Tool: "send_report", Code: "blocked_by_question",
			Text: "send_report: blocked_by_question — question q-7 (send_date) is waiting and blocks send_report"},
		{At: tick(time.Second), Kind: "gate", Tool: "lookup", Code: "allowed", Text: "lookup: allowed"},
		{At: tick(8 * time.Minute), Kind: "refused", QuestionID: "q-7", By: "slack:U0KEV", Code: "invalid_answer", Text: "on: must be a date"},
		{At: tick(time.Minute), Kind: "answered", QuestionID: "q-7", By: "slack:U0KEV", Text: `The answer: {"on":"2026-10-21"}`},
		{At: tick(time.Second), Kind: "asked", QuestionID: "q-8", TaskVersion: 3, Text: "Refund $240 to Jane D.? (proposal pr_8f2a: Refund $240 to Jane D. / Reason: damaged item)",
			AllowedTools: []string{"lookup"}},
		{At: tick(time.Minute), Kind: "approval", QuestionID: "q-8", ProposalID: "pr_8f2a", By: "slack:U0KEV", Approvals: 1, Required: 2,
			Text: "pr_8f2a approved by kevin (slack:U0KEV) (1 of 2)"},
		{At: tick(time.Minute), Kind: "answered", QuestionID: "q-8", By: "slack:U0ANA", Text: "The answer: approved"},
		{At: tick(0), Kind: "approval", QuestionID: "q-8", ProposalID: "pr_8f2a", By: "slack:U0ANA", Approvals: 2, Required: 2,
			Text: "pr_8f2a approved by ana (slack:U0ANA) (2 of 2)"},
		{At: tick(2 * time.Second), Kind: "gate", QuestionID: "q-8", Tool: "refund", Code: "allowed", ProposalID: "pr_8f2a",
			Text: "refund: allowed (execute pr_8f2a)"},
		{At: tick(3 * time.Second), Kind: "executed", ProposalID: "pr_8f2a", Result: "succeeded", Text: "pr_8f2a succeeded: Refunded $240 · ref rf_31c9"},
		{At: tick(time.Hour), Kind: "notice", Code: "ACCESS_DENIED", Text: "ACCESS_DENIED in read account: Grant crm.read.\x1b[2J"},
		{At: tick(time.Second), Kind: "asked", QuestionID: "q-9", Hidden: true, Text: "A question was asked."},
		{At: tick(time.Second), Kind: "gate", QuestionID: "q-9", Hidden: true, Tool: "pay", Code: "blocked_by_question", Text: "pay: blocked_by_question"},
		{At: tick(time.Second), Kind: "superseded", QuestionID: "q-9", Hidden: true, Text: "It was superseded by a newer task version."},
		{At: tick(time.Second), Kind: "timed_out", QuestionID: "q-10", TaskVersion: 4, Text: "Nobody answered within 4:00:00."},
	}
	var out bytes.Buffer
	writeTrace(&out, entries, time.UTC)
	golden(t, "trace.golden", out.String())

	// Entries over more than one day carry their dates.
	out.Reset()
	writeTrace(&out, []bridge.TraceEntry{entries[0], {At: entries[0].At.Add(24 * time.Hour), Kind: "cancelled", QuestionID: "q-7", Text: "not needed"}}, time.UTC)
	golden(t, "trace_days.golden", out.String())
}

// TestCLITrace traces a job through the running service: as its operator,
// as a reader (hidden), in JSON, and a job nobody can see.
func TestCLITrace(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Operators, c.Readers = []string{"cli:kevin"}, []string{"cli:rita"} })
	kevin, out, errOut := testCLI(s, "cli:kevin")
	asker, _, askErr := testCLI(s, "cli:agent")
	done := make(chan int, 1)
	go func() {
		done <- asker.ask(context.Background(), []string{"--tenant", "acme", "--job", "job-trace", "--id", "q-t",
			"--choice", "red", "--choice", "blue", "--timeout", "1h", "--blocks", "send_report", "Which colour?"})
	}()
	waitPending(t, kevin, "job-trace", "q-t")
	gate := record.LogEntry{Tenant: "acme", JobID: "job-trace", Kind: record.LogGate, QuestionID: "q-t", At: time.Now(),
		Body: json.RawMessage(`{"tool":"send_report","code":"blocked_by_question","task_version":0,"question_id":"q-t","reason":"question q-t is waiting and blocks send_report"}`)}
	if err := s.store.AppendLog(context.Background(), []record.LogEntry{gate}); err != nil {
		t.Fatal(err)
	}
	if code := kevin.answer(context.Background(), []string{"job-trace", "q-t", "green"}); code == exitOK {
		t.Fatalf("answering green was not refused")
	}
	if code := kevin.answer(context.Background(), []string{"job-trace", "q-t", "blue"}); code != exitOK {
		t.Fatalf("answer exit %d: %s", code, errOut)
	}
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("ask exit %d: %s", code, askErr)
		}
	case <-time.After(testenv.Patience):
		t.Fatal("ask did not return")
	}

	out.Reset()
	if code := kevin.trace(context.Background(), []string{"job-trace"}); code != exitOK {
		t.Fatalf("trace exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"asked     q-t  Which colour? (blocks send_report)",
		"gate      q-t  send_report: blocked_by_question — question q-t is waiting and blocks send_report",
		"refused   q-t  answer: must be one of: red, blue",
		"answered  q-t  The answer: blue",
	}
	if len(lines) != len(want) {
		t.Fatalf("trace printed:\n%s", out)
	}
	for i, w := range want {
		// Each line is a time (HH:MM:SS.mmm), two spaces, then the rest.
		if len(lines[i]) < 14 || lines[i][12:14] != "  " || lines[i][14:] != w {
			t.Errorf("line %d = %q, want the time then %q", i, lines[i], w)
		}
	}

	rita, ritaOut, ritaErr := testCLI(s, "cli:rita")
	if code := rita.trace(context.Background(), []string{"job-trace", "--tenant", "acme"}); code != exitOK {
		t.Fatalf("reader's trace exit %d: %s", code, ritaErr)
	}
	for _, secret := range []string{"colour", "blue", "must be one of", "waiting"} {
		if strings.Contains(ritaOut.String(), secret) {
			t.Errorf("a reader's trace shows %q:\n%s", secret, ritaOut)
		}
	}
	if !strings.Contains(ritaOut.String(), "gate      q-t  send_report: blocked_by_question\n") ||
		!strings.Contains(ritaOut.String(), "A question was asked.") {
		t.Errorf("a reader's trace:\n%s", ritaOut)
	}

	out.Reset()
	if code := kevin.trace(context.Background(), []string{"--json", "--as", "cli:rita", "job-trace"}); code != exitOK {
		t.Fatalf("trace --json exit %d: %s", code, errOut)
	}
	var reply bridge.TraceReply
	if err := json.Unmarshal(out.Bytes(), &reply); err != nil || len(reply.Entries) != 4 || !reply.Entries[0].Hidden ||
		reply.Entries[1].Tool != "send_report" {
		t.Fatalf("trace --json --as cli:rita printed (%v):\n%s", err, out)
	}

	errOut.Reset()
	if code := kevin.trace(context.Background(), []string{"job-none", "--tenant", "acme"}); code != exitError ||
		errOut.String() != "askbridge: There is no job job-none in tenant acme that you can see.\n" {
		t.Errorf("an unknown job: exit %d, %q", code, errOut)
	}
	errOut.Reset()
	if code := kevin.trace(context.Background(), []string{"job-none"}); code != exitError || errOut.String() !=
		"askbridge: There is no job job-none in tenant default that you can see. (none of its questions is in a tenant you can see: name its tenant with --tenant)\n" {
		t.Errorf("an unknown job without --tenant: exit %d, %q", code, errOut)
	}
	stranger, _, strangerErr := testCLI(s, "cli:nobody")
	if code := stranger.trace(context.Background(), []string{"job-trace", "--tenant", "acme"}); code != exitError ||
		!strings.Contains(strangerErr.String(), "There is no job job-trace in tenant acme that you can see.") {
		t.Errorf("a stranger: exit %d, %q", code, strangerErr)
	}
	errOut.Reset()
	if code := kevin.trace(context.Background(), []string{"job one"}); code != exitConfig || !strings.Contains(errOut.String(), `job: "job one" must be`) {
		t.Errorf("a bad job id: exit %d, %q", code, errOut)
	}
}
