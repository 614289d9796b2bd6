package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// GateWait bounds a gate request whose context has no deadline. The gate
// answers from the record and never waits for a person, so a reply that
// takes longer means no runtime is answering.
const GateWait = 10 * time.Second

// Gate asks the runtime whether the job, at task version version, may
// call tool now (docs/contract.md, "The gate"). The reply says allowed or
// why not; an error means no decision was had (NATS failed, no runtime
// answered, ctx ended), which the caller must treat as not allowed.
func (c *Client) Gate(ctx context.Context, tenant, job string, version int64, tool string) (bridge.GateReply, error) {
	return c.gate(ctx, bridge.GateRequest{Tenant: tenant, JobID: job, TaskVersion: version, Tool: tool})
}

// Execute takes an approved proposal for execution, once: allowed, the
// reply carries the arguments as approved and the proposal's idempotency
// key; every later Execute of it gets proposal_executed with the same
// key. tool is the proposal's action. Errors are as Gate's; an Execute
// whose reply was lost may be sent again: it finds the proposal executed
// and the key to look the execution up by.
func (c *Client) Execute(ctx context.Context, tenant, job string, version int64, tool, proposalID string) (bridge.GateReply, error) {
	if proposalID == "" {
		return bridge.GateReply{}, fmt.Errorf("agent: execute: proposal_id: is required")
	}
	return c.gate(ctx, bridge.GateRequest{Tenant: tenant, JobID: job, TaskVersion: version, Tool: tool, ProposalID: proposalID, Execute: true})
}

func (c *Client) gate(ctx context.Context, req bridge.GateRequest) (bridge.GateReply, error) {
	var reply bridge.GateReply
	if err := bridge.CheckToken("tenant", req.Tenant); err != nil {
		return reply, fmt.Errorf("agent: %w", err)
	}
	if err := bridge.CheckToken("job_id", req.JobID); err != nil {
		return reply, fmt.Errorf("agent: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, GateWait)
		defer cancel()
	}
	if err := bridge.Request(ctx, c.nc, bridge.GateSubject(req.Tenant, req.JobID), req, &reply); err != nil {
		return bridge.GateReply{}, fmt.Errorf("agent: gate: %w", err)
	}
	return reply, nil
}
