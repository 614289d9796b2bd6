package discord

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

// TestProposalLifecycleEndToEnd runs an approval that needs two people
// through the runtime: the first approval keeps the card's buttons and
// counts "1 of 2 approvals"; the second says approved (not yet executed);
// the agent's report says executed with its detail, after a restart too;
// a refund the agent reports failed says execution failed.
func TestProposalLifecycleEndToEnd(t *testing.T) {
	t.Parallel()
	var pol policy.Holder
	pol.Store(&policy.Policy{Tenants: map[string]policy.Tenant{"acme": {Actions: map[string]policy.Rule{
		"refund": {RequireApproval: true, RequiredApprovals: 2}}}}})
	env := testenv.Start(t, testenv.Options{Policy: &pol,
		Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	h := start(t, harnessOptions{nats: env.NATS})
	q := refundApproval("ap-e2e")
	q.Answerers = []string{"discord:" + kevin.ID, "discord:" + ana.ID}
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	id := msg["id"].(string)
	if got := fieldValue(embedOf(t, msg), "Arguments"); got != "`order`: 4471\n`customer`: Jane D." {
		t.Fatalf("arguments: %q", got)
	}
	if got := fieldValue(embedOf(t, msg), "Approvals"); got != "0 of 2 approvals" {
		t.Fatalf("the card does not say two approvals are needed: %q", got)
	}
	h.interact(h.click(kevin, findComponent(t, msg, "Approve")["custom_id"].(string)))
	h.fake.cardSays(t, id, "Approvals", "1 of 2 approvals: <@"+kevin.ID+">", "Approve", "Deny", "Decline", "Open in console",
		"Ask someone else", "Remind me later")
	h.interact(h.click(ana, findComponent(t, msg, "Approve")["custom_id"].(string)))
	if res := await(t, env, q); res.Outcome != bridge.OutcomeAnswered || string(res.Answer) != `"approved"` {
		t.Fatalf("resume = %+v", res)
	}
	h.fake.settledCard(t, id, "Approved (not yet executed) by <@"+kevin.ID+"> and <@"+ana.ID+">")
	h.bot.cards.Forget() // as a restart does: the runtime's event names the card
	if err := env.Agent.ReportExecution(context.Background(), bridge.Execution{Tenant: q.Tenant, JobID: q.JobID,
		ProposalID: q.Proposal.ID, Result: bridge.ResultSucceeded, Detail: "Refunded $240 · ref rf_31c9"}); err != nil {
		t.Fatal(err)
	}
	done := h.fake.cardSays(t, id, "Outcome", "Executed: Refunded $240 · ref rf_31c9 · <t:")
	if got := fieldValue(embedOf(t, done), "Approvals"); got != "2 of 2 approvals: <@"+kevin.ID+"> and <@"+ana.ID+">" {
		t.Errorf("the executed card's approvals: %q", got)
	}

	failed := refundApproval("ap-e2e-fail")
	failed.JobID, failed.Proposal.Action = "job-fail", "refund_small" // no policy: one approval
	ask(t, env, failed)
	msgF := h.posted(channelA, 2)
	h.interact(h.click(kevin, findComponent(t, msgF, "Approve")["custom_id"].(string)))
	await(t, env, failed)
	h.fake.settledCard(t, msgF["id"].(string), "Approved (not yet executed) by <@"+kevin.ID+">")
	if err := env.Agent.ReportExecution(context.Background(), bridge.Execution{Tenant: failed.Tenant, JobID: failed.JobID,
		ProposalID: failed.Proposal.ID, Result: bridge.ResultFailed, Detail: "The payment provider refused: card expired"}); err != nil {
		t.Fatal(err)
	}
	h.fake.cardSays(t, msgF["id"].(string), "Outcome", "Execution failed: The payment provider refused: card expired · <t:")
}

// TestExpiredProposalEndToEnd: a proposal nobody decided before it
// expired has a card that says expired, without components.
func TestExpiredProposalEndToEnd(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Clock: clock,
		Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	h := start(t, harnessOptions{nats: env.NATS})
	q := refundApproval("ap-e2e-exp")
	q.Proposal.ExpiresAt = clock.Now().Add(time.Hour).UTC().Truncate(time.Second)
	ask(t, env, q)
	id := h.posted(channelA, 1)["id"].(string)
	clock.AdvanceUntil(t, 10*time.Minute, testenv.Patience, func() error {
		if got := fieldValue(embedOf(t, h.fake.message(id)), "Outcome"); !strings.HasPrefix(got, "Expired before it was decided") {
			return fmt.Errorf("outcome %q", got)
		}
		return nil
	})
	if n := len(components(h.fake.message(id))); n != 0 {
		t.Errorf("the expired card keeps %d components", n)
	}
}
