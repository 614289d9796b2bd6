package agent

import (
	"context"
	"fmt"

	"github.com/askbridge/askbridge/bridge"
)

// ReportExecution tells the runtime, durably, what became of an approved
// proposal the job executed: succeeded or failed, with a detail people
// read on the card. Reporting the same proposal again is one report: the
// runtime records a proposal's first report only.
func (c *Client) ReportExecution(ctx context.Context, e bridge.Execution) error {
	if err := bridge.CheckToken("tenant", e.Tenant); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if err := bridge.CheckToken("job_id", e.JobID); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if e.ProposalID == "" {
		return fmt.Errorf("agent: proposal_id: is required")
	}
	if e.Result != bridge.ResultSucceeded && e.Result != bridge.ResultFailed {
		return fmt.Errorf("agent: result: must be %s or %s, not %q", bridge.ResultSucceeded, bridge.ResultFailed, e.Result)
	}
	msgID := fmt.Sprintf("executed.%s.%s.%s.%s", e.Tenant, e.JobID, e.ProposalID, nonce())
	return bridge.Publish(ctx, c.js, bridge.ExecutedSubject(e.Tenant, e.JobID), msgID, e)
}
