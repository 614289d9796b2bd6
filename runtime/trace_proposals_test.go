package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/policy"
)

// TestTraceFollowsAProposalToItsExecution runs a refund that needs two
// approvals through the real writers: the approvals, a repeated approval
// refused, the execute the gate allows, the agent's report. The trace
// shows each, and a reader sees only that they happened.
func TestTraceFollowsAProposalToItsExecution(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock, Policy: withPolicy(policy.Rule{
		RequireApproval: true, RequiredApprovals: 2, Approvers: []string{"operator", "slack:UFIN"}})})
	ctx := context.Background()
	const job = "job-tx"
	ch := ask(t, env, refundApproval(job, "pr_tx", 240))
	for _, a := range []bridge.AnswerAttempt{
		{AttemptID: "k1", Action: bridge.ActionApprove, By: "slack:UOP", ByName: "kevin"},
		{AttemptID: "k2", Action: bridge.ActionApprove, By: "slack:UOP", ByName: "kevin"},
		{AttemptID: "f1", Action: bridge.ActionApprove, By: "slack:UFIN", ByName: "fiona"},
	} {
		clock.Advance(time.Second)
		a.JobID, a.QuestionID = job, "q-refund"
		attempt(t, env, a)
		testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
			for _, e := range trace(t, env, bridge.TraceRequest{Tenant: "acme", JobID: job}).Entries {
				if e.At.Equal(clock.Now().Truncate(time.Millisecond)) {
					return nil
				}
			}
			return fmt.Errorf("attempt %s is not traced yet", a.AttemptID)
		})
	}
	outcome(t, ch)
	clock.Advance(time.Second)
	if r, err := env.Agent.Execute(ctx, "acme", job, 1, "refund", "pr_tx"); err != nil || !r.Allowed {
		t.Fatalf("execute: %+v %v", r, err)
	}
	clock.Advance(time.Second)
	if err := env.Agent.ReportExecution(ctx, bridge.Execution{Tenant: "acme", JobID: job, ProposalID: "pr_tx",
		Result: bridge.ResultSucceeded, Detail: "Refunded $240 · ref rf_31c9"}); err != nil {
		t.Fatal(err)
	}
	// The final approval is written with the answer it causes, and comes
	// before it.
	want := []string{"asked q-refund", "approval q-refund", "refused q-refund", "approval q-refund", "answered q-refund", "gate", "executed"}
	var got []bridge.TraceEntry
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		got = trace(t, env, bridge.TraceRequest{As: "slack:UOP", Tenant: "acme", JobID: job}).Entries
		if !slices.Equal(kinds(got), want) {
			return fmt.Errorf("trace %v", kinds(got))
		}
		return nil
	})
	texts := []string{
		"May I refund order 4471? (proposal pr_tx: Refund $240 to Jane D.)",
		"pr_tx approved by kevin (slack:UOP) (1 of 2)",
		"You have already approved this proposal; it needs 2 approvals from different people (1 of 2 approvals: kevin).",
		"pr_tx approved by fiona (slack:UFIN) (2 of 2)",
		"The answer: approved",
		"refund: allowed (execute pr_tx)",
		"pr_tx succeeded: Refunded $240 · ref rf_31c9",
	}
	for i, e := range got {
		if e.Text != texts[i] || e.Hidden {
			t.Errorf("entry %d (%s): %q, want %q", i, e.Kind, e.Text, texts[i])
		}
	}
	if e := got[3]; e.ProposalID != "pr_tx" || e.Approvals != 2 || e.Required != 2 || e.By != "slack:UFIN" {
		t.Errorf("the last approval: %+v", e)
	}
	if e := got[2]; e.Code != bridge.RefusedAlreadyApproved || e.By != "slack:UOP" {
		t.Errorf("the refused approval: %+v", e)
	}
	if e := got[6]; e.Result != bridge.ResultSucceeded || e.ProposalID != "pr_tx" {
		t.Errorf("the execution: %+v", e)
	}

	reader := trace(t, env, bridge.TraceRequest{As: "slack:UREADER", Tenant: "acme", JobID: job}).Entries
	if !slices.Equal(kinds(reader), want) {
		t.Fatalf("a reader's trace: %v", kinds(reader))
	}
	for _, e := range reader {
		if !e.Hidden || e.ProposalID != "" || e.By != "" || strings.Contains(e.Text, "240") || strings.Contains(e.Text, "pr_tx") {
			t.Errorf("a reader's %s entry: %+v", e.Kind, e)
		}
	}
	if e := reader[5]; e.Tool != "refund" || e.Code != bridge.GateAllowed || e.Text != "refund: allowed" {
		t.Errorf("a reader's gate entry: %+v", e)
	}
}
