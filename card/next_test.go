package card

import (
	"testing"

	"github.com/askbridge/askbridge/bridge"
)

func TestNextStepAndApprovedSoFar(t *testing.T) {
	t.Parallel()
	c := Card{JobID: "job-3", State: bridge.StateAnswered}
	if got := c.NextStep("console:alice", "console:alice"); got != "Your answer reached the agent; job-3 goes on." {
		t.Errorf("yours: %q", got)
	}
	if got := c.NextStep("console:alice", "slack:U0KEV"); got != "The answer reached the agent; job-3 goes on." {
		t.Errorf("another's: %q", got)
	}
	if got := (Card{State: bridge.StateTimedOut}).NextStep("x:y", ""); got != "" {
		t.Errorf("timed out: %q", got)
	}
	p := &bridge.ProposalStatus{Required: 2, Approvals: []bridge.Approval{{By: "console:alice"}}}
	w := Card{State: bridge.StatePending, Proposal: p}
	if got := w.ApprovedSoFar(); got != "Approved, 1 of 2: it runs once the second approver agrees." {
		t.Errorf("1 of 2: %q", got)
	}
	p.Required = 4
	if got := w.ApprovedSoFar(); got != "Approved, 1 of 4: it runs once 3 more approvers agree." {
		t.Errorf("1 of 4: %q", got)
	}
	p.MayApprove = []string{"admin"}
	w.MayAnswer = MayAnswer{Roles: "operators", Owner: &Person{Identity: "cli:carol"}}
	if got := w.WhoMayAct(); got.Label != LabelMayApprove || got.Text() != "admin" {
		t.Errorf("who may act: %s %q", got.Label, got.Text())
	}
}
