package slack

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

// refundQuestion is an approval of a refund with its arguments, amount
// and expiry, answerable by kevin.
func refundQuestion(job, id string) *bridge.Question {
	q := question(job, id)
	amount := 240.0
	q.Kind, q.Choices, q.Question = bridge.KindApproval, nil, "May I refund order 4471?"
	q.Proposal = &bridge.Proposal{ID: "pr-" + id, Action: "refund", Summary: []string{"Refund $240 to Jane D."},
		Arguments: json.RawMessage(`{"order": 4471, "customer": "Jane D."}`), Amount: &amount, Currency: "USD",
		ExpiresAt: time.Now().UTC().Add(2 * time.Hour).Truncate(time.Second)}
	return q
}

// updatedWith waits for a chat.update of ts that check accepts.
func (h *harness) updatedWith(t *testing.T, ts string, check func(c apiCall, text string) error) apiCall {
	t.Helper()
	var got apiCall
	testenv.CheckFor(t, wait, tick, func() error {
		err := fmt.Errorf("no chat.update of %s", ts)
		for _, c := range h.fake.Calls("chat.update") {
			if c.Str("ts") != ts {
				continue
			}
			if err = check(c, c.Str("blocks")); err == nil {
				got = c
				return nil
			}
		}
		return err
	})
	return got
}

// proposalEvent is an event of q's proposal as the runtime publishes it:
// with the question, its card's message, and the proposal as it stands.
func proposalEvent(typ string, q *bridge.Question, ts string, p *bridge.ProposalStatus) bridge.Event {
	return bridge.Event{Type: typ, Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion,
		Question: q, Proposal: p, Messages: []bridge.MessageRef{{Platform: bridge.PlatformSlack, Channel: "C0123", MessageID: ts}}}
}

// TestProposalCardInPlace: an approval's card shows its arguments; an
// approval recorded updates the waiting card in place, buttons kept, with
// "1 of 2 approvals"; the final approval says approved (not yet
// executed), and the agent's report executed with its detail, on the
// same message, after the adapter restarted too.
func TestProposalCardInPlace(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	q := refundQuestion("job-p1", "q-p1")
	publishQuestion(t, env, q)
	posted := h.posted(t, q.QuestionID)
	for _, want := range []string{"*Amount:* 240 USD", "*Arguments*\\n`order`: 4471\\n`customer`: Jane D.", "Expires: \\u003c!date^"} {
		if !strings.Contains(posted.Str("blocks"), want) {
			t.Errorf("the card lacks %q: %s", want, posted.Str("blocks"))
		}
	}
	ts := h.cardTS(t, q)
	kevin := bridge.Approval{By: "slack:U0KEV", ByName: "kevin", Via: "slack", At: time.Now().UTC()}
	publishEvent(t, h.nats, proposalEvent(bridge.EventApproval, q, ts, &bridge.ProposalStatus{ID: q.Proposal.ID,
		State: bridge.ProposalPending, Required: 2, Approvals: []bridge.Approval{kevin}, MayApprove: []string{"admin", "slack:U0FIN"}}))
	pending := h.updatedWith(t, ts, func(c apiCall, blocks string) error {
		if !strings.Contains(blocks, "Status: Waiting for approval · 1 of 2 approvals: @kevin · Who may still approve: admin, \\u003c@U0FIN\\u003e") {
			return fmt.Errorf("no approvals line: %s", blocks)
		}
		return nil
	})
	if actionsBlock(pending) != actionsBlock(posted) || !strings.Contains(pending.Str("blocks"), `"action_id":"approve"`) ||
		!strings.Contains(pending.Str("blocks"), `"action_id":"deny"`) {
		t.Fatalf("the waiting card lost its buttons: %s", pending.Str("blocks"))
	}

	h.interact(h.fake.click("U0KEV", "kevin", "trig-ap", "C0123", ts, actionsBlock(posted), "approve", "approve", ""))
	if out := awaitOutcome(t, env, q); out.Outcome != bridge.OutcomeAnswered || string(out.Answer) != `"approved"` {
		t.Fatalf("resume %+v", out)
	}
	h.updated(t, ts, "Approved (not yet executed) by @kevin")

	// A restart forgets every card: the event names the message.
	h.bot.cards.Forget()
	publishEvent(t, h.nats, proposalEvent(bridge.EventExecuted, q, ts, &bridge.ProposalStatus{ID: q.Proposal.ID,
		State: bridge.ProposalExecuted, Required: 1, Approvals: []bridge.Approval{kevin}, ExecutedAt: time.Now().UTC(),
		Result: bridge.ResultSucceeded, Detail: "Refunded $240 · ref rf_31c9"}))
	h.updated(t, ts, "Executed: Refunded $240 · ref rf_31c9")
	if n := len(h.fake.Calls("chat.postMessage")); n != 2 {
		t.Errorf("%d posts (the thread's parent and the card), want 2: the card is updated in place", n)
	}
}

