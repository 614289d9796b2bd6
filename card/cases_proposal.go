package card

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// The proposal of the approval cases, and who approves it.
const (
	CaseApprover2     = "discord:300000000000000003"
	CaseApprover2Name = "ana"
	CaseFinance       = "slack:U0FIN"
)

// CaseExpires is when the cases' proposal expires.
var CaseExpires = CaseAsked.Add(2 * time.Hour)

func caseProposal() *bridge.Proposal {
	amount := 240.0
	return &bridge.Proposal{ID: "pr_8f2a", Action: "refund", Summary: []string{"Refund $240 to Jane D.", "Reason: damaged item"},
		Arguments: json.RawMessage(`{"order": 4471, "amount": 240, "customer": "Jane D.", "notify": true, "lines": [1, 2]}`),
		Amount:    &amount, Currency: "USD", ExpiresAt: CaseExpires}
}

// proposalCases are an approval's states beyond the question's own: N of
// M approvals while it waits, approved and not yet executed, executed,
// execution failed, denied with a reason, expired; and arguments too
// many and too long for a card.
func proposalCases() []Case {
	q := caseQuestion()
	q.Kind, q.Question, q.Proposal = bridge.KindApproval, "May I refund order 4471?", caseProposal()
	kevin := bridge.Approval{By: CaseBy, ByName: CaseByName, Via: "slack", At: CaseAsked.Add(30 * time.Minute)}
	ana := bridge.Approval{By: CaseApprover2, ByName: CaseApprover2Name, Via: "discord", At: CaseEnded}
	status := func(state string, required int, approvals ...bridge.Approval) *bridge.ProposalStatus {
		return &bridge.ProposalStatus{ID: "pr_8f2a", State: state, Approvals: approvals, Required: required, ExpiresAt: CaseExpires}
	}
	approved := &Ending{Event: bridge.EventAnswered, By: CaseApprover2, ByName: CaseApprover2Name, Answer: bridge.Approved, At: CaseEnded}
	with := func(name string, e *Ending, p *bridge.ProposalStatus) Case {
		in := caseInput(q, true, e)
		in.Proposal = p
		return Case{Group: "approval_proposal", Name: name, Input: in}
	}
	// A rule naming no approvers: whoever may answer may approve, less
	// who approved and, as the rule forbids self-approval, the owner.
	pendingTwo := status(bridge.ProposalPending, 2)
	pendingTwo.MayApprove = append(q.WaitsFor(), q.AnswerRoles())
	ana1 := bridge.Approval{By: CaseAnswererSlack, ByName: "ana", Via: "slack", At: CaseAsked.Add(30 * time.Minute)}
	anyOneOfTwo := status(bridge.ProposalPending, 2, ana1)
	anyOneOfTwo.MayApprove = []string{CaseAnswererDiscord, q.AnswerRoles()}
	// A rule naming its approvers.
	oneOfTwo := status(bridge.ProposalPending, 2, kevin)
	oneOfTwo.MayApprove = []string{"admin", CaseFinance}
	executed := status(bridge.ProposalExecuted, 2, kevin, ana)
	executed.ExecutedAt, executed.Result, executed.Detail = CaseEnded.Add(5*time.Minute), bridge.ResultSucceeded, "Refunded $240 · ref rf_31c9"
	failed := *executed
	failed.State, failed.Result, failed.Detail = bridge.ProposalExecutionFailed, bridge.ResultFailed, "The payment provider refused: card expired"
	many := *q
	many.Proposal = caseProposal()
	var args []string
	for i := range 12 {
		args = append(args, fmt.Sprintf(`"argument_%02d_%s": "%s"`, i, strings.Repeat("k", 50), strings.Repeat("value ", 40)))
	}
	many.Proposal.Arguments = json.RawMessage("{" + strings.Join(args, ", ") + "}")
	manyIn := caseInput(&many, true, nil)
	return []Case{
		with("pending, 2 needed", nil, pendingTwo),
		with("pending, 1 of 2 approvals", nil, oneOfTwo),
		with("pending, 1 of 2, no approvers named", nil, anyOneOfTwo),
		with("approved, 1 needed", &Ending{Event: bridge.EventAnswered, By: CaseBy, ByName: CaseByName, Answer: bridge.Approved, At: CaseEnded},
			status(bridge.ProposalApproved, 1, kevin)),
		with("approved, 2 of 2", approved, status(bridge.ProposalApproved, 2, kevin, ana)),
		with("executed", approved, executed),
		with("execution failed", approved, &failed),
		with("denied, 1 of 2", &Ending{Event: bridge.EventAnswered, By: CaseApprover2, ByName: CaseApprover2Name, Answer: bridge.Denied,
			Comment: "the customer already got a voucher", At: CaseEnded}, status(bridge.ProposalDenied, 2, kevin)),
		with("expired", &Ending{Event: bridge.EventTimedOut, Text: bridge.TimedOutText(q.TimeoutDuration()), At: CaseExpires},
			status(bridge.ProposalExpired, 2, kevin)),
		{Group: "approval_proposal", Name: "pending, many long arguments", Input: manyIn},
	}
}
