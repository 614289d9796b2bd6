package slack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/policy"
)

// e2eWithPolicy is e2e with the operator's policy: a refund needs two
// approvals; clock, when set, is the runtime's.
func e2eWithPolicy(t *testing.T, clock *testenv.Clock) (*testenv.Env, *harness) {
	t.Helper()
	var h policy.Holder
	h.Store(&policy.Policy{Tenants: map[string]policy.Tenant{"acme": {Actions: map[string]policy.Rule{
		"refund": {RequireApproval: true, RequiredApprovals: 2}}}}})
	o := testenv.Options{Policy: &h, Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C0123"}}}
	if clock != nil {
		o.Clock = clock
	}
	env := testenv.Start(t, o)
	return env, startBot(t, env.NATS, newFakeSlack(t))
}

// TestProposalLifecycleEndToEnd runs an approval that needs two people
// through the runtime: the first approval keeps the card's buttons and
// counts "1 of 2 approvals"; the second says approved (not yet executed);
// the agent's report says executed with its detail, after a restart too;
// a refund the agent reports failed says execution failed.
func TestProposalLifecycleEndToEnd(t *testing.T) {
	t.Parallel()
	env, h := e2eWithPolicy(t, nil)
	q := refundQuestion("job-pe", "q-pe")
	q.Answerers = []string{"slack:U0KEV", "slack:U0ANA"}
	publishQuestion(t, env, q)
	posted := h.posted(t, q.QuestionID)
	if !strings.Contains(posted.Str("blocks"), "*Arguments*\\n`order`: 4471\\n`customer`: Jane D.") ||
		!strings.Contains(posted.Str("blocks"), "Status: Waiting for approval · 0 of 2 approvals · ") {
		t.Fatalf("no arguments table, or the approvals needed: %s", posted.Str("blocks"))
	}
	ts := h.cardTS(t, q)
	block := actionsBlock(posted)

	h.interact(h.fake.click("U0KEV", "kevin", "trig-k", "C0123", ts, block, "approve", "approve", ""))
	pending := h.updatedWith(t, ts, func(c apiCall, blocks string) error {
		if !strings.Contains(blocks, "1 of 2 approvals: @kevin") {
			return fmt.Errorf("no approvals line: %s", blocks)
		}
		return nil
	})
	if actionsBlock(pending) != block || !strings.Contains(pending.Str("blocks"), `"action_id":"approve"`) {
		t.Fatalf("the waiting card lost its buttons: %s", pending.Str("blocks"))
	}
	h.interact(h.fake.click("U0ANA", "ana", "trig-a", "C0123", ts, block, "approve", "approve", ""))
	if out := awaitOutcome(t, env, q); out.Outcome != bridge.OutcomeAnswered || string(out.Answer) != `"approved"` {
		t.Fatalf("resume %+v", out)
	}
	h.updated(t, ts, "Approved (not yet executed) by @kevin and @ana")

	h.bot.cards.Forget() // as a restart does: the runtime's event names the card
	report := bridge.Execution{Tenant: q.Tenant, JobID: q.JobID, ProposalID: q.Proposal.ID, Result: bridge.ResultSucceeded,
		Detail: "Refunded $240 · ref rf_31c9"}
	if err := env.Agent.ReportExecution(context.Background(), report); err != nil {
		t.Fatal(err)
	}
	done := h.updated(t, ts, "Executed: Refunded $240 · ref rf_31c9")
	if !strings.Contains(done.Str("blocks"), "2 of 2 approvals: @kevin and @ana") {
		t.Errorf("the executed card does not say who approved: %s", done.Str("blocks"))
	}

	failed := refundQuestion("job-pf", "q-pf")
	failed.Proposal.Action = "refund_small" // no policy: one approval
	publishQuestion(t, env, failed)
	postedF := h.posted(t, failed.QuestionID)
	tsF := h.cardTS(t, failed)
	h.interact(h.fake.click("U0KEV", "kevin", "trig-f", "C0123", tsF, actionsBlock(postedF), "approve", "approve", ""))
	awaitOutcome(t, env, failed)
	h.updated(t, tsF, "Approved (not yet executed) by @kevin")
	report = bridge.Execution{Tenant: failed.Tenant, JobID: failed.JobID, ProposalID: failed.Proposal.ID, Result: bridge.ResultFailed,
		Detail: "The payment provider refused: card expired"}
	if err := env.Agent.ReportExecution(context.Background(), report); err != nil {
		t.Fatal(err)
	}
	h.updated(t, tsF, "Execution failed: The payment provider refused: card expired")
}

// TestExpiredProposalEndToEnd: a proposal nobody decided before it
// expired has a card that says expired, without Approve or Deny.
func TestExpiredProposalEndToEnd(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env, h := e2eWithPolicy(t, clock)
	q := refundQuestion("job-px", "q-px")
	q.Proposal.ExpiresAt = clock.Now().Add(time.Hour).UTC().Truncate(time.Second)
	publishQuestion(t, env, q)
	posted := h.posted(t, q.QuestionID)
	ts := h.cardTS(t, q)
	h.interact(h.fake.click("U0KEV", "kevin", "trig-k", "C0123", ts, actionsBlock(posted), "approve", "approve", ""))
	h.updatedWith(t, ts, func(c apiCall, blocks string) error {
		if !strings.Contains(blocks, "1 of 2 approvals: @kevin") {
			return fmt.Errorf("no approvals line: %s", blocks)
		}
		return nil
	})
	var expired apiCall
	clock.AdvanceUntil(t, 10*time.Minute, wait, func() error {
		for _, c := range h.fake.Calls("chat.update") {
			if c.Str("ts") == ts && strings.Contains(c.Str("blocks"), "Expired before it was decided") {
				expired = c
				return nil
			}
		}
		return fmt.Errorf("no expired card")
	})
	if blocks := expired.Str("blocks"); actionsBlock(expired) != "" || strings.Contains(blocks, `"approve"`) ||
		!strings.Contains(blocks, "1 of 2 approvals: @kevin") {
		t.Errorf("expired card: %s", blocks)
	}
	if out := awaitOutcome(t, env, q); out.Outcome == bridge.OutcomeAnswered {
		t.Errorf("an expired proposal resumed answered: %+v", out)
	}
}
