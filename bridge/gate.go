package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// GateUnavailable is the gate's answer when it could not read the record
// or write its decision down: nothing is allowed, and the agent may ask
// again (docs/contract.md, "The gate"). The gate fails closed.
const GateUnavailable = "unavailable"

// Limits of tool names, in a question's blocked_tools and allowed_tools and
// in a gate request (docs/contract.md, "The gate").
const (
	MaxToolName = 128
	MaxTools    = 100
	// MaxProposalID bounds the proposal_id a gate request names.
	MaxProposalID = 256
	// MaxGateRequest bounds a gate request's body.
	MaxGateRequest = 4 << 10
)

// toolPattern is what a tool's name may be: the names MCP servers, agent
// frameworks and function-calling APIs give tools (send_report,
// mcp__github__create_issue, fs.write_file, slack/post, billing:refund).
var toolPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:/-]*$`)

// CheckTool returns a refusal naming what (e.g. "blocked_tools[0]") when
// name cannot be a tool's name.
func CheckTool(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s: is empty: name a tool, such as send_report", what)
	case len(name) > MaxToolName:
		return fmt.Errorf("%s: %q is %d characters; a tool's name has at most %d", what, Truncate(name, 40), len(name), MaxToolName)
	case !toolPattern.MatchString(name):
		return fmt.Errorf("%s: %q is not a tool's name: use letters, digits and _ . : / -, starting with a letter or digit", what, Truncate(name, 40))
	}
	return nil
}

// validateTools adds a problem for each unfit entry of a question's tool list.
func validateTools(ve *ValidationError, what string, tools []string) {
	if len(tools) > MaxTools {
		ve.add("%s: at most %d tools, got %d", what, MaxTools, len(tools))
		return
	}
	for i, t := range tools {
		if err := CheckTool(fmt.Sprintf("%s[%d]", what, i), t); err != nil {
			ve.add("%s", err)
		}
	}
}

// DecodeGateRequest reads a gate request sent on the subject of tenant and
// job (already checked tokens). The body's tenant and job_id may be left
// out; when given they must be the subject's. Every error names the field
// in the agent's words ("task_version: must be a whole number, not text");
// the request is returned with what could be decoded, so the refusal can
// still say which tool was asked about.
func DecodeGateRequest(tenant, job string, data []byte) (GateRequest, error) {
	var req GateRequest
	if len(data) > MaxGateRequest {
		return req, problem("gate: the request is %d bytes; at most %d are accepted", len(data), MaxGateRequest)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return req, problem("gate: the request is empty: send a JSON object with tool and task_version")
	}
	ve := &ValidationError{}
	leftOut := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&req); err != nil {
		if !isTypeError(err) {
			return GateRequest{}, problem("gate: the request is not a JSON object: %s", jsonProblem(err))
		}
		// Decode the rest, so the refusal names every problem and the
		// tool asked about, not the first value alone.
		req = GateRequest{}
		errs, derr := decodeMembers(data, &req)
		if derr != nil {
			return GateRequest{}, problem("gate: the request is not a JSON object: %s", jsonProblem(derr))
		}
		for _, e := range errs {
			ve.add("%s", jsonProblem(e.err))
			leftOut[strings.ToLower(e.key)] = true
		}
	} else if rest := bytes.TrimSpace(data[dec.InputOffset():]); len(rest) > 0 {
		return req, problem("gate: the request has trailing data after the JSON object")
	}
	if req.Tenant == "" {
		req.Tenant = tenant
	} else if req.Tenant != tenant {
		ve.add("tenant: %q is not the subject's tenant %q", Truncate(req.Tenant, 64), tenant)
	}
	if req.JobID == "" {
		req.JobID = job
	} else if req.JobID != job {
		ve.add("job_id: %q is not the subject's job %q", Truncate(req.JobID, 64), job)
	}
	switch {
	case req.TaskVersion < 0:
		ve.add("task_version: must not be negative")
	case req.TaskVersion > 0 && req.CurrentVersion:
		ve.add("task_version: leave it out with current_version, which decides at the job's current version")
	}
	if err := CheckTool("tool", req.Tool); err != nil && !leftOut["tool"] {
		ve.add("%s", err)
	}
	switch {
	case leftOut["proposal_id"]:
	case req.ProposalID == "" && req.Execute:
		ve.add("proposal_id: is required with execute: executing takes an approved proposal, named by its id")
	case req.ProposalID == "":
	default:
		if err := checkProposalID("proposal_id", req.ProposalID); err != nil {
			ve.add("%s", err)
		}
	}
	return req, ve.orNil()
}
