package mcpfront

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge/bridge"
)

// Permission is the answer of the permission-prompt tool, in the shape
// coding agents read (docs/mcp.md, "approve_tool_use").
type Permission struct {
	Behavior     string          `json:"behavior"`
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	Message      string          `json:"message,omitempty"`
}

// maxRendered bounds each rendered part of a tool's input on the card:
// under Discord's 1,024 characters an embed field, and Slack's section
// limit, with room for the lines around it.
const maxRendered = 900

func (f *Front) approveToolUse(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	// Keys beyond these are ignored: the coding agent, not a model, writes
	// this call, and a key it adds in a later version must not deny every
	// tool use.
	a, err := readAnyArgs(req)
	if err != nil {
		return toolError(err), nil
	}
	tool, err := a.str("tool_name")
	if err != nil {
		return toolError(err), nil
	}
	if strings.TrimSpace(tool) == "" {
		return toolError(fmt.Errorf("tool_name: is required: the tool the agent wants to use")), nil
	}
	useID, err := a.str("tool_use_id")
	if err != nil {
		return toolError(err), nil
	}
	input := bytes.TrimSpace(a["input"])
	if len(input) == 0 || string(input) == "null" {
		input = []byte("{}")
	}
	var fields map[string]any
	if json.Unmarshal(input, &fields) != nil {
		return toolError(fmt.Errorf("input: must be a JSON object, the tool's input")), nil
	}
	job, err := a.str("job_id")
	if err != nil {
		return toolError(err), nil
	}
	if allowed, err := f.autoAllowed(ctx, req, job, tool, fields); err != nil {
		return toolError(err), nil
	} else if allowed {
		return permissionResult(Permission{Behavior: "allow", UpdatedInput: input}), nil
	}

	q, err := f.toolUseQuestion(req, job, tool, useID, input, fields)
	if err != nil {
		return toolError(err), nil
	}
	out, err := f.wait(ctx, req, q)
	if err != nil {
		return toolError(err), nil
	}
	return permissionResult(permissionOf(out, q.Proposal.ID, input)), nil
}

// toolUseQuestion is the approval a tool use is asked as. Its ids come
// from the tool use's, so the same tool use asked again is the same
// question.
func (f *Front) toolUseQuestion(req *mcp.CallToolRequest, job, tool, useID string, input []byte, fields map[string]any) (*bridge.Question, error) {
	pid := "tu_" + randomHex(8)
	qid := ""
	if useID != "" {
		qid = "tu-" + useID
		if !bridge.ValidToken(qid) {
			sum := sha256.Sum256([]byte(useID))
			qid = "tu-" + hex.EncodeToString(sum[:12])
		}
		pid = "tu_" + strings.TrimPrefix(qid, "tu-")
	}
	action := tool
	if bridge.CheckTool("tool_name", tool) != nil {
		action = "tool_use"
	}
	who := agentName(req)
	if who == "" {
		who = "the agent"
	}
	proposal := bridge.Proposal{ID: pid, Action: action, Summary: renderToolUse(tool, fields)}
	if len(input) <= bridge.MaxProposalArguments {
		proposal.Arguments = input
	}
	body := map[string]json.RawMessage{}
	body["kind"], _ = json.Marshal(bridge.KindApproval)
	body["question"], _ = json.Marshal(fmt.Sprintf("May %s use %s?", who, bridge.Truncate(tool, 128)))
	body["proposal"], _ = json.Marshal(&proposal)
	ca := args{}
	if job != "" {
		ca["job_id"], _ = json.Marshal(job)
	}
	if qid != "" {
		ca["question_id"], _ = json.Marshal(qid)
	}
	return f.question(req, ca, body)
}

// permissionOf is the coding agent's answer: allowed as it came, or
// denied saying who denied and why; anything but an approval denies.
func permissionOf(out *bridge.Resume, pid string, input []byte) Permission {
	d := decisionOf(out, pid)
	switch d.Decision {
	case "approved":
		return Permission{Behavior: "allow", UpdatedInput: input}
	case "denied":
		msg := bridge.DisplayIdentity(d.By, d.ByName) + " denied"
		if r := strings.TrimSpace(d.Reason); r != "" {
			msg += ": " + r
		} else {
			msg += " this tool use."
		}
		return Permission{Behavior: "deny", Message: msg}
	}
	return Permission{Behavior: "deny", Message: "Not allowed: " + out.Text}
}

func permissionResult(p Permission) *mcp.CallToolResult {
	b, _ := json.Marshal(p)
	return textResult(string(b), p, false)
}

// autoAllowed says whether a rule of Options.AutoAllow takes this tool
// use (allow.go). The gate is asked too, so the use is in the job's trace
// and a question that blocks the tool still stops it (then a person
// decides).
func (f *Front) autoAllowed(ctx context.Context, req *mcp.CallToolRequest, job, tool string, input map[string]any) (bool, error) {
	if ok, why := autoAllows(*f.rules.Load(), tool, input); !ok {
		if len(*f.rules.Load()) > 0 {
			f.o.Logger.Debug("approve_tool_use: not auto-allowed, a person decides", "tool", tool, "why", why)
		}
		return false, nil
	}
	if job != "" {
		if err := bridge.CheckToken("job_id", job); err != nil {
			return false, err
		}
	}
	reply, err := f.ag.Gate(ctx, f.o.Tenant, f.jobFor(req, job), 0, tool)
	if err != nil {
		return false, fmt.Errorf("no decision from askbridge's gate, so %s is not allowed now: %w", tool, err)
	}
	return reply.Allowed, nil
}

// renderToolUse is the summary people read: the tool, then its input made
// readable (a command in a code block, file paths, an edit as a diff),
// each part clipped to what a card shows.
func renderToolUse(tool string, in map[string]any) []string {
	lines := []string{"Tool: " + clip(tool, 200)}
	str := func(k string) string { s, _ := in[k].(string); return s }
	done := map[string]bool{}
	if cmd := str("command"); cmd != "" {
		lines = append(lines, "Command:\n"+codeBlock("", cmd))
		done["command"] = true
	}
	for _, k := range []string{"file_path", "notebook_path", "path"} {
		if p := str(k); p != "" {
			lines = append(lines, "File: "+clip(p, 300))
			done[k] = true
		}
	}
	if old, nw := str("old_string"), str("new_string"); old != "" || nw != "" {
		lines = append(lines, "Change:\n"+codeBlock("diff", diffLines(old, nw)))
		done["old_string"], done["new_string"] = true, true
	}
	if c := str("content"); c != "" {
		lines = append(lines, "Content:\n"+codeBlock("", c))
		done["content"] = true
	}
	keys := make([]string, 0, len(in))
	for k := range in {
		if !done[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := in[k]
		s, ok := v.(string)
		if !ok {
			b, _ := json.Marshal(v)
			s = string(b)
		}
		lines = append(lines, clip(k, 64)+": "+clip(strings.ReplaceAll(s, "\n", " "), 300))
	}
	return lines
}

// codeBlock fences text, clipped, with any fence inside it broken.
func codeBlock(lang, text string) string {
	text = strings.ReplaceAll(clip(text, maxRendered), "```", "`\u200b``")
	return "```" + lang + "\n" + text + "\n```"
}

// diffLines shows an edit as removed and added lines.
func diffLines(old, nw string) string {
	var b strings.Builder
	for _, l := range strings.Split(old, "\n") {
		b.WriteString("- " + l + "\n")
	}
	for _, l := range strings.Split(nw, "\n") {
		b.WriteString("+ " + l + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// clip cuts s to n characters, saying so.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
