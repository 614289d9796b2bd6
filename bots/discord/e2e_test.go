package discord

// End-to-end: the real runtime (internal/testenv: embedded NATS, SQLite
// store, runtime), the bot, the fake Discord API, and signed interactions.

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
	"github.com/askbridge/askbridge/store/record"
)

func startE2E(t *testing.T, roles runtime.Roles) (*testenv.Env, *harness) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{Roles: roles,
		Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	h := start(t, harnessOptions{nats: env.NATS})
	return env, h
}

// resumeCount is how many resumes the stream holds: exact once a resume
// has been awaited, where a recorder may not have received it yet.
func resumeCount(t *testing.T, env *testenv.Env) uint64 {
	t.Helper()
	return testenv.StreamCount(t, env.NATS, bridge.StreamResumes, bridge.PrefixResume+".>")
}

// await waits for the question's outcome on ask.v1.resume.
func await(t *testing.T, env *testenv.Env, q bridge.Question) *bridge.Resume {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
	defer cancel()
	res, err := env.Agent.Await(ctx, q.Tenant, q.JobID, q.QuestionID)
	if err != nil {
		t.Fatalf("await %s: %v; %s", q.QuestionID, err, env.WhereIs(&q))
	}
	return res
}

func ask(t *testing.T, env *testenv.Env, q bridge.Question) {
	t.Helper()
	if err := env.Agent.Publish(context.Background(), &q); err != nil {
		t.Fatalf("ask: %v", err)
	}
}

// settledCard waits for a card to lose its components and show an outcome
// containing want.
func (f *fakeDiscord) settledCard(t *testing.T, messageID, want string) {
	t.Helper()
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		m := f.message(messageID)
		if n := len(components(m)); n != 0 {
			return fmt.Errorf("the card still has %d components", n)
		}
		if got := fieldValue(embedOf(t, m), "Outcome"); !strings.Contains(got, want) {
			return fmt.Errorf("outcome = %q, want %q in it", got, want)
		}
		return nil
	})
}

func TestE2EChoiceClickResumesJob(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	h.interact(h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string)))
	res := await(t, env, q)
	if res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: blue" || res.By != "discord:"+kevin.ID ||
		res.ByName != "kevin" || res.Via != "discord" || res.TaskVersion != 3 {
		t.Fatalf("resume = %+v", res)
	}
	h.fake.settledCard(t, msg["id"].(string), "Answered by <@"+kevin.ID+">: blue")
	// The runtime recorded where the card is.
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		var reply bridge.ShowReply
		if err := h.bot.request(context.Background(), bridge.APIShow, bridge.ShowRequest{As: "discord:" + kevin.ID,
			Tenant: "acme", JobID: "job-1", QuestionID: "q-1"}, &reply); err != nil {
			return err
		}
		if reply.Question == nil || len(reply.Question.Messages) != 1 || reply.Question.Messages[0].MessageID != msg["id"] {
			return fmt.Errorf("show = %+v", reply.Question)
		}
		return nil
	})
}

func TestE2EFreeTextModal(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	q.Choices, q.Question = nil, "What should the subject line say?"
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	modal := h.interact(h.click(kevin, findComponent(t, msg, "Answer…")["custom_id"].(string)))
	h.interact(h.submit(kevin, modal["data"].(map[string]any)["custom_id"].(string), map[string]string{"answer": "Q3 report, final"}))
	if res := await(t, env, q); res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: Q3 report, final" {
		t.Fatalf("resume = %+v", res)
	}
	h.fake.settledCard(t, msg["id"].(string), "Q3 report, final")
}

func TestE2EDeclineWithReason(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	modal := h.interact(h.click(kevin, findComponent(t, msg, "Decline")["custom_id"].(string)))
	h.interact(h.submit(kevin, modal["data"].(map[string]any)["custom_id"].(string), map[string]string{"reason": "ask Ana"}))
	res := await(t, env, q)
	if want := "discord:" + kevin.ID + " (kevin) declined to answer: ask Ana."; res.Outcome != bridge.OutcomeDeclined || res.Text != want {
		t.Fatalf("resume = %+v, want text %q", res, want)
	}
	h.fake.settledCard(t, msg["id"].(string), "Declined by <@"+kevin.ID+">: ask Ana")
}

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

