package console

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// setView changes what the runtime's view of q says, as the runtime
// would after approvals, a decision, an execution or an expiry.
func (r *responder) setView(q bridge.Question, f func(v *bridge.QuestionView)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.find(q.Tenant, q.JobID, q.QuestionID).view)
}

// TestProposalPagesSayWhatTheCardsSay: an approval's question page shows
// its proposal (summary, amount, the arguments table) and, as the
// proposal moves on, the cards' labels and N-of-M line; the job page
// the same label.
func TestProposalPagesSayWhatTheCardsSay(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	amount := 240.0
	expires := time.Now().UTC().Add(2 * time.Hour).Truncate(time.Second)
	q := bridge.Question{Tenant: "acme", JobID: "job-p", QuestionID: "q-p", TaskVersion: 1, Kind: bridge.KindApproval,
		Question: "May I refund order 4471?", Answerers: []string{"console:alice"}, Timeout: "4h",
		Proposal: &bridge.Proposal{ID: "pr_8f2a", Action: "refund", Summary: []string{"Refund $240 to Jane D."},
			Arguments: json.RawMessage(`{"order": 4471, "customer": "Jane <D.>"}`), Amount: &amount, Currency: "USD", ExpiresAt: expires}}
	h.rt.add(q)
	kevin := bridge.Approval{By: "slack:U0KEV", ByName: "kevin", Via: "slack", At: time.Now().UTC()}
	h.rt.setView(q, func(v *bridge.QuestionView) {
		v.Proposal = &bridge.ProposalStatus{ID: "pr_8f2a", State: bridge.ProposalPending, Required: 2,
			Approvals: []bridge.Approval{kevin}, MayApprove: []string{"admin", "console:alice"}}
	})
	link := h.questionURL("console:alice", q)
	p := h.get(link)
	for _, want := range []string{
		`<p class="state-line" id="state-line"><span class="part">Waiting for approval</span> · <span class="part">1 of 2 approvals: slack:U0KEV (kevin)</span> · <span class="part">waiting `,
		"<dt>Who may still approve</dt><dd>admin, console:alice</dd>",
		`<dt>Expires</dt><dd><time datetime="` + expires.Format(time.RFC3339) + `">`,
		"<h2>Proposal <code>pr_8f2a</code></h2>", "<li>Refund $240 to Jane D.</li>", "<strong>Amount:</strong> 240 USD",
		`<tr><th scope="row"><code>order</code></th><td>4471</td></tr>`,
		`<tr><th scope="row"><code>customer</code></th><td>Jane &lt;D.&gt;</td></tr>`,
		`value="approve">Approve</button>`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("waiting approval: page lacks %q", want)
		}
	}
	// The policy says who may approve; who may answer (the owner among
	// them, whom a policy may bar) would say otherwise.
	if strings.Contains(p.body, "<dt>Who may answer</dt>") {
		t.Errorf("a waiting approval the policy narrows shows who may answer:\n%s", p.body)
	}
	if strings.Contains(p.body, "<D.>") {
		t.Errorf("the arguments are not escaped:\n%s", p.body)
	}

	executed := bridge.ProposalStatus{ID: "pr_8f2a", State: bridge.ProposalExecuted, Required: 2, Approvals: []bridge.Approval{kevin, kevin},
		Result: bridge.ResultSucceeded, Detail: "Refunded $240 · ref rf_31c9", ExecutedAt: time.Now().UTC()}
	executed.Approvals[1].By, executed.Approvals[1].ByName = "console:alice", ""
	failed := executed
	failed.State, failed.Result, failed.Detail = bridge.ProposalExecutionFailed, bridge.ResultFailed, "card expired"
	expired := bridge.ProposalStatus{ID: "pr_8f2a", State: bridge.ProposalExpired, Required: 2, Approvals: []bridge.Approval{kevin}, ExpiresAt: expires}
	answered := func(v *bridge.QuestionView) {
		v.State, v.By, v.Via, v.Answer, v.AnswerText, v.SettledAt = bridge.StateAnswered, "console:alice", "console",
			json.RawMessage(`"approved"`), bridge.Approved, time.Now().UTC()
	}
	for _, tc := range []struct {
		name  string
		set   func(v *bridge.QuestionView)
		label string
		want  []string
	}{
		{"approved", func(v *bridge.QuestionView) {
			answered(v)
			v.Proposal = &bridge.ProposalStatus{ID: "pr_8f2a", State: bridge.ProposalApproved, Required: 2, Approvals: executed.Approvals}
		}, "Approved (not yet executed)", []string{
			`<p class="next-step" id="next-step">Your approval reached the agent: it runs the proposal now, and this page shows the result once it reports it.</p>`,
			`<p class="approvals">2 of 2 approvals: slack:U0KEV (kevin) and console:alice</p>`}},
		{"executed", func(v *bridge.QuestionView) { answered(v); v.Proposal = &executed }, "Executed",
			[]string{`<p class="outcome-line">Executed: Refunded $240 · ref rf_31c9</p>`,
				`<p class="approvals">2 of 2 approvals: slack:U0KEV (kevin) and console:alice</p>`}},
		{"execution failed", func(v *bridge.QuestionView) { answered(v); v.Proposal = &failed }, "Execution failed",
			[]string{`<p class="outcome-line">Execution failed: card expired</p>`}},
		{"expired", func(v *bridge.QuestionView) {
			v.State, v.Text, v.SettledAt, v.Proposal = bridge.StateTimedOut, bridge.TimedOutText(4*time.Hour), expires, &expired
		}, "Expired", []string{`<p class="next-step" id="next-step">The approval came too late: the proposal expired, and the agent does not run it.</p>`,
			`<p class="approvals">1 of 2 approvals: slack:U0KEV (kevin)</p>`}},
	} {
		h.rt.setView(q, tc.set)
		p := h.get(link)
		if p.status != http.StatusOK || !strings.Contains(p.body, `<h2 id="outcome-h">`+tc.label+`</h2>`) {
			t.Errorf("%s: heading is not %q:\n%s", tc.name, tc.label, p.body)
		}
		for _, want := range tc.want {
			if !strings.Contains(p.body, want) {
				t.Errorf("%s: page lacks %q", tc.name, want)
			}
		}
		if strings.Contains(p.body, `value="approve"`) || strings.Contains(p.body, "<dt>Expires</dt>") {
			t.Errorf("%s: a decided approval offers Approve or says when it expires", tc.name)
		}
		// Said once: no "approved" answer under the heading, nor the
		// heading again in an outcome line, nor "Who may answer".
		if strings.Contains(p.body, `<p class="answer">`) || strings.Contains(p.body, `<p class="outcome-line">`+tc.label+" by") || strings.Contains(p.body, `<p class="outcome-line">`+tc.label+"</p>") ||
			strings.Contains(p.body, "Who may answer") {
			t.Errorf("%s: the page repeats itself:\n%s", tc.name, p.body)
		}
		class := map[string]string{"approved": "answered state-approved", "executed": "answered state-executed",
			"execution failed": "answered state-execution_failed", "expired": "timed_out state-expired"}[tc.name]
		job := h.get(h.signer.JobURL("console:alice", q.Tenant, q.JobID, time.Hour))
		if !strings.Contains(job.body, `<span class="state state-`+class+`">`+tc.label+"</span>") {
			t.Errorf("%s: job page lacks the label %q:\n%s", tc.name, tc.label, job.body)
		}
	}
}
