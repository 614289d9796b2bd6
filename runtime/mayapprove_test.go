package runtime_test

import (
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/policy"
)

// TestMayApproveWithoutApprovers: a rule asking two approvals that names
// no approvers lets whoever may answer approve, so who may still approve
// is who may answer, less the people who approved and, as the policy
// forbids self-approval, the owner (any of the owner's accounts). Each
// identity the list leaves out is refused as it says.
func TestMayApproveWithoutApprovers(t *testing.T) {
	t.Parallel()
	const janeDiscord = "discord:111111111111111111"
	env := testenv.Start(t, testenv.Options{Roles: roles,
		People: bridge.People{"jane": {"slack:UJANE", janeDiscord}},
		Policy: withPolicy(policy.Rule{RequireApproval: true, RequiredApprovals: 2, ForbidSelfApproval: true})})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.>")
	q := refundApproval("job-ma", "pr_ma", 240)
	q.Answerers = []string{"slack:UANA", janeDiscord, "slack:UBO"}
	ch := ask(t, env, q)
	if got := strings.Join(eventOf(t, events, "job-ma", bridge.EventAsked).Proposal.MayApprove, ","); got != "slack:UANA,slack:UBO,operators" {
		t.Fatalf("asked: may approve %q", got)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-ma", QuestionID: "q-refund", AttemptID: "ana", Action: bridge.ActionApprove, By: "slack:UANA", ByName: "ana"})
	if got := strings.Join(eventOf(t, events, "job-ma", bridge.EventApproval).Proposal.MayApprove, ","); got != "slack:UBO,operators" {
		t.Fatalf("approval_recorded: may approve %q", got)
	}
	if v := show(t, env, "slack:UBO", "job-ma", "q-refund").Question; v == nil || v.Proposal == nil ||
		strings.Join(v.Proposal.MayApprove, ",") != "slack:UBO,operators" {
		t.Fatalf("shown to bo: %+v", v)
	}
	for _, left := range []struct{ by, reason string }{{janeDiscord, bridge.RefusedSelfApproval}, {"slack:UANA", bridge.RefusedAlreadyApproved}} {
		attempt(t, env, bridge.AnswerAttempt{JobID: "job-ma", QuestionID: "q-refund", AttemptID: "again-" + left.by, Action: bridge.ActionApprove, By: left.by})
		if ev := refusalFor(t, events, "again-"+left.by); ev.Reason != left.reason {
			t.Errorf("%s, not listed, approving: %s %q, want %s", left.by, ev.Reason, ev.Text, left.reason)
		}
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-ma", QuestionID: "q-refund", AttemptID: "bo", Action: bridge.ActionApprove, By: "slack:UBO"})
	if out := outcome(t, ch); string(out.Answer) != `"approved"` || out.By != "slack:UBO" {
		t.Fatalf("outcome: %+v", out)
	}

	// A restricted approval: its operators may only decline it.
	r := refundApproval("job-mr", "pr_mr", 240)
	r.Visibility = bridge.VisibilityRestricted
	ask(t, env, r)
	if got := strings.Join(eventOf(t, events, "job-mr", bridge.EventAsked).Proposal.MayApprove, ","); got != "admins" {
		t.Fatalf("restricted, asked: may approve %q", got)
	}
}