func TestE2EStrangerRefusedEphemerally(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	in := h.click(stranger, findComponent(t, msg, "red")["custom_id"].(string))
	h.interact(in)
	f := h.fake.followups(t, in["token"].(string), 1)[0].JSON(t)
	if f["flags"] != float64(64) || !strings.HasPrefix(f["content"].(string), "You can't answer this question: ") {
		t.Fatalf("follow-up = %v", f)
	}
	// Still waiting: the card keeps its buttons, nothing resumed; Kevin
	// can still answer.
	if n := len(components(h.fake.message(msg["id"].(string)))); n != 7 {
		t.Fatalf("card components = %d after a refusal", n)
	}
	if n := resumeCount(t, env); n != 0 {
		t.Fatalf("%d resumes after a refused attempt", n)
	}
	h.interact(h.click(kevin, findComponent(t, msg, "green")["custom_id"].(string)))
	if res := await(t, env, q); res.Text != "The answer: green" {
		t.Fatalf("resume = %+v", res)
	}
}

func TestE2EStaleCardRefused(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	old := colorQuestion()
	old.TaskVersion = 2
	ask(t, env, old)
	msg := h.posted(channelA, 1)
	// The agent moves the task to version 3: version 2 is superseded.
	if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.CancelSubject("acme", "job-1"), "bump-3",
		bridge.Cancel{Tenant: "acme", JobID: "job-1", TaskVersion: 3}); err != nil {
		t.Fatal(err)
	}
	h.fake.settledCard(t, msg["id"].(string), "Superseded by task version")
	ask(t, env, colorQuestion()) // v3, same question id
	h.posted(msg["id"].(string), 1)
	// A click on the old card (a client that still shows it).
	in := h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string))
	h.interact(in)
	f := h.fake.followups(t, in["token"].(string), 1)[0].JSON(t)
	if f["flags"] != float64(64) || !strings.Contains(f["content"].(string), "version") {
		t.Fatalf("follow-up = %v", f)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		var reply bridge.ShowReply
		if err := h.bot.request(context.Background(), bridge.APIShow, bridge.ShowRequest{As: "discord:" + kevin.ID,
			Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3}, &reply); err != nil {
			return err
		}
		if reply.Question == nil || reply.Question.State != bridge.StatePending || reply.Question.TaskVersion != 3 {
			return fmt.Errorf("v3 = %+v, want pending", reply.Question)
		}
		return nil
	})
}

func TestE2EDoubleClickOneResume(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	id := findComponent(t, msg, "blue")["custom_id"].(string)
	first, second := h.click(kevin, id), h.click(kevin, id)
	h.interact(first)
	h.interact(second)
	if res := await(t, env, q); res.Text != "The answer: blue" {
		t.Fatalf("resume = %+v", res)
	}
	// The second click is refused as no longer pending, to Kevin alone.
	f := h.fake.followups(t, second["token"].(string), 1)[0].JSON(t)
	if f["flags"] != float64(64) {
		t.Fatalf("follow-up = %v", f)
	}
	h.fake.settledCard(t, msg["id"].(string), "Answered by <@"+kevin.ID+">: blue")
	if n := resumeCount(t, env); n != 1 {
		t.Fatalf("%d resumes for a double click, want 1", n)
	}
	if n := len(h.fake.requests("PATCH", "/channels/")); n != 1 {
		t.Fatalf("%d card edits, want 1", n)
	}
}

