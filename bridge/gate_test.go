package bridge

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeGateRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want GateRequest
		err  string // the whole error text; empty means accepted
	}{
		{name: "design example", body: `{"tenant": "acme", "job_id": "job-0a9dc2d1", "task_version": 3, "tool": "send_report", "proposal_id": "", "execute": false}`,
			want: GateRequest{Tenant: "acme", JobID: "job-0a9dc2d1", TaskVersion: 3, Tool: "send_report"}},
		{name: "tenant and job from the subject", body: `{"task_version": 3, "tool": "send_report"}`,
			want: GateRequest{Tenant: "acme", JobID: "job-0a9dc2d1", TaskVersion: 3, Tool: "send_report"}},
		{name: "an execute", body: `{"tool": "refund", "proposal_id": "pr_8f2a", "execute": true, "task_version": 1}`,
			want: GateRequest{Tenant: "acme", JobID: "job-0a9dc2d1", TaskVersion: 1, Tool: "refund", ProposalID: "pr_8f2a", Execute: true}},
		{name: "empty", body: " \n", err: "gate: the request is empty: send a JSON object with tool and task_version"},
		{name: "not JSON", body: `tool=send_report`, err: "gate: the request is not a JSON object: invalid character 'o' in literal true (expecting 'r') (at byte 2)"},
		{name: "a list", body: `["send_report"]`, err: "gate: the request is not a JSON object: expected an object, not a list"},
		{name: "trailing data", body: `{"tool": "x"} {}`, err: "gate: the request has trailing data after the JSON object"},
		{name: "tool missing", body: `{"task_version": 3}`, err: "tool: is empty: name a tool, such as send_report"},
		{name: "tool with a space", body: `{"tool": "send report"}`,
			err: `tool: "send report" is not a tool's name: use letters, digits and _ . : / -, starting with a letter or digit`},
		{name: "version as text keeps the tool", body: `{"task_version": "3", "tool": "send_report"}`,
			want: GateRequest{Tenant: "acme", JobID: "job-0a9dc2d1", Tool: "send_report"}, err: "task_version: must be a whole number, not text"},
		{name: "every value of the wrong type named", body: `{"task_version": 1.5, "tool": 7, "execute": "yes"}`,
			err: "task_version: must be a whole number, not 1.5; tool: must be text, not a number; execute: must be true or false, not text"},
		{name: "a bad value and a bad tool", body: `{"task_version": "3", "tool": "send report"}`,
			err: `task_version: must be a whole number, not text; tool: "send report" is not a tool's name: use letters, digits and _ . : / -, starting with a letter or digit`},
		{name: "negative version", body: `{"task_version": -1, "tool": "x"}`, err: "task_version: must not be negative"},
		{name: "a version with current_version", body: `{"task_version": 3, "current_version": true, "tool": "x"}`,
			err: "task_version: leave it out with current_version, which decides at the job's current version"},
		{name: "another tenant than the subject's", body: `{"tenant": "globex", "tool": "x"}`,
			err: `tenant: "globex" is not the subject's tenant "acme"`},
		{name: "another job than the subject's", body: `{"job_id": "job-2", "tool": "x"}`,
			err: `job_id: "job-2" is not the subject's job "job-0a9dc2d1"`},
		{name: "execute without a proposal", body: `{"tool": "refund", "execute": true}`,
			err: "proposal_id: is required with execute: executing takes an approved proposal, named by its id"},
		{name: "proposal id with a line break", body: `{"tool": "refund", "proposal_id": "pr\n1"}`,
			err: `proposal_id: "pr\n1" is not a proposal id: no control characters or surrounding spaces`},
		{name: "too large", body: `{"tool": "` + strings.Repeat("x", MaxGateRequest) + `"}`,
			err: "gate: the request is 4108 bytes; at most 4096 are accepted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeGateRequest("acme", "job-0a9dc2d1", []byte(tc.body))
			if tc.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			} else if err == nil || err.Error() != tc.err {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if tc.want != (GateRequest{}) && got != tc.want {
				t.Fatalf("decoded %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzDecodeGateRequest: decoding never panics, every refusal has words,
// and a request it accepts names the subject's tenant and job, a tool
// that CheckTool accepts, and re-encodes to a request accepted unchanged.
func FuzzDecodeGateRequest(f *testing.F) {
	for _, s := range []string{
		``, `null`, `[]`, `{}`, `{"tool":1}`, `{}}`, `{"tool":"x"} x`,
		`{"tenant":"acme","job_id":"job-1","task_version":3,"tool":"send_report"}`,
		`{"task_version":"3","tool":"send_report","proposal_id":"pr_8f2a","execute":true}`,
		`{"tool":"refund","proposal_id":"pr_8f2a","execute":true}`,
		`{"tool":"mcp__github__create_issue","task_version":9223372036854775807}`,
		`{"tool":"send report","execute":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeGateRequest("acme", "job-1", data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("a refusal without words")
			}
			return
		}
		if req.Tenant != "acme" || req.JobID != "job-1" {
			t.Fatalf("accepted a request for %s/%s on acme/job-1's subject", req.Tenant, req.JobID)
		}
		if CheckTool("tool", req.Tool) != nil || req.TaskVersion < 0 || (req.Execute && req.ProposalID == "") {
			t.Fatalf("accepted %+v", req)
		}
		raw, _ := json.Marshal(req)
		again, err := DecodeGateRequest("acme", "job-1", raw)
		if err != nil || again != req {
			t.Fatalf("re-encoded %s: %+v, %v", raw, again, err)
		}
	})
}
