package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge/internal/testenv"
)

// The approval tools of the MCP front door end to end (TestMCP runs them):
// request_approval with check_action, and approve_tool_use.

func testMCPApprovalAndExecute(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	p := startMCP(t, r.s)
	ch := p.callAsync("request_approval", map[string]any{
		"action": "refund", "summary": "Refund $240 to Jane D.", "arguments": map[string]any{"order": 4471, "amount": 240},
		"amount": 240, "currency": "USD", "job_id": "job-ap", "question_id": "q-ap", "proposal_id": "pr_mcp1"}, time.Minute)
	ts := r.slackCard("job-ap", "q-ap")
	r.signedSlack(r.slackClick("U0KEV", "trig-ap", ts, "ask.acme.job-ap.q-ap.0", "approve", "approve"), nil)
	res := waitResult(t, ch)
	if got := resultText(res); !strings.HasPrefix(got, "Proposal pr_mcp1 was approved by slack:U0KEV (u0kev).") {
		t.Fatalf("request_approval: %q", got)
	}
	var d struct {
		Decision   string `json:"decision"`
		ProposalID string `json:"proposal_id"`
		By         string `json:"by"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &d)
	if d.Decision != "approved" || d.ProposalID != "pr_mcp1" || d.By != "slack:U0KEV" {
		t.Errorf("structured content %s", b)
	}

	// Before executing: the gate says it is approved, and takes it once.
	check := func(args map[string]any) (string, map[string]any) {
		t.Helper()
		res, err := p.call("check_action", args, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
		return resultText(res), out
	}
	if got, _ := check(map[string]any{"tool": "refund", "job_id": "job-ap", "proposal_id": "pr_mcp1"}); !strings.HasPrefix(got, "allowed: proposal pr_mcp1 is approved\n") {
		t.Errorf("check without execute: %q", got)
	}
	got, first := check(map[string]any{"tool": "refund", "job_id": "job-ap", "proposal_id": "pr_mcp1", "execute": true})
	if !strings.HasPrefix(got, "allowed: ") || !strings.Contains(got, `arguments: {"amount":240,"order":4471}`) || first["idempotency_key"] == nil {
		t.Fatalf("execute: %q %v", got, first)
	}
	got, again := check(map[string]any{"tool": "refund", "job_id": "job-ap", "proposal_id": "pr_mcp1", "execute": true})
	if !strings.HasPrefix(got, "refused: proposal_executed: ") || again["idempotency_key"] != first["idempotency_key"] {
		t.Errorf("execute again: %q %v, want proposal_executed with the same key", got, again)
	}
	if got, _ := check(map[string]any{"tool": "refund", "execute": true}); got != "proposal_id: is required with execute: name the approved proposal to execute" {
		t.Errorf("execute without a proposal: %q", got)
	}
	if got, _ := check(map[string]any{"tool": "not a tool"}); !strings.HasPrefix(got, "tool: ") {
		t.Errorf("a bad tool name: %q", got)
	}
}

func testMCPApproveToolUse(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	p := startMCP(t, r.s, "ASK_MCP_AUTO_ALLOW=Read,Bash(git status)")
	permission := func(res *mcp.CallToolResult) map[string]any {
		t.Helper()
		var out map[string]any
		if err := json.Unmarshal([]byte(resultText(res)), &out); err != nil {
			t.Fatalf("the result is not the permission JSON: %q", resultText(res))
		}
		return out
	}

	// Auto-allowed: at once, no card, in the trace as the gate's decision.
	for _, use := range []map[string]any{
		{"tool_name": "Read", "input": map[string]any{"file_path": "/src/main.go"}, "job_id": "job-tu", "a_later_key": true},
		{"tool_name": "Bash", "input": map[string]any{"command": "git status"}, "job_id": "job-tu"},
	} {
		res, err := p.call("approve_tool_use", use, testenv.Patience)
		if err != nil {
			t.Fatal(err)
		}
		got := permission(res)
		if got["behavior"] != "allow" || fmt.Sprint(got["updatedInput"]) != fmt.Sprint(use["input"]) {
			t.Errorf("%v: %v, want allowed as it is", use["tool_name"], got)
		}
	}
	if n := len(r.Calls("chat.postMessage")); n != 0 {
		t.Errorf("%d Slack messages for auto-allowed tools", n)
	}
	c, out, _ := testCLI(r.s, "cli:kevin")
	if code := c.trace(context.Background(), []string{"--tenant", "acme", "job-tu"}); code != 0 || !strings.Contains(out.String(), "Read") || !strings.Contains(out.String(), "Bash") {
		t.Errorf("trace (exit %d): %s, want the two gate decisions", code, out)
	}

	// Asked: the card shows the command; approved, the input goes back as it was.
	push := map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "git push --force origin main", "description": "Force-push"},
		"tool_use_id": "toolu_01A", "job_id": "job-tu"}
	ch := p.callAsync("approve_tool_use", push, time.Minute)
	ts := r.slackCard("job-tu", "tu-toolu_01A")
	card := r.Calls("chat.postMessage")[len(r.Calls("chat.postMessage"))-1].Form.Get("blocks")
	if !strings.Contains(card, "git push --force origin main") || !strings.Contains(card, "May test-agent use Bash?") {
		t.Errorf("the card does not show the tool use: %s", card)
	}
	// Discord shows it too, the command in its embed.
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, m := range r.dmsgs {
			if embeds := fmt.Sprint(m["embeds"]); strings.Contains(embeds, "git push --force origin main") && strings.Contains(embeds, "May test-agent use Bash?") {
				return nil
			}
		}
		return errors.New("no Discord card shows the tool use")
	})
	r.signedSlack(r.slackClick("U0KEV", "trig-tu1", ts, "ask.acme.job-tu.tu-toolu_01A.0", "approve", "approve"), nil)
	if got := permission(waitResult(t, ch)); got["behavior"] != "allow" || fmt.Sprint(got["updatedInput"]) != fmt.Sprint(push["input"]) {
		t.Errorf("approved: %v", got)
	}

	// A command chained after an allowed one is not auto-allowed: it gets a
	// card, here denied with a reason typed in the modal.
	rm := map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "git status && rm -rf /"}, "tool_use_id": "toolu_02B", "job_id": "job-tu"}
	ch = p.callAsync("approve_tool_use", rm, time.Minute)
	ts = r.slackCard("job-tu", "tu-toolu_02B")
	opened := r.openSlackModal("U0KEV", "trig-tu2", ts, "ask.acme.job-tu.tu-toolu_02B.0", "deny")
	r.signedSlack(r.slackSubmit("U0KEV", opened, "V2", "h2", "not on main"), nil)
	got := permission(waitResult(t, ch))
	if got["behavior"] != "deny" || got["message"] != "slack:U0KEV (u0kev) denied: not on main" {
		t.Errorf("denied: %v", got)
	}
}