func TestE2ETypedQuestionAnsweredWithCommand(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := typedQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	assertNoLinkOnCard(t, h.signer, msg)
	btn := findComponent(t, msg, "Open in console")["custom_id"].(string)
	if l := linkOf(t, h.signer, h.consoleClick(ana, btn)); l.Identity != "discord:"+ana.ID || l.QuestionID != "q-7" {
		t.Fatalf("ana's link for %+v", l)
	}
	if l := linkOf(t, h.signer, h.consoleClick(kevin, btn)); l.Identity != "discord:"+kevin.ID || l.QuestionID != "q-7" {
		t.Fatalf("kevin's link for %+v", l)
	}
	// A wrong value is refused with the field's own words, before the runtime.
	resp := h.interact(h.command(kevin, "answer", map[string]string{"question": "q-7", "answer": `{"on":"2026-10-20","copies":12}`}))
	if c := resp["data"].(map[string]any)["content"].(string); !strings.Contains(c, "copies: must be at most 9") {
		t.Fatalf("bad answer reply = %q", c)
	}
	resp = h.interact(h.command(kevin, "answer", map[string]string{"question": "q-7", "answer": `{"on":"2026-10-20","copies":2}`}))
	if d := resp["data"].(map[string]any); d["flags"] != float64(64) || !strings.Contains(d["content"].(string), "Sent") {
		t.Fatalf("answer reply = %v", resp)
	}
	res := await(t, env, q)
	if res.Outcome != bridge.OutcomeAnswered || res.Text != `The answer: {"on":"2026-10-20","copies":2}` {
		t.Fatalf("resume = %+v", res)
	}
	h.fake.settledCard(t, msg["id"].(string), "copies: 2")
}

// TestE2ETypedAnswerWithCurlyQuotes checks /ask answer reads an object
// typed with the curly quotes phones and macOS put in ({“copies”: 2}) as
// the JSON object meant, as Slack's /ask does.
func TestE2ETypedAnswerWithCurlyQuotes(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := typedQuestion()
	ask(t, env, q)
	h.posted(channelA, 1)
	typed := " {\u201con\u201d: \u201c2026-10-20\u201d, \u201ccopies\u201d: 2}"
	resp := h.interact(h.command(kevin, "answer", map[string]string{"question": "q-7", "answer": typed}))
	if d := resp["data"].(map[string]any); d["flags"] != float64(64) || !strings.Contains(d["content"].(string), "Sent") {
		t.Fatalf("answer %q: reply = %v", typed, resp)
	}
	res := await(t, env, q)
	if res.Outcome != bridge.OutcomeAnswered || res.Text != `The answer: {"on":"2026-10-20","copies":2}` {
		t.Fatalf("resume = %+v", res)
	}
}

