package discord

// End-to-end: the real runtime (internal/testenv: embedded NATS, SQLite
// store, runtime), the bot, the fake Discord API, and signed interactions.

import (
	"slices"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/runtime"
)

func approvalQuestion() bridge.Question {
	return bridge.Question{Tenant: "acme", JobID: "job-3", QuestionID: "ap-1", TaskVersion: 1, Kind: bridge.KindApproval,
		Question: "May I send the refund?", Proposal: &bridge.Proposal{ID: "p1", Action: "refund", Summary: []string{"Refund 40 EUR to order 1234"}},
		Answerers: []string{"discord:" + kevin.ID}, Agent: "acme-support"}
}

func TestE2EApprovalDenyWithReason(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := approvalQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	var labels []string
	for _, c := range components(msg) {
		labels = append(labels, c["label"].(string))
	}
	if !slices.Equal(labels, []string{"Approve", "Deny", "Decline", "Open in console", "Ask someone else", "Remind me later"}) {
		t.Fatalf("approval buttons = %v", labels)
	}
	// Deny answers the click with a modal asking why.
	modalID := denyModalOf(t, h.interact(h.click(kevin, findComponent(t, msg, "Deny")["custom_id"].(string))), q)
	// Without a reason: refused at once, nothing reaches the runtime.
	resp := h.interact(h.submit(kevin, modalID, map[string]string{"reason": ""}))
	if d, _ := resp["data"].(map[string]any); resp["type"] != float64(4) || d["flags"] != float64(64) ||
		d["content"] != "Say why, so the agent can adjust its plan." {
		t.Fatalf("deny without a reason = %v", resp)
	}
	if n := len(h.attempts.all()); n != 0 {
		t.Fatalf("%d attempts before a reason was given", n)
	}
	// A stranger's deny is refused by the runtime, to the stranger alone.
	strangerModal := denyModalOf(t, h.interact(h.click(stranger, findComponent(t, msg, "Deny")["custom_id"].(string))), q)
	in := h.submit(stranger, strangerModal, map[string]string{"reason": "because"})
	h.interact(in)
	if f := h.fake.followups(t, in["token"].(string), 1)[0].JSON(t); f["flags"] != float64(64) ||
		!strings.HasPrefix(f["content"].(string), "You can't answer this question: ") {
		t.Fatalf("stranger's follow-up = %v", f)
	}
	if n := resumeCount(t, env); n != 0 {
		t.Fatalf("%d resumes after a refused deny", n)
	}
	// Kevin denies with a reason: the job resumes with it.
	const reason = "Refund 20 EUR instead: the order was partly delivered"
	resp = h.interact(h.submit(kevin, modalID, map[string]string{"reason": reason}))
	if resp["type"] != float64(6) {
		t.Fatalf("deny submit = %v, want a deferred update (6)", resp)
	}
	res := await(t, env, q)
	if res.Outcome != bridge.OutcomeAnswered || string(res.Answer) != `"denied"` || res.Comment != reason ||
		res.Text != "The answer: denied. Reason: "+reason+"." || res.By != "discord:"+kevin.ID || res.ByName != "kevin" ||
		res.Via != "discord" || res.TaskVersion != 1 {
		t.Fatalf("resume = %+v", res)
	}
	h.fake.settledCard(t, msg["id"].(string), "Denied by <@"+kevin.ID+">: "+reason)
	if n := resumeCount(t, env); n != 1 {
		t.Fatalf("%d resumes, want 1", n)
	}
}

