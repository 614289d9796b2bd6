package mcpfront

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
)

// Decision is request_approval's structured content.
type Decision struct {
	// Decision is approved or denied; empty when the approval ended
	// otherwise (declined, timed out, cancelled, failed, refused).
	Decision   string `json:"decision,omitempty"`
	ProposalID string `json:"proposal_id"`
	By         string `json:"by,omitempty"`
	ByName     string `json:"by_name,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Text       string `json:"text"`
	// Outcome is the whole outcome as the runtime gave it.
	Outcome *bridge.Resume `json:"outcome"`
}

var proposalKeys = []string{"action", "summary", "arguments", "amount", "currency", "expires_at"}

func (f *Front) requestApproval(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, err := readArgs(req, append(proposalKeys, "question", "proposal_id", "timeout", "on_timeout", "answerers", "route", "question_id", "job_id")...)
	if err != nil {
		return toolError(err), nil
	}
	action, err := a.str("action")
	if err != nil {
		return toolError(err), nil
	}
	pid, err := a.str("proposal_id")
	if err != nil {
		return toolError(err), nil
	}
	if pid == "" {
		pid = "pr_" + randomHex(8)
	}
	proposal := map[string]json.RawMessage{}
	for _, k := range proposalKeys {
		if v, ok := a[k]; ok {
			proposal[k] = v
		}
	}
	if s, ok := a["summary"]; ok {
		// One line may come as text: the contract's summary is a list.
		var line string
		if json.Unmarshal(s, &line) == nil {
			proposal["summary"], _ = json.Marshal(strings.Split(strings.TrimSpace(line), "\n"))
		}
	}
	proposal["id"], _ = json.Marshal(pid)
	body := map[string]json.RawMessage{}
	for _, k := range []string{"question", "timeout", "on_timeout", "answerers", "route"} {
		if v, ok := a[k]; ok {
			body[k] = v
		}
	}
	if _, ok := body["question"]; !ok && action != "" {
		body["question"], _ = json.Marshal("May I run " + action + "?")
	}
	body["kind"], _ = json.Marshal(bridge.KindApproval)
	body["proposal"], _ = json.Marshal(proposal)
	q, err := f.question(req, a, body)
	if err != nil {
		return toolError(err), nil
	}
	out, err := f.wait(ctx, req, q)
	if err != nil {
		return toolError(err), nil
	}
	if q.Proposal != nil {
		pid, action = q.Proposal.ID, q.Proposal.Action // as recorded, when re-attached
	}
	d := decisionOf(out, pid)
	text := d.Text
	if d.Decision == "approved" {
		text += fmt.Sprintf("\nExecute it once with check_action: tool %q, proposal_id %q, job_id %q, execute true.", action, pid, q.JobID)
	}
	return textResult(text, d, out.Outcome == bridge.OutcomeInvalid), nil
}

// decisionOf reads an approval's outcome: approved or denied, by whom and why.
func decisionOf(out *bridge.Resume, pid string) Decision {
	d := Decision{ProposalID: pid, By: out.By, ByName: out.ByName, Outcome: out, Text: out.Text}
	var answer string
	_ = json.Unmarshal(out.Answer, &answer)
	if out.Outcome != bridge.OutcomeAnswered || (answer != "approved" && answer != "denied") {
		return d
	}
	d.Decision = answer
	d.Reason = out.Comment
	who := bridge.DisplayIdentity(out.By, out.ByName)
	if answer == "approved" {
		d.Text = fmt.Sprintf("Proposal %s was approved by %s.", pid, who)
	} else {
		d.Text = fmt.Sprintf("Proposal %s was denied by %s", pid, who)
		if r := strings.TrimSpace(out.Comment); r != "" {
			d.Text += ": " + r
		}
		d.Text = strings.TrimSuffix(d.Text, ".") + "."
	}
	return d
}

func (f *Front) checkAction(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, err := readArgs(req, "tool", "proposal_id", "execute", "task_version", "job_id")
	if err != nil {
		return toolError(err), nil
	}
	var in struct {
		Tool        string `json:"tool"`
		ProposalID  string `json:"proposal_id"`
		Execute     bool   `json:"execute"`
		TaskVersion int64  `json:"task_version"`
		JobID       string `json:"job_id"`
	}
	raw, _ := json.Marshal(a)
	if err := json.Unmarshal(raw, &in); err != nil {
		return toolError(fmt.Errorf("arguments: %s", bridge.JSONProblem(err))), nil
	}
	if err := bridge.CheckTool("tool", in.Tool); err != nil {
		return toolError(err), nil
	}
	if in.Execute && in.ProposalID == "" {
		return toolError(fmt.Errorf("proposal_id: is required with execute: name the approved proposal to execute")), nil
	}
	if in.JobID != "" {
		if err := bridge.CheckToken("job_id", in.JobID); err != nil {
			return toolError(err), nil
		}
	}
	job := f.jobFor(req, in.JobID)
	var reply bridge.GateReply
	switch {
	case in.Execute:
		reply, err = f.ag.Execute(ctx, f.o.Tenant, job, in.TaskVersion, in.Tool, in.ProposalID)
	case in.ProposalID != "":
		reply, err = f.gateProposal(ctx, job, in.TaskVersion, in.Tool, in.ProposalID)
	default:
		reply, err = f.ag.Gate(ctx, f.o.Tenant, job, in.TaskVersion, in.Tool)
	}
	if err != nil {
		// No decision is a refusal: the gate fails closed.
		return toolError(fmt.Errorf("no decision, so do not call %s now: %w", in.Tool, err)), nil
	}
	return textResult(gateText(in.Tool, reply), reply, false), nil
}

// gateProposal asks the gate about a proposal without taking it.
func (f *Front) gateProposal(ctx context.Context, job string, version int64, tool, pid string) (bridge.GateReply, error) {
	var reply bridge.GateReply
	ctx, cancel := context.WithTimeout(ctx, agent.GateWait)
	defer cancel()
	r := bridge.GateRequest{Tenant: f.o.Tenant, JobID: job, TaskVersion: version, Tool: tool, ProposalID: pid}
	err := bridge.Request(ctx, f.nc, bridge.GateSubject(f.o.Tenant, job), r, &reply)
	return reply, err
}

// gateText is the gate's decision as the model reads it, in the words of
// askbridge gate.
func gateText(tool string, r bridge.GateReply) string {
	var b strings.Builder
	if r.Allowed {
		b.WriteString("allowed")
	} else {
		b.WriteString("refused: " + r.Code)
	}
	if r.Reason != "" {
		b.WriteString(": " + r.Reason)
	} else if r.Allowed {
		b.WriteString(": you may call " + tool + " now")
	}
	if len(r.Arguments) > 0 {
		b.WriteString("\narguments: " + string(r.Arguments))
	}
	if r.IdempotencyKey != "" {
		b.WriteString("\nidempotency key: " + r.IdempotencyKey)
	}
	return b.String()
}