func TestE2EAskCommands(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{Admins: []string{"discord:" + ana.ID}})
	q := colorQuestion()
	ask(t, env, q)
	q2 := typedQuestion()
	q2.Answerers = []string{"slack:U0ANA"}
	q2.Owner = ""
	q2.Visibility = bridge.VisibilityRestricted
	ask(t, env, q2)
	h.posted(channelA, 2)

	text := func(resp map[string]any) string {
		t.Helper()
		d, _ := resp["data"].(map[string]any)
		if resp["type"] != float64(4) || d["flags"] != float64(64) {
			t.Fatalf("response = %v, want an ephemeral message", resp)
		}
		s, _ := d["content"].(string)
		return s
	}
	// list: Kevin sees his question; the stranger sees nothing.
	if s := text(h.interact(h.command(kevin, "list", nil))); !strings.Contains(s, "acme/job-1/q-1") ||
		!strings.Contains(s, "Which colour") || strings.Contains(s, "q-7") {
		t.Fatalf("kevin's list = %q", s)
	}
	if s := text(h.interact(h.command(stranger, "list", nil))); !strings.Contains(s, "No questions") {
		t.Fatalf("stranger's list = %q", s)
	}
	// An operator by Discord role sees that restricted q-7 waits but not what it asks.
	op := person{ID: "3000000000000000007", Name: "olga", Roles: []string{operRole}}
	if s := text(h.interact(h.command(op, "list", map[string]string{"job": "job-2"}))); !strings.Contains(s, "q-7") ||
		!strings.Contains(s, "_A restricted question waits for slack:U0ANA and admins; only they may read it._") || strings.Contains(s, "copies") {
		t.Fatalf("operator's list = %q", s)
	}
	// show
	resp := h.interact(h.command(kevin, "show", map[string]string{"question": "q-1"}))
	if s := text(resp); s != "`acme/job-1/q-1` (task version 3): **Waiting for an answer**" {
		t.Fatalf("show = %q", s)
	}
	if e := resp["data"].(map[string]any)["embeds"].([]any)[0].(map[string]any); e["description"] != q.Question ||
		fieldValue(e, "Choices") != "red | blue | green" {
		t.Fatalf("show embed = %v, want the question and its choices", e)
	}
	// The ids /ask list prints are taken as they are.
	for _, id := range []string{"acme/job-1/q-1", "job-1/q-1"} {
		if s := text(h.interact(h.command(kevin, "show", map[string]string{"question": id}))); !strings.Contains(s, "`acme/job-1/q-1`") {
			t.Fatalf("show %s = %q", id, s)
		}
	}
	if s := text(h.interact(h.command(stranger, "show", map[string]string{"question": "q-1"}))); !strings.Contains(s, "askbridge") {
		t.Fatalf("stranger's show = %q", s)
	}
	// help
	if s := text(h.interact(h.command(kevin, "help", nil))); !strings.Contains(s, "/ask list") {
		t.Fatalf("help = %q", s)
	}
	// decline by command
	text(h.interact(h.command(kevin, "decline", map[string]string{"question": "q-1", "reason": "not my area"})))
	if res := await(t, env, q); res.Outcome != bridge.OutcomeDeclined || !strings.HasSuffix(res.Text, "declined to answer: not my area.") {
		t.Fatalf("resume = %+v", res)
	}
	// cancel: refused for Kevin by the runtime, done for Ana (an admin).
	text(h.interact(h.command(kevin, "cancel", map[string]string{"tenant": "acme", "job": "job-2"})))
	text(h.interact(h.command(ana, "cancel", map[string]string{"tenant": "acme", "job": "job-2", "reason": "not needed"})))
	res := await(t, env, q2)
	if res.Outcome != bridge.OutcomeCanceled || res.By != "" && res.By != "discord:"+ana.ID {
		t.Fatalf("resume = %+v", res)
	}
	var cancels []bridge.Cancel
	for _, m := range h.cancels.all() {
		var c bridge.Cancel
		_ = json.Unmarshal(m.Data, &c)
		cancels = append(cancels, c)
	}
	if len(cancels) != 2 || cancels[0].By != "discord:"+kevin.ID || cancels[1].By != "discord:"+ana.ID || cancels[1].Reason != "not needed" {
		t.Fatalf("cancels = %+v", cancels)
	}
	// The command is registered for the whole application (no guild set).
	regs := h.fake.requests("PUT", "/applications/"+testApp+"/commands")
	if n := len(regs); n != 1 {
		t.Fatalf("%d global command registrations, want 1", n)
	}
	// Discord holds a reason to the length the runtime takes.
	var cmds []discordgo.ApplicationCommand
	if err := json.Unmarshal(regs[0].Body, &cmds); err != nil || len(cmds) != 1 {
		t.Fatalf("registered %s: %v", regs[0].Body, err)
	}
	reasons := 0
	for _, sub := range cmds[0].Options {
		for _, o := range sub.Options {
			if o.Name != "reason" {
				continue
			}
			reasons++
			if o.MaxLength != bridge.MaxCommentText {
				t.Errorf("/ask %s reason: max_length %d, want %d", sub.Name, o.MaxLength, bridge.MaxCommentText)
			}
		}
	}
	if reasons != 2 {
		t.Errorf("%d reason options, want 2 (decline, cancel)", reasons)
	}
}

func TestE2EAccessDeniedFailsTheJob(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/" + channelA + "/messages", Status: 403, Code: 50013, Times: -1})
	q := colorQuestion()
	ask(t, env, q)
	res := await(t, env, q)
	if res.Outcome != bridge.OutcomeFailed || res.Code != bridge.CodeAccessDenied || res.Failure == nil ||
		res.Failure.Code != bridge.CodeAccessDenied || res.Failure.Dependency != "discord" {
		t.Fatalf("resume = %+v (failure %+v)", res, res.Failure)
	}
	if strings.Contains(res.Text, testToken) || strings.Contains(res.Text, "error 50013") {
		t.Fatalf("the agent reads a secret or a raw response: %q", res.Text)
	}
	_ = h
}

