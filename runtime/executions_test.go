package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

func TestExecutionReported(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-xr")
	ctx := context.Background()
	ch := ask(t, env, refundApproval("job-xr", "pr_run", 240))
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-xr", QuestionID: "q-refund", AttemptID: "ok", Action: bridge.ActionApprove, By: "slack:UOP"})
	outcome(t, ch)
	// Reports that change nothing: malformed, another job's, unknown.
	for _, raw := range []string{`{"tenant":`, `[]`, `{"tenant":"acme","job_id":"job-xr","proposal_id":"pr_run","result":"done"}`,
		`{"tenant":"acme","job_id":"job-other","proposal_id":"pr_run","result":"succeeded"}`,
		`{"tenant":"acme","job_id":"job-xr","proposal_id":"pr_none","result":"succeeded"}`} {
		if _, err := env.NATS.JS.Publish(ctx, bridge.ExecutedSubject("acme", "job-xr"), []byte(raw)); err != nil {
			t.Fatal(err)
		}
	}
	report := bridge.Execution{Tenant: "acme", JobID: "job-xr", ProposalID: "pr_run", Result: bridge.ResultSucceeded, Detail: "Refunded $240 · ref rf_31c9"}
	if err := env.Agent.ReportExecution(ctx, report); err != nil {
		t.Fatal(err)
	}
	ev := eventOf(t, events, "job-xr", bridge.EventExecuted)
	p := ev.Proposal
	if p == nil || p.State != bridge.ProposalExecuted || p.Result != bridge.ResultSucceeded || p.Detail != report.Detail || p.ExecutedAt.IsZero() {
		t.Fatalf("executed event's proposal: %+v", p)
	}
	if ev.Question == nil || ev.QuestionID != "q-refund" || ev.Text != "The proposal pr_run was executed: Refunded $240 · ref rf_31c9." ||
		ev.State != bridge.StateAnswered {
		t.Fatalf("executed event: %+v", ev)
	}
	// A repeat, under another message id, changes nothing.
	report.Result, report.Detail = bridge.ResultFailed, "timeout"
	if _, err := env.NATS.JS.Publish(ctx, bridge.ExecutedSubject("acme", "job-xr"), mustJSON(report)); err != nil {
		t.Fatal(err)
	}
	if err := env.Agent.ReportExecution(ctx, bridge.Execution{Tenant: "acme", JobID: "job-xr", ProposalID: "pr_run", Result: bridge.ResultFailed}); err != nil {
		t.Fatal(err)
	}
	marker := refundApproval("job-xr", "pr_marker", 1)
	marker.QuestionID = "q-marker"
	ask(t, env, marker)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if n := strings.Count(events.EventTypes(), bridge.EventAsked); n != 2 {
			return fmt.Errorf("events %s", events.EventTypes())
		}
		return nil
	})
	if n := strings.Count(events.EventTypes(), bridge.EventExecuted); n != 1 {
		t.Fatalf("%d executed events: %s", n, events.EventTypes())
	}
	row := proposalRow(t, env, "pr_run")
	if row.State != bridge.ProposalExecuted || row.Result != bridge.ResultSucceeded || row.Detail != "Refunded $240 · ref rf_31c9" {
		t.Fatalf("proposal: %+v", row)
	}
	want := `executed {"proposal_id":"pr_run","result":"succeeded","detail":"Refunded $240 · ref rf_31c9"}`
	if got := logOf(t, env, "job-xr"); !contains(got, want) {
		t.Fatalf("job log %q lacks %s", got, want)
	}
	if v := show(t, env, "slack:UADMIN", "job-xr", "q-refund").Question; v.Proposal == nil || v.Proposal.State != bridge.ProposalExecuted ||
		v.Proposal.Detail != "Refunded $240 · ref rf_31c9" {
		t.Fatalf("shown: %+v", v.Proposal)
	}
}

func TestFailedExecutionReported(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-xf")
	ch := ask(t, env, refundApproval("job-xf", "pr_fail", 240))
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-xf", QuestionID: "q-refund", AttemptID: "ok", Action: bridge.ActionApprove, By: "slack:UOP"})
	outcome(t, ch)
	if err := env.Agent.ReportExecution(context.Background(), bridge.Execution{Tenant: "acme", JobID: "job-xf", ProposalID: "pr_fail",
		Result: bridge.ResultFailed, Detail: "card declined"}); err != nil {
		t.Fatal(err)
	}
	ev := eventOf(t, events, "job-xf", bridge.EventExecuted)
	if ev.Proposal == nil || ev.Proposal.State != bridge.ProposalExecutionFailed || ev.Proposal.Detail != "card declined" ||
		ev.Text != "The proposal pr_fail failed to execute: card declined." {
		t.Fatalf("executed event: %q %+v", ev.Text, ev.Proposal)
	}
}

// TestReportAfterTheGateExecuted checks a report of a proposal the gate
// executed keeps the execute's time and key, and a failed report reads
// execution_failed.
func TestReportAfterTheGateExecuted(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-gr")
	ctx := context.Background()
	ch := ask(t, env, refundApproval("job-gr", "pr_gr", 240))
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-gr", QuestionID: "q-refund", AttemptID: "ok", Action: bridge.ActionApprove, By: "slack:UOP"})
	outcome(t, ch)
	exec, err := env.Agent.Execute(ctx, "acme", "job-gr", 1, "refund", "pr_gr")
	if err != nil || !exec.Allowed {
		t.Fatalf("execute: %+v, %v", exec, err)
	}
	executedAt := proposalRow(t, env, "pr_gr").ExecutedAt
	if err := env.Agent.ReportExecution(ctx, bridge.Execution{Tenant: "acme", JobID: "job-gr", ProposalID: "pr_gr",
		Result: bridge.ResultFailed, Detail: "the bank said no"}); err != nil {
		t.Fatal(err)
	}
	ev := eventOf(t, events, "job-gr", bridge.EventExecuted)
	if p := ev.Proposal; p == nil || p.State != bridge.ProposalExecutionFailed || !p.ExecutedAt.Equal(executedAt) || p.Detail != "the bank said no" {
		t.Fatalf("executed event's proposal: %+v (executed at %s)", p, executedAt)
	}
	row := proposalRow(t, env, "pr_gr")
	if row.State != bridge.ProposalExecutionFailed || !row.ExecutedAt.Equal(executedAt) || row.IdempotencyKey != exec.IdempotencyKey || row.ReportedAt.IsZero() {
		t.Fatalf("proposal: %+v", row)
	}
	if again, err := env.Agent.Execute(ctx, "acme", "job-gr", 1, "refund", "pr_gr"); err != nil || again.Allowed || again.IdempotencyKey != exec.IdempotencyKey {
		t.Fatalf("execute after the report: %+v, %v", again, err)
	}
}