// TestProposalCardFailedAndExpired: an execution failed says so with the
// agent's detail; an expired proposal's card says expired, without
// Approve or Deny.
func TestProposalCardFailedAndExpired(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	failed, expired := refundQuestion("job-p2", "q-fail"), refundQuestion("job-p2", "q-exp")
	publishQuestion(t, env, failed)
	publishQuestion(t, env, expired)
	h.posted(t, failed.QuestionID)
	h.posted(t, expired.QuestionID)
	tsFailed, tsExpired := h.cardTS(t, failed), h.cardTS(t, expired)
	kevin := bridge.Approval{By: "slack:U0KEV", ByName: "kevin", Via: "slack", At: time.Now().UTC()}

	h.interact(h.fake.click("U0KEV", "kevin", "trig-f", "C0123", tsFailed, actionsBlock(h.posted(t, failed.QuestionID)), "approve", "approve", ""))
	awaitOutcome(t, env, failed)
	h.updated(t, tsFailed, "Approved (not yet executed) by @kevin")
	publishEvent(t, h.nats, proposalEvent(bridge.EventExecuted, failed, tsFailed, &bridge.ProposalStatus{ID: failed.Proposal.ID,
		State: bridge.ProposalExecutionFailed, Required: 1, Approvals: []bridge.Approval{kevin}, ExecutedAt: time.Now().UTC(),
		Result: bridge.ResultFailed, Detail: "The payment provider refused: card expired"}))
	h.updated(t, tsFailed, "Execution failed: The payment provider refused: card expired")

	ev := proposalEvent(bridge.EventTimedOut, expired, tsExpired, &bridge.ProposalStatus{ID: expired.Proposal.ID,
		State: bridge.ProposalExpired, Required: 2, Approvals: []bridge.Approval{kevin}, ExpiresAt: time.Now().UTC()})
	ev.Text = bridge.TimedOutText(expired.TimeoutDuration())
	publishEvent(t, h.nats, ev)
	got := h.updated(t, tsExpired, "Expired before it was decided") // updated checks no controls remain
	if blocks := got.Str("blocks"); strings.Contains(blocks, `"approve"`) || strings.Contains(blocks, `"deny"`) ||
		!strings.Contains(blocks, "1 of 2 approvals: @kevin") {
		t.Errorf("expired card: %s", blocks)
	}
}

// TestAskShowSaysWhereTheProposalStands: /ask show of an approval says
// its proposal's state in the cards' words, with the agent's detail and
// the approvals counted; a question's says nothing of proposals.
func TestAskShowSaysWhereTheProposalStands(t *testing.T) {
	q := refundQuestion("job-s", "q-s")
	v := &bridge.QuestionView{Tenant: "acme", JobID: "job-s", QuestionID: "q-s", State: bridge.StateAnswered, Question: q,
		AnswerText: bridge.Approved, Proposal: &bridge.ProposalStatus{State: bridge.ProposalExecuted, Required: 2,
			Approvals: []bridge.Approval{{By: "slack:U0KEV", ByName: "kevin"}, {By: "slack:U0ANA"}}, Detail: "ref <rf_1>"}}
	want := "\nProposal: Executed — Executed: ref &lt;rf_1&gt; · 2 of 2 approvals: slack:U0KEV (kevin) and slack:U0ANA"
	if got := proposalLine(v); got != want {
		t.Errorf("executed: %q, want %q", got, want)
	}
	v.Proposal = &bridge.ProposalStatus{State: bridge.ProposalApproved, Required: 1, Approvals: []bridge.Approval{{By: "slack:U0KEV"}}}
	if got := proposalLine(v); got != "\nProposal: Approved (not yet executed)" {
		t.Errorf("approved: %q", got)
	}
	v.Question = question("job-s", "q-s")
	if got := proposalLine(v); got != "" {
		t.Errorf("a question: %q", got)
	}
}