func TestE2EReminderDMThenTimeout(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	q.Timeout = "3s"
	q.Escalation = &bridge.Escalation{Steps: []bridge.LadderStep{{At: 0.25, To: bridge.TargetAnswerers}}}
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		dms := h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages")
		if len(dms) != 1 {
			return fmt.Errorf("%d reminder DMs to kevin", len(dms))
		}
		if e := dms[0].JSON(t)["embeds"].([]any)[0].(map[string]any); e["description"] != q.Question {
			return fmt.Errorf("DM embed = %v", e)
		}
		return nil
	})
	res := await(t, env, q)
	if res.Outcome != bridge.OutcomeTimedOut || res.Text != "Nobody answered within 0:00:03." {
		t.Fatalf("resume = %+v", res)
	}
	h.fake.settledCard(t, msg["id"].(string), "Nobody answered within 0:00:03 · ")
	if n := len(h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages")); n != 1 {
		t.Fatalf("%d reminder DMs, want 1", n)
	}
}

// cancelsNow decodes the cancels the bot published so far.
func (h *harness) cancelsNow() []bridge.Cancel {
	var out []bridge.Cancel
	for _, m := range h.cancels.all() {
		var c bridge.Cancel
		if err := json.Unmarshal(m.Data, &c); err != nil {
			h.t.Fatalf("cancel is not JSON: %v", err)
		}
		out = append(out, c)
	}
	return out
}

func TestE2ECancelByMappedDiscordRole(t *testing.T) {
	t.Parallel()
	// Nobody is configured as an admin: only the mapped Discord role can
	// make someone one.
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	reply := func(resp map[string]any) string {
		t.Helper()
		d, _ := resp["data"].(map[string]any)
		if resp["type"] != float64(4) || d["flags"] != float64(64) {
			t.Fatalf("response = %v, want an ephemeral message", resp)
		}
		s, _ := d["content"].(string)
		return s
	}

	// A plain member (no mapped role) asks to cancel: the command's reply
	// is honest, the runtime refuses, and the refusal reaches that member
	// alone as an ephemeral follow-up on their command.
	plain := h.command(stranger, "cancel", map[string]string{"tenant": "acme", "job": "job-1", "reason": "done"})
	if s := reply(h.interact(plain)); !strings.Contains(s, "Asked askbridge to cancel job job-1") || !strings.Contains(s, "only owners and admins may") {
		t.Fatalf("cancel reply = %q", s)
	}
	f := h.fake.followups(t, plain["token"].(string), 1)[0].JSON(t)
	if f["flags"] != float64(64) || !strings.Contains(f["content"].(string), "You can't cancel questions") ||
		!strings.Contains(f["content"].(string), "job-1") {
		t.Fatalf("cancel refusal follow-up = %v", f)
	}
	cs := h.cancelsNow()
	if len(cs) != 1 || cs[0].By != "discord:"+stranger.ID || len(cs[0].Roles) != 0 ||
		cs[0].ReplyTo[replyUser] != stranger.ID || cs[0].ReplyTo[replyToken] != plain["token"] {
		t.Fatalf("plain member's cancel = %+v", cs)
	}
	// The question keeps waiting.
	var show bridge.ShowReply
	if err := h.bot.request(context.Background(), bridge.APIShow, bridge.ShowRequest{As: "discord:" + kevin.ID,
		Tenant: "acme", JobID: "job-1", QuestionID: "q-1"}, &show); err != nil {
		t.Fatal(err)
	}
	if show.Question == nil || show.Question.State != bridge.StatePending {
		t.Fatalf("after a refused cancel the question is %+v, want pending", show.Question)
	}
	if n := resumeCount(t, env); n != 0 {
		t.Fatalf("%d resumes after a refused cancel, want 0", n)
	}
	if n := len(components(h.fake.message(msg["id"].(string)))); n == 0 {
		t.Fatal("the card lost its buttons after a refused cancel")
	}

	// A member whose Discord role maps to admin cancels: the job resumes
	// cancelled.
	ada := person{ID: "3000000000000000005", Name: "ada", Roles: []string{"2000000000000000099", adminRole}}
	reply(h.interact(h.command(ada, "cancel", map[string]string{"tenant": "acme", "job": "job-1", "reason": "not needed"})))
	res := await(t, env, q)
	if res.Outcome != bridge.OutcomeCanceled || !strings.Contains(res.Text, "not needed") {
		t.Fatalf("resume = %+v, want cancelled", res)
	}
	cs = h.cancelsNow()
	if len(cs) != 2 || cs[1].By != "discord:"+ada.ID || !slices.Equal(cs[1].Roles, []string{"admin"}) {
		t.Fatalf("admin's cancel = %+v", cs)
	}
	h.fake.settledCard(t, msg["id"].(string), "Cancelled: not needed · ")
	// Only the plain member's command got a follow-up.
	if n := len(h.fake.requests("POST", "/webhooks/")); n != 1 {
		t.Fatalf("%d follow-ups, want 1 (the refusal)", n)
	}
}

