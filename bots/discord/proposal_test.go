package discord

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// refundApproval is an approval of a refund with its arguments, amount
// and expiry, answerable by kevin.
func refundApproval(id string) bridge.Question {
	q := approvalQuestion()
	q.QuestionID, q.Question = id, "May I refund order 4471?"
	amount := 240.0
	q.Proposal = &bridge.Proposal{ID: "pr-" + id, Action: "refund", Summary: []string{"Refund $240 to Jane D."},
		Arguments: json.RawMessage(`{"order": 4471, "customer": "Jane D."}`), Amount: &amount, Currency: "USD",
		ExpiresAt: time.Now().UTC().Add(2 * time.Hour).Truncate(time.Second)}
	return q
}

// proposalEvent is an event of q's proposal as the runtime publishes it:
// with the question, its card's message, and the proposal as it stands.
func proposalEvent(typ string, q bridge.Question, msg map[string]any, p *bridge.ProposalStatus) bridge.Event {
	return bridge.Event{Type: typ, Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion,
		Question: &q, Proposal: p, Messages: []bridge.MessageRef{{Platform: bridge.PlatformDiscord,
			Channel: msg["channel_id"].(string), MessageID: msg["id"].(string)}}}
}

// cardSays waits for the card's message to hold field name containing
// want, with the components labelled labels (none once settled).
func (f *fakeDiscord) cardSays(t *testing.T, id, name, want string, labels ...string) map[string]any {
	t.Helper()
	var m map[string]any
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		m = f.message(id)
		if got := fieldValue(embedOf(t, m), name); !strings.Contains(got, want) {
			return fmt.Errorf("%s = %q, want %q in it", name, got, want)
		}
		var got []string
		for _, c := range components(m) {
			got = append(got, fmt.Sprint(c["label"]))
		}
		if strings.Join(got, ",") != strings.Join(labels, ",") {
			return fmt.Errorf("components %q, want %q", got, labels)
		}
		return nil
	})
	return m
}

// TestProposalCardInPlace: an approval's card shows its arguments; an
// approval recorded edits the waiting card in place, buttons kept, with
// "1 of 2 approvals"; the final approval says approved (not yet
// executed), and the agent's report executed with its detail, on the
// same message, after the bot forgot its cards too.
func TestProposalCardInPlace(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := refundApproval("ap-p1")
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	id := msg["id"].(string)
	e := embedOf(t, msg)
	if fieldValue(e, "Arguments") != "`order`: 4471\n`customer`: Jane D." || fieldValue(e, "Amount") != "240 USD" ||
		!strings.HasPrefix(fieldValue(e, "Expires"), "<t:") {
		t.Fatalf("the card lacks the proposal's table, amount or expiry: %v", e["fields"])
	}
	buttons := []string{"Approve", "Deny", "Decline", "Open in console", "Ask someone else", "Remind me later"}
	kevinApproved := bridge.Approval{By: "discord:" + kevin.ID, ByName: "kevin", Via: "discord", At: time.Now().UTC()}
	h.publishEvent(proposalEvent(bridge.EventApproval, q, msg, &bridge.ProposalStatus{ID: q.Proposal.ID, State: bridge.ProposalPending,
		Required: 2, Approvals: []bridge.Approval{kevinApproved}, MayApprove: []string{"admin", "slack:U0FIN"}}))
	waiting := h.fake.cardSays(t, id, "Approvals", "1 of 2 approvals: <@"+kevin.ID+">", buttons...)
	if got := fieldValue(embedOf(t, waiting), "Who may still approve"); got != "admin, slack:U0FIN" {
		t.Errorf("who may still approve: %q", got)
	}

	h.interact(h.click(kevin, findComponent(t, msg, "Approve")["custom_id"].(string)))
	if res := await(t, env, q); res.Outcome != bridge.OutcomeAnswered || string(res.Answer) != `"approved"` {
		t.Fatalf("resume = %+v", res)
	}
	h.fake.settledCard(t, id, "Approved (not yet executed) by <@"+kevin.ID+">")

	h.bot.cards.Forget() // as a restart does: the event names the message
	h.publishEvent(proposalEvent(bridge.EventExecuted, q, msg, &bridge.ProposalStatus{ID: q.Proposal.ID, State: bridge.ProposalExecuted,
		Required: 1, Approvals: []bridge.Approval{kevinApproved}, ExecutedAt: time.Now().UTC(), Result: bridge.ResultSucceeded,
		Detail: "Refunded $240 · ref rf_31c9"}))
	h.fake.cardSays(t, id, "Outcome", "Executed: Refunded $240 · ref rf_31c9 · <t:")
	posts := 0
	for _, r := range h.fake.requests("POST", "/channels/") {
		if strings.HasSuffix(r.Path, "/messages") {
			posts++
		}
	}
	if posts != 1 {
		t.Errorf("%d messages posted, want the one card, updated in place", posts)
	}
}

// TestProposalCardFailedAndExpired: an execution failed says so with the
// agent's detail; an expired proposal's card says expired and has no
// components.
func TestProposalCardFailedAndExpired(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	failed := refundApproval("ap-fail")
	ask(t, env, failed)
	msgFailed := h.posted(channelA, 1)
	kevinApproved := bridge.Approval{By: "discord:" + kevin.ID, ByName: "kevin", Via: "discord", At: time.Now().UTC()}
	h.interact(h.click(kevin, findComponent(t, msgFailed, "Approve")["custom_id"].(string)))
	await(t, env, failed)
	h.fake.settledCard(t, msgFailed["id"].(string), "Approved (not yet executed)")
	h.publishEvent(proposalEvent(bridge.EventExecuted, failed, msgFailed, &bridge.ProposalStatus{ID: failed.Proposal.ID,
		State: bridge.ProposalExecutionFailed, Required: 1, Approvals: []bridge.Approval{kevinApproved}, ExecutedAt: time.Now().UTC(),
		Result: bridge.ResultFailed, Detail: "The payment provider refused: card expired"}))
	h.fake.cardSays(t, msgFailed["id"].(string), "Outcome", "Execution failed: The payment provider refused: card expired")

	expired := refundApproval("ap-exp")
	expired.JobID = "job-exp" // a job of its own: its first card goes in the channel
	ask(t, env, expired)
	msgExpired := h.posted(channelA, 2)
	ev := proposalEvent(bridge.EventTimedOut, expired, msgExpired, &bridge.ProposalStatus{ID: expired.Proposal.ID,
		State: bridge.ProposalExpired, Required: 2, Approvals: []bridge.Approval{kevinApproved}, ExpiresAt: time.Now().UTC()})
	ev.Text = bridge.TimedOutText(expired.TimeoutDuration())
	h.publishEvent(ev)
	m := h.fake.cardSays(t, msgExpired["id"].(string), "Outcome", "Expired before it was decided")
	if got := fieldValue(embedOf(t, m), "Approvals"); got != "1 of 2 approvals: <@"+kevin.ID+">" {
		t.Errorf("expired card's approvals: %q", got)
	}
}
