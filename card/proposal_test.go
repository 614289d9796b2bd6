package card

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// caseByName is the shared table's case group/name.
func caseByName(t *testing.T, name string) Input {
	t.Helper()
	for _, c := range Cases() {
		if c.Group+"/"+c.Name == name {
			return c.Input
		}
	}
	t.Fatalf("no case %s", name)
	return Input{}
}

// TestProposalStatesReadApart: every state of an approval has its own
// label and outcome, approved never reads as done, and only a waiting
// approval can be decided.
func TestProposalStatesReadApart(t *testing.T) {
	cases := []struct {
		name, state, label, outcome, approvals string
	}{
		{"approval/pending", bridge.StatePending, "Waiting for approval", "", ""},
		{"approval_proposal/pending, 2 needed", bridge.StatePending, "Waiting for approval", "", "0 of 2 approvals"},
		{"approval_proposal/pending, 1 of 2 approvals", bridge.StatePending, "Waiting for approval", "",
			"1 of 2 approvals: slack:U0KEV (kevin)"},
		{"approval_proposal/approved, 1 needed", StateApproved, "Approved (not yet executed)",
			"Approved (not yet executed) by slack:U0KEV (kevin)", ""},
		{"approval_proposal/approved, 2 of 2", StateApproved, "Approved (not yet executed)",
			"Approved (not yet executed) by slack:U0KEV (kevin) and discord:300000000000000003 (ana)", ""},
		{"approval_proposal/executed", StateExecuted, "Executed", "Executed: Refunded $240 · ref rf_31c9",
			"2 of 2 approvals: slack:U0KEV (kevin) and discord:300000000000000003 (ana)"},
		{"approval_proposal/execution failed", StateExecutionFailed, "Execution failed",
			"Execution failed: The payment provider refused: card expired",
			"2 of 2 approvals: slack:U0KEV (kevin) and discord:300000000000000003 (ana)"},
		{"approval_proposal/denied, 1 of 2", StateDenied, "Denied",
			"Denied by discord:300000000000000003 (ana): the customer already got a voucher", "1 of 2 approvals: slack:U0KEV (kevin)"},
		{"approval_proposal/expired", StateExpired, "Expired", "Expired before it was decided", "1 of 2 approvals: slack:U0KEV (kevin)"},
		{"approval/approved", StateApproved, "Approved (not yet executed)", "Approved (not yet executed) by slack:U0KEV (kevin)", ""},
		{"approval/cancelled", bridge.StateCancelled, "Cancelled", "Cancelled: the customer called back", ""},
	}
	labels := map[string]string{}
	for _, tc := range cases {
		c := New(caseByName(t, tc.name))
		if c.State != tc.state || c.StateLabel != tc.label || c.Outcome.Text() != tc.outcome || c.ApprovalsLine().Text() != tc.approvals {
			t.Errorf("%s:\n state %q label %q\n outcome %q\n approvals %q\nwant %q %q\n %q\n %q", tc.name, c.State, c.StateLabel,
				c.Outcome.Text(), c.ApprovalsLine().Text(), tc.state, tc.label, tc.outcome, tc.approvals)
		}
		if prev, ok := labels[c.StateLabel]; ok && prev != c.State {
			t.Errorf("%s and %s share the label %q", prev, c.State, c.StateLabel)
		}
		labels[c.StateLabel] = c.State
		if strings.Contains(strings.ToLower(c.StateLabel+c.Outcome.Text()), "done") {
			t.Errorf("%s says done: %q", tc.name, c.Outcome.Text())
		}
		decides := slices.ContainsFunc(c.Enabled(), func(k Control) bool { return k.Action == ActApprove || k.Action == ActDeny })
		if decides != (tc.state == bridge.StatePending) {
			t.Errorf("%s: Approve/Deny enabled %v in state %s", tc.name, decides, c.State)
		}
	}
}

func TestWaitingProposalLines(t *testing.T) {
	c := New(caseByName(t, "approval_proposal/pending, 1 of 2 approvals"))
	if got := c.MayApproveLine().Text(); got != "admin, slack:U0FIN" {
		t.Errorf("who may still approve: %q", got)
	}
	if got := c.ExpiresLine(); got.Label != "Expires" || got.Text() != "20 Oct 2026, 12:00 UTC" {
		t.Errorf("expires: %q %q", got.Label, got.Text())
	}
	ended := New(caseByName(t, "approval_proposal/expired"))
	if !ended.ExpiresLine().IsZero() || !ended.MayApproveLine().IsZero() || !ended.Ended.Equal(CaseExpires) {
		t.Errorf("an expired card shows %q, %q, ended %v", ended.ExpiresLine().Text(), ended.MayApproveLine().Text(), ended.Ended)
	}
	if ex := New(caseByName(t, "approval_proposal/executed")); !ex.Ended.Equal(CaseEnded.Add(5 * time.Minute)) {
		t.Errorf("an executed card ended %v, not when it was executed", ex.Ended)
	}
}