func TestE2ECancelRefusalByDMWhenTheTokenExpired(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	var ahead atomic.Int64 // the bot's clock runs this far ahead
	h := start(t, harnessOptions{nats: env.NATS, tweak: func(b *Bot) {
		b.now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
		b.backoff = func(uint64) time.Duration { return 10 * time.Millisecond }
	}})
	q := colorQuestion()
	ask(t, env, q)
	h.posted(channelA, 1)
	// The runtime's refusal comes after the command's token lapsed (the
	// fake answers this token as Discord does an expired one), and long
	// enough after the command (11 s) not to be a refusal overtaking the
	// command's response: a DM.
	in := h.command(kevin, "cancel", map[string]string{"tenant": "acme", "job": "job-1", "question": "q-1"})
	in["token"] = "expired-" + in["id"].(string)
	h.interact(in)
	ahead.Store(int64(11 * time.Second))
	var dm map[string]any
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		dms := h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages")
		if len(dms) != 1 {
			return fmt.Errorf("%d DMs to kevin, want 1", len(dms))
		}
		dm = dms[0].JSON(t)
		return nil
	})
	if s, _ := dm["content"].(string); !strings.Contains(s, "You can't cancel questions") || !strings.Contains(s, "question q-1 of job job-1") {
		t.Fatalf("DM = %v", dm)
	}
	// One try, or two when the refusal came before the clock moved on.
	if n := len(h.fake.requests("POST", "/webhooks/"+testApp+"/"+in["token"].(string))); n < 1 || n > 2 {
		t.Fatalf("%d follow-up tries on the expired token, want 1 or 2", n)
	}
	// Nobody else was told.
	if n := len(h.fake.requests("POST", "/users/@me/channels")); n != 1 {
		t.Fatalf("%d DM channels opened, want 1", n)
	}
}

