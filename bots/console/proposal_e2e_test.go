package console

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/policy"
)

// TestE2EProposalPagesFollowTheRuntime: with the runtime and a policy
// asking two approvals, the question page counts the first, says
// approved (not yet executed) after the second, and executed with the
// agent's detail after its report; the job page says the same label.
func TestE2EProposalPagesFollowTheRuntime(t *testing.T) {
	t.Parallel()
	var pol policy.Holder
	pol.Store(&policy.Policy{Tenants: map[string]policy.Tenant{"acme": {Actions: map[string]policy.Rule{
		"refund": {RequireApproval: true, RequiredApprovals: 2}}}}})
	h, env := newEnvHarness(t, testenv.Options{Policy: &pol})
	amount := 240.0
	q := bridge.Question{Tenant: "acme", JobID: "job-pr", QuestionID: "q-pr", TaskVersion: 1, Kind: bridge.KindApproval,
		Question: "May I refund order 4471?", Answerers: []string{"console:alice", "console:bob"},
		Proposal: &bridge.Proposal{ID: "pr-console-1", Action: "refund", Summary: []string{"Refund $240 to Jane D."},
			Arguments: json.RawMessage(`{"order": 4471}`), Amount: &amount, Currency: "USD"}}
	ask(t, h, env, q)
	approve := func(who string) page {
		link := h.questionURL(who, q)
		form := formValues(t, h.get(link).body, "answer-form")
		form.Set("action", "approve")
		return h.decidedPage(h.post(link, form))
	}
	p := approve("console:alice")
	for _, want := range []string{`<p class="state-line" id="state-line"><span class="part">Waiting for approval</span> · <span class="part">1 of 2 approvals: console:alice</span> · <span class="part">waiting `,
		`<div class="alert alert-info" role="status" id="approved"><p>Approved, 1 of 2: it runs once the second approver agrees.</p>`,
		`<tr><th scope="row"><code>order</code></th><td>4471</td></tr>`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("after one approval, the page lacks %q:\n%s", want, p.body)
		}
	}
	p = approve("console:bob")
	if !strings.Contains(p.body, `<h2 id="outcome-h">Approved (not yet executed)</h2>`) ||
		!strings.Contains(p.body, `<p class="approvals">2 of 2 approvals: console:alice and console:bob</p>`) ||
		!strings.Contains(p.body, "Your approval reached the agent: it runs the proposal now") {
		t.Errorf("after two approvals:\n%s", p.body)
	}
	if err := env.Agent.ReportExecution(context.Background(), bridge.Execution{Tenant: q.Tenant, JobID: q.JobID,
		ProposalID: q.Proposal.ID, Result: bridge.ResultSucceeded, Detail: "Refunded $240 · ref rf_31c9"}); err != nil {
		t.Fatal(err)
	}
	link := h.questionURL("console:alice", q)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		p = h.get(link)
		if !strings.Contains(p.body, `<h2 id="outcome-h">Executed</h2>`) ||
			!strings.Contains(p.body, `<p class="outcome-line">Executed: Refunded $240 · ref rf_31c9</p>`) {
			return errors.New("the page does not say executed yet")
		}
		return nil
	})
	job := h.get(h.signer.JobURL("console:alice", q.Tenant, q.JobID, time.Hour))
	if !strings.Contains(job.body, ">Executed</span>") || !strings.Contains(job.body, "2 of 2 approvals: console:alice and console:bob") {
		t.Errorf("job page:\n%s", job.body)
	}
}