func TestProposalSections(t *testing.T) {
	c := New(caseByName(t, "approval/pending"))
	var got []string
	for _, s := range c.Sections {
		switch {
		case s.Rows != nil:
			for _, r := range s.Rows {
				got = append(got, s.Label+": "+r.Key+" = "+r.Value)
			}
		case s.Lines != nil:
			got = append(got, s.Label+": "+strings.Join(s.Lines, " / "))
		default:
			got = append(got, s.Label+": "+s.Text)
		}
	}
	want := []string{"Why it matters: The board prints it.", "Proposal: Refund $240 to Jane D. / Reason: damaged item", "Amount: 240 USD",
		"Arguments: order = 4471", "Arguments: amount = 240", "Arguments: customer = Jane D.", "Arguments: notify = true",
		"Arguments: lines = [1,2]"}
	if !slices.Equal(got, want) {
		t.Errorf("sections:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	many := New(caseByName(t, "approval_proposal/pending, many long arguments"))
	args := many.Sections[len(many.Sections)-1]
	if len(args.Rows) != MaxArgumentRows || args.More != 4 || MoreText(args.More) != "…and 4 more" {
		t.Fatalf("%d rows, %d more", len(args.Rows), args.More)
	}
	for _, r := range args.Rows {
		if n := len([]rune(r.Key)); n > MaxArgumentKey || !strings.HasSuffix(r.Key, "…") {
			t.Errorf("key of %d characters: %q", n, r.Key)
		}
		if n := len([]rune(r.Value)); n > MaxArgumentValue || !strings.HasSuffix(r.Value, "…") {
			t.Errorf("value of %d characters: %q", n, r.Value)
		}
	}
	for _, raw := range []string{``, `[1,2]`, `"x"`, `{"a": }`, `null`} {
		if rows, more := arguments(json.RawMessage(raw)); rows != nil || more != 0 {
			t.Errorf("arguments %q: %v, %d", raw, rows, more)
		}
	}
	for _, tc := range []struct {
		amount   float64
		currency string
		want     string
	}{{240, "USD", "240 USD"}, {12.5, "EUR", "12.50 EUR"}, {0.001, "BTC", "0.001 BTC"}, {3, "", "3"}} {
		if got := amountText(&tc.amount, tc.currency); got != tc.want {
			t.Errorf("amount %v %s: %q", tc.amount, tc.currency, got)
		}
	}
}

// TestProposalFromEventsAndViews: the latest proposal status an event
// carried decides the card; a view carries it too.
func TestProposalFromEventsAndViews(t *testing.T) {
	q := caseByName(t, "approval/pending").Question
	kevin := bridge.Approval{By: CaseBy, ByName: CaseByName}
	recorded := &bridge.Event{Type: bridge.EventApproval, Proposal: &bridge.ProposalStatus{State: bridge.ProposalPending, Required: 2,
		Approvals: []bridge.Approval{kevin}}}
	c := New(FromEvents(q, false, &bridge.Event{Type: bridge.EventAsked}, recorded))
	if !c.Pending() || c.ApprovalsLine().Text() != "1 of 2 approvals: slack:U0KEV (kevin)" || len(c.Enabled()) != 5 {
		t.Fatalf("after approval_recorded: %s, %q, %d controls", c.State, c.ApprovalsLine().Text(), len(c.Enabled()))
	}
	answered := &bridge.Event{Type: bridge.EventAnswered, By: CaseBy, AnswerText: bridge.Approved,
		Proposal: &bridge.ProposalStatus{State: bridge.ProposalApproved, Required: 1, Approvals: []bridge.Approval{kevin}}}
	executed := &bridge.Event{Type: bridge.EventExecuted, Proposal: &bridge.ProposalStatus{State: bridge.ProposalExecuted, Required: 1,
		Approvals: []bridge.Approval{kevin}, Result: bridge.ResultSucceeded, Detail: "ref rf_1"}}
	if c := New(FromEvents(q, false, answered, executed)); c.StateLabel != "Executed" || c.Outcome.Text() != "Executed: ref rf_1" {
		t.Fatalf("after executed: %q, %q", c.StateLabel, c.Outcome.Text())
	}
	v := &bridge.QuestionView{State: bridge.StateAnswered, Question: q, AnswerText: bridge.Approved, By: CaseBy,
		Proposal: &bridge.ProposalStatus{State: bridge.ProposalExecutionFailed, Detail: "refused"}}
	if c := New(FromView(v, false)); c.StateLabel != "Execution failed" || c.Outcome.Text() != "Execution failed: refused" {
		t.Fatalf("view: %q, %q", c.StateLabel, c.Outcome.Text())
	}
	// A question's own card knows nothing of proposals.
	if c := New(Input{Question: question(), Proposal: executed.Proposal}); !c.Pending() || c.Proposal != nil {
		t.Fatalf("a question's card took a proposal: %s", c.State)
	}
}

// TestHiddenProposalShowsNoDetail: a restricted approval's card says it
// was executed, not what the agent reported.
func TestHiddenProposalShowsNoDetail(t *testing.T) {
	in := caseByName(t, "approval_proposal/executed")
	q := *in.Question
	q.Visibility = bridge.VisibilityRestricted
	in.Question = &q
	c := New(in)
	raw, _ := json.Marshal(c)
	for _, secret := range []string{"rf_31c9", "4471", "Jane"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("a restricted executed card shows %q", secret)
		}
	}
	if c.Outcome.Text() != "Executed" {
		t.Errorf("outcome %q", c.Outcome.Text())
	}
}