func TestCancelRefusalAfterTheTokenLapsedGoesByDM(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	// A refused cancel read long after the command (e.g. after a restart):
	// the token is past its life, so no follow-up is tried; a DM instead.
	ev := bridge.Event{Type: bridge.EventRefused, Tenant: "acme", JobID: "job-9", To: "discord:" + ana.ID, By: "discord:" + ana.ID,
		Reason: bridge.RefusedForbidden, Text: "You can't cancel questions: that needs the admin or owner role.",
		ReplyTo: map[string]string{replyPlatform: bridge.PlatformDiscord, replyAppID: testApp, replyToken: "itoken-old",
			replyChannel: channelA, replyKind: replyKindCancel, replyUser: ana.ID, replyInteraction: "1400000000000000777",
			replySentAt: strconv.FormatInt(time.Now().Add(-20*time.Minute).Unix(), 10)}}
	h.publishEvent(ev)
	ev.EventID = "ob-redelivered"
	h.publishEvent(ev) // told once
	// A refusal addressed to someone other than the cancel's requester is
	// not told to anyone.
	other := ev
	other.EventID, other.To = "ob-other", "discord:"+kevin.ID
	other.ReplyTo = map[string]string{}
	for k, v := range ev.ReplyTo {
		other.ReplyTo[k] = v
	}
	other.ReplyTo[replyInteraction] = "1400000000000000778"
	h.publishEvent(other)
	h.markerEvent()
	dms := h.fake.requests("POST", "/channels/77"+ana.ID+"/messages")
	if len(dms) != 1 || !strings.Contains(dms[0].JSON(t)["content"].(string), "You can't cancel questions") {
		t.Fatalf("DMs to ana = %v, want one with the refusal", dms)
	}
	if n := len(h.fake.requests("POST", "/webhooks/")); n != 0 {
		t.Fatalf("%d follow-ups on a lapsed token, want 0", n)
	}
	if n := len(h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages")); n != 0 {
		t.Fatalf("%d DMs to kevin, want 0", n)
	}
}

// With AckAfterDecision, Discord gets its response only once the runtime
// has committed the decision: at that moment the question is answered in
// the store.
func TestE2EAckAfterDecision(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{
		Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	h := start(t, harnessOptions{nats: env.NATS, mutate: func(o *Options) { o.AckAfterDecision = true }})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	h.interact(h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string)))
	rec, err := env.Store.Find(context.Background(), record.Key{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID})
	if err != nil || rec.State != bridge.StateAnswered || string(rec.Answer) != `"blue"` {
		t.Fatalf("when Discord got its response the question was %+v, %v; want it answered", rec, err)
	}
	if res := await(t, env, q); res.Text != "The answer: blue" {
		t.Fatalf("resume = %+v", res)
	}
	// The deny form's submit too: opening the form is answered at once,
	// the submit once the denial is decided.
	ap := approvalQuestion()
	ask(t, env, ap)
	card := h.posted(channelA, 2)
	modalID := denyModalOf(t, h.interact(h.click(kevin, findComponent(t, card, "Deny")["custom_id"].(string))), ap)
	h.interact(h.submit(kevin, modalID, map[string]string{"reason": "too much"}))
	rec, err = env.Store.Find(context.Background(), record.Key{Tenant: ap.Tenant, JobID: ap.JobID, QuestionID: ap.QuestionID})
	if err != nil || rec.State != bridge.StateAnswered || string(rec.Answer) != `"denied"` || rec.Comment != "too much" {
		t.Fatalf("when Discord got its response the approval was %+v, %v; want it denied", rec, err)
	}
	if res := await(t, env, ap); res.Text != "The answer: denied. Reason: too much." {
		t.Fatalf("resume = %+v", res)
	}
}

// TestE2ECancelRefusalOvertakingTheResponse checks a refused /ask cancel
// whose follow-up reaches Discord before the command's response (unknown
// webhook, seconds after the command) is tried again as a follow-up, not
// sent by DM at once.
func TestE2ECancelRefusalOvertakingTheResponse(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	h := start(t, harnessOptions{nats: env.NATS, tweak: func(b *Bot) {
		b.backoff = func(uint64) time.Duration { return 10 * time.Millisecond }
	}})
	q := colorQuestion()
	ask(t, env, q)
	h.posted(channelA, 1)
	in := h.command(kevin, "cancel", map[string]string{"tenant": "acme", "job": "job-1", "question": "q-1"})
	token := in["token"].(string)
	h.fake.failOn(failRule{Method: "POST", Prefix: "/webhooks/" + testApp + "/" + token, Status: 404, Code: 10015, Times: 1})
	h.interact(in)
	tries := h.fake.followups(t, token, 2)
	if c, _ := tries[1].JSON(t)["content"].(string); !strings.Contains(c, "You can't cancel questions") {
		t.Fatalf("second try = %s", tries[1].Body)
	}
	h.markerEvent()
	if n := len(h.fake.requests("POST", "/users/@me/channels")); n != 0 {
		t.Fatalf("%d DM channels opened, want none: the follow-up reached kevin", n)
	}
}