// /ask answer takes an approval's typed words, as Slack's command and the
// CLI do: "approve", or "deny" and the reason.
func TestE2EApprovalAnsweredWithCommand(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := approvalQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	reply := func(question, answer string) string {
		t.Helper()
		resp := h.interact(h.command(kevin, "answer", map[string]string{"question": question, "answer": answer}))
		d, _ := resp["data"].(map[string]any)
		if resp["type"] != float64(4) || d["flags"] != float64(64) {
			t.Fatalf("/ask answer %s = %v, want an ephemeral message", answer, resp)
		}
		return d["content"].(string)
	}
	if s := reply(q.QuestionID, "ship it"); s != "This is an approval: answer `approve`, or `deny` and the reason." {
		t.Fatalf("/ask answer ship it = %q", s)
	}
	if n := len(h.attempts.all()); n != 0 {
		t.Fatalf("%d attempts for an answer an approval does not take", n)
	}
	if s := reply(q.QuestionID, "Deny  too risky: the order shipped"); !strings.Contains(s, "Sent") {
		t.Fatalf("/ask answer deny ... = %q", s)
	}
	res := await(t, env, q)
	if res.Outcome != bridge.OutcomeAnswered || string(res.Answer) != `"denied"` || res.Comment != "too risky: the order shipped" ||
		res.By != "discord:"+kevin.ID {
		t.Fatalf("resume = %+v", res)
	}
	h.fake.settledCard(t, msg["id"].(string), "Denied by <@"+kevin.ID+">: too risky: the order shipped")

	q2 := approvalQuestion()
	q2.JobID, q2.QuestionID = "job-4", "ap-2"
	q2.Proposal = &bridge.Proposal{ID: "p2", Action: "refund", Summary: q2.Proposal.Summary}
	ask(t, env, q2)
	h.posted(channelA, 2)
	if s := reply(q2.QuestionID, "approve"); !strings.Contains(s, "Sent") {
		t.Fatalf("/ask answer approve = %q", s)
	}
	if res := await(t, env, q2); string(res.Answer) != `"approved"` || res.Comment != "" {
		t.Fatalf("resume = %+v", res)
	}
}

func TestE2EApprovalDeclineWithReason(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := approvalQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	// Decline on an approval opens the same decline form as on a question.
	modal := h.interact(h.click(kevin, findComponent(t, msg, "Decline")["custom_id"].(string)))
	if modal["type"] != float64(9) {
		t.Fatalf("Decline click = %v, want a modal (9)", modal)
	}
	data := modal["data"].(map[string]any)
	if a, err := parseCustomID(data["custom_id"].(string)); err != nil || a.Act != actModalReason || a.QuestionID != "ap-1" {
		t.Fatalf("decline modal custom_id %v parses to %+v, %v", data["custom_id"], a, err)
	}
	input := data["components"].([]any)[0].(map[string]any)["components"].([]any)[0].(map[string]any)
	if input["type"] != float64(4) || input["custom_id"] != "reason" || input["required"] == true {
		t.Fatalf("decline modal input = %v", input)
	}
	h.interact(h.submit(kevin, data["custom_id"].(string), map[string]string{"reason": "ask Ana, she owns refunds"}))
	res := await(t, env, q)
	if want := "discord:" + kevin.ID + " (kevin) declined to answer: ask Ana, she owns refunds."; res.Outcome != bridge.OutcomeDeclined ||
		res.Text != want || len(res.Answer) != 0 {
		t.Fatalf("resume = %+v, want text %q", res, want)
	}
	h.fake.settledCard(t, msg["id"].(string), "Declined by <@"+kevin.ID+">: ask Ana, she owns refunds")
}

func TestE2EApprovalApprove(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := approvalQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	if resp := h.interact(h.click(kevin, findComponent(t, msg, "Approve")["custom_id"].(string))); resp["type"] != float64(6) {
		t.Fatalf("Approve click = %v, want a deferred update (6)", resp)
	}
	res := await(t, env, q)
	if res.Outcome != bridge.OutcomeAnswered || string(res.Answer) != `"approved"` || res.Text != "The answer: approved" || res.Comment != "" {
		t.Fatalf("resume = %+v", res)
	}
	h.fake.settledCard(t, msg["id"].(string), "Approved (not yet executed) by <@"+kevin.ID+">")
}
