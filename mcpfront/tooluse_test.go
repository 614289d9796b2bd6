package mcpfront

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge"
)

func TestRenderToolUse(t *testing.T) {
	lines := renderToolUse("Edit", map[string]any{
		"file_path": "/src/main.go", "old_string": "a := 1\nb := 2", "new_string": "a := 3", "replace_all": false,
	})
	want := []string{"Tool: Edit", "File: /src/main.go", "Change:\n```diff\n- a := 1\n- b := 2\n+ a := 3\n```", "replace_all: false"}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("Edit rendered as %q, want %q", lines, want)
	}
	long := strings.Repeat("x", 5000) + "```"
	lines = renderToolUse("Bash", map[string]any{"command": long, "description": "a long one"})
	if len([]rune(lines[1])) > maxRendered+40 || !strings.Contains(lines[1], "…") || strings.Count(lines[1], "```") != 2 {
		t.Errorf("a long command is not clipped in one code block: %d characters", len(lines[1]))
	}
	if lines[2] != "description: a long one" {
		t.Errorf("the other keys: %q", lines[2:])
	}
	// A fence inside the command cannot close the block early.
	lines = renderToolUse("Bash", map[string]any{"command": "echo ```; rm -rf /"})
	if strings.Count(lines[1], "```") != 2 {
		t.Errorf("a fence in the command closes the block: %q", lines[1])
	}
}

func TestDecisionText(t *testing.T) {
	ans := func(a string) json.RawMessage { b, _ := json.Marshal(a); return b }
	for _, c := range []struct {
		out  bridge.Resume
		want string
	}{
		{bridge.Resume{Outcome: "answered", Answer: ans("approved"), By: "slack:U0KEV", ByName: "kevin"}, "Proposal pr_1 was approved by slack:U0KEV (kevin)."},
		{bridge.Resume{Outcome: "answered", Answer: ans("denied"), By: "slack:U0ANA", ByName: "ana", Comment: "too risky"}, "Proposal pr_1 was denied by slack:U0ANA (ana): too risky."},
		{bridge.Resume{Outcome: "answered", Answer: ans("denied"), By: "slack:U0ANA"}, "Proposal pr_1 was denied by slack:U0ANA."},
		{bridge.Resume{Outcome: "timed_out", Text: "Nobody answered within 4:00:00."}, "Nobody answered within 4:00:00."},
	} {
		if got := decisionOf(&c.out, "pr_1").Text; got != c.want {
			t.Errorf("%+v: %q, want %q", c.out, got, c.want)
		}
	}
}

func TestGateText(t *testing.T) {
	for _, c := range []struct {
		r    bridge.GateReply
		want string
	}{
		{bridge.GateReply{Allowed: true, Code: "allowed"}, "allowed: you may call send_report now"},
		{bridge.GateReply{Code: "blocked_by_question", Reason: "question q-7 (send_date) is waiting and blocks send_report"},
			"refused: blocked_by_question: question q-7 (send_date) is waiting and blocks send_report"},
	} {
		if got := gateText("send_report", c.r); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}