// TestShowGivesALongConsoleLinkInItsText: /ask show of a question the
// person may answer gives the console link in its text when it is too long
// for a button.
func TestShowGivesALongConsoleLinkInItsText(t *testing.T) {
	t.Parallel()
	label := strings.Repeat("a", 60)
	long := console.Signer{PublicURL: "https://" + strings.Join([]string{label, label, label, label}, ".") + ".example.com",
		Secret: []byte("console-secret-0123456789")}
	env := testenv.Start(t, testenv.Options{Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	h := start(t, harnessOptions{nats: env.NATS, mutate: func(o *Options) { o.Console = long }})
	h.signer = long
	q := colorQuestion()
	q.JobID, q.QuestionID = "job-"+strings.Repeat("j", 60), "q-"+strings.Repeat("q", 62)
	ask(t, env, q)
	h.posted(channelA, 1)
	resp := h.interact(h.command(kevin, "show", map[string]string{"question": q.QuestionID, "job": q.JobID}))
	checkResponse(t, "show", resp)
	data := resp["data"].(map[string]any)
	for _, c := range components(data) {
		if u, _ := c["url"].(string); len(u) > 512 {
			t.Fatalf("a button's url has %d characters; Discord takes 512", len(u))
		}
	}
	content, _ := data["content"].(string)
	const intro = "\nYour personal link to this question (do not share it): <"
	i := strings.Index(content, intro)
	if i < 0 || !strings.HasSuffix(content, ">") {
		t.Fatalf("/ask show says %q, want the console link in its text", content)
	}
	link := strings.TrimSuffix(content[i+len(intro):], ">")
	if l := linkOf(t, h.signer, link); l.Identity != "discord:"+kevin.ID || l.QuestionID != q.QuestionID || len(link) <= 512 {
		t.Fatalf("link of %d characters grants %+v", len(link), l)
	}
}

// A form button (Decline) clicked, or a decline form submitted, on a card
// whose question was answered meanwhile (a client that has not redrawn
// the card, a form left open) opens no form and sends nothing: the person
// is told at once, privately, who answered and when, in the runtime's
// words.
func TestE2EFormsOnAnAnsweredCardSayWhoAnswered(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{Operators: []string{"discord:" + ana.ID}})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	// Ana opens the decline form while the question waits.
	form := h.interact(h.click(ana, findComponent(t, msg, "Decline")["custom_id"].(string)))
	if form["type"] != float64(9) {
		t.Fatalf("decline = %v, want a form", form)
	}
	formID := form["data"].(map[string]any)["custom_id"].(string)
	h.interact(h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string)))
	await(t, env, q)
	h.fake.settledCard(t, msg["id"].(string), "Answered by <@"+kevin.ID+">: blue")
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		c, err := h.bot.loadCard(context.Background(), q.Tenant, q.JobID, q.QuestionID, q.TaskVersion)
		if err != nil || c == nil || c.Outcome == nil {
			return fmt.Errorf("card record not settled: %+v %v", c, err)
		}
		return nil
	})
	late := regexp.MustCompile(`^This question was already answered by discord:` + kevin.ID + ` \(kevin\) at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\.$`)
	before := len(h.attemptsNow())
	for name, in := range map[string]map[string]any{
		"decline button": h.click(ana, findComponent(t, msg, "Decline")["custom_id"].(string)),
		"decline form":   h.submit(ana, formID, map[string]string{"reason": "ask someone else"}),
	} {
		resp := h.interact(in)
		data, _ := resp["data"].(map[string]any)
		content, _ := data["content"].(string)
		if resp["type"] != float64(4) || data["flags"] != float64(64) || !late.MatchString(content) {
			t.Errorf("%s on an answered card: %v, want an ephemeral saying who answered", name, resp)
		}
	}
	if n := len(h.attemptsNow()); n != before {
		t.Errorf("%d attempts sent for an answered question", n-before)
	}
}
