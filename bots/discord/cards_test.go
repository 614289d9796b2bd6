package discord

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// embedOf returns a message's first embed.
func embedOf(t *testing.T, msg map[string]any) map[string]any {
	t.Helper()
	es, _ := msg["embeds"].([]any)
	if len(es) == 0 {
		t.Fatalf("message has no embed: %v", msg)
	}
	e, _ := es[0].(map[string]any)
	return e
}

func fieldValue(e map[string]any, name string) string {
	fs, _ := e["fields"].([]any)
	for _, f := range fs {
		m, _ := f.(map[string]any)
		if m["name"] == name {
			s, _ := m["value"].(string)
			return s
		}
	}
	return ""
}

func TestChoiceCardClickAndOutcome(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	ev := asked(colorQuestion())
	h.publishEvent(ev)
	msg := h.posted(channelA, 1)

	// The card: the question, why, who, deadline; a button per choice,
	// Decline and Open in console (the harness configures the console).
	e := embedOf(t, msg)
	if e["description"] != "Which colour should the report use?" {
		t.Errorf("description = %v", e["description"])
	}
	if got := fieldValue(e, "Why it matters"); got != "The brand guide changed." {
		t.Errorf("why it matters = %q", got)
	}
	if got := fieldValue(e, "Who may answer"); got != "<@"+kevin.ID+"> and operators" {
		t.Errorf("who may answer = %q", got)
	}
	if got := fieldValue(e, "Deadline"); !strings.Contains(got, fmt.Sprintf("<t:%d:f>", ev.Deadline.Unix())) {
		t.Errorf("deadline = %q", got)
	}
	var labels []string
	for _, c := range components(msg) {
		labels = append(labels, c["label"].(string))
		if id, _ := c["custom_id"].(string); len(id) == 0 || len(id) > 100 {
			t.Errorf("custom_id %q: must be 1 to 100 characters", id)
		}
	}
	if want := []string{"red", "blue", "green", "Decline", "Open in console", "Ask someone else", "Remind me later"}; !slices.Equal(labels, want) {
		t.Errorf("buttons = %v, want %v", labels, want)
	}
	post := h.fake.requests("POST", "/channels/"+channelA+"/messages")[0]
	if post.Auth != "Bot "+h.fake.token {
		t.Errorf("authorization = %q", post.Auth)
	}
	if body := post.JSON(t); body["enforce_nonce"] != true || body["nonce"] == "" {
		t.Errorf("the post is not idempotent: nonce %v, enforce_nonce %v", body["nonce"], body["enforce_nonce"])
	}
	// The job's thread is started from its first question (before the
	// delivery report).
	d := h.waitDelivery()
	threads := h.fake.requests("POST", "/channels/"+channelA+"/messages/"+msg["id"].(string)+"/threads")
	if len(threads) != 1 {
		t.Fatalf("%d thread starts, want 1", len(threads))
	}
	if !d.OK || d.Platform != "discord" || d.Message == nil || d.Message.MessageID != msg["id"] ||
		d.Message.Channel != channelA || d.Message.Thread != msg["id"] || d.TaskVersion != 3 {
		t.Fatalf("delivery = %+v (message %+v)", d, d.Message)
	}

	// Kevin clicks blue.
	resp := h.interact(h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string)))
	if resp["type"] != float64(6) {
		t.Fatalf("click response = %v, want a deferred update (6)", resp)
	}
	at := h.waitAttempts(1)[0]
	if at.Tenant != "acme" || at.JobID != "job-1" || at.QuestionID != "q-1" || at.TaskVersion != 3 ||
		at.Action != bridge.ActionAnswer || string(at.Answer) != `"blue"` || at.By != "discord:"+kevin.ID ||
		at.ByName != "kevin" || at.Via != "discord" || !strings.HasPrefix(at.AttemptID, "discord-") {
		t.Fatalf("attempt = %+v", at)
	}
	if at.ReplyTo["token"] == "" || at.ReplyTo["app_id"] != testApp || at.ReplyTo["platform"] != "discord" {
		t.Fatalf("reply_to = %v", at.ReplyTo)
	}
	if len(at.Roles) != 0 {
		t.Fatalf("roles = %v, want none", at.Roles)
	}

	// The runtime accepts it.
	h.publishEvent(bridge.Event{Type: bridge.EventAnswered, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
		By: at.By, ByName: at.ByName, Via: "discord", Answer: json.RawMessage(`"blue"`), AnswerText: "blue", Text: "The answer: blue"})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		m := h.fake.message(msg["id"].(string))
		if n := len(components(m)); n != 0 {
			return fmt.Errorf("the card still has %d components", n)
		}
		got := fieldValue(embedOf(t, m), "Outcome")
		if !strings.Contains(got, "<@"+kevin.ID+">") || !strings.Contains(got, "Answered by <@"+kevin.ID+">: blue") || !strings.Contains(got, "<t:") {
			return fmt.Errorf("outcome = %q", got)
		}
		return nil
	})
	edit := h.fake.requests("PATCH", "/channels/"+channelA+"/messages/"+msg["id"].(string))
	if len(edit) != 1 {
		t.Fatalf("%d edits, want 1", len(edit))
	}
	if c, ok := edit[0].JSON(t)["components"].([]any); !ok || len(c) != 0 {
		t.Fatalf("the edit does not clear the components: %s", edit[0].Body)
	}

	// A second question of the job goes into the job's thread.
	q2 := colorQuestion()
	q2.QuestionID, q2.Question = "q-2", "And the font?"
	q2.Choices = []string{"serif", "sans"}
	h.publishEvent(asked(q2))
	thread := msg["id"].(string)
	second := h.posted(thread, 1)
	if embedOf(t, second)["description"] != "And the font?" {
		t.Fatalf("second card in the thread: %v", second)
	}
	if n := len(h.fake.requests("POST", "/channels/"+channelA+"/messages")); n != 2 { // the first post and its thread start
		t.Fatalf("%d requests to the channel, want 2 (the second question belongs in the thread)", n)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, d := range h.deliveriesNow() {
			if d.QuestionID == "q-2" && d.OK && d.Message.Channel == thread && d.Message.Thread == thread {
				return nil
			}
		}
		return fmt.Errorf("no delivery report for q-2 in the thread: %+v", h.deliveriesNow())
	})
}

func TestRoutedChannelAndMappedRoles(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := colorQuestion()
	q.Route = &bridge.Route{Discord: &bridge.DiscordRoute{ChannelID: "1000000000000000077"}}
	h.publishEvent(asked(q))
	msg := h.posted("1000000000000000077", 1)
	boss := person{ID: "3000000000000000005", Name: "boss", Roles: []string{"99", adminRole, operRole}}
	h.interact(h.click(boss, findComponent(t, msg, "red")["custom_id"].(string)))
	at := h.waitAttempts(1)[0]
	if !slices.Equal(at.Roles, []string{"admin", "operator"}) {
		t.Fatalf("roles = %v, want [admin operator]", at.Roles)
	}
	if n := len(h.fake.requests("POST", "/channels/"+channelA)); n != 0 {
		t.Fatalf("%d posts to the default channel; the question was routed elsewhere", n)
	}
}

func TestFreeTextModalAnswer(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := colorQuestion()
	q.Choices = nil
	q.Question = "What should the subject line say?"
	h.publishEvent(asked(q))
	msg := h.posted(channelA, 1)
	resp := h.interact(h.click(kevin, findComponent(t, msg, "Answer…")["custom_id"].(string)))
	if resp["type"] != float64(9) {
		t.Fatalf("Answer click = %v, want a modal (9)", resp)
	}
	data := resp["data"].(map[string]any)
	rows := data["components"].([]any)
	input := rows[0].(map[string]any)["components"].([]any)[0].(map[string]any)
	if input["type"] != float64(4) || input["custom_id"] != "answer" || input["required"] != true {
		t.Fatalf("modal input = %v", input)
	}
	if n := len(h.attempts.all()); n != 0 {
		t.Fatalf("opening the modal published %d attempts", n)
	}
	// An empty answer is refused by the one validator, before the runtime.
	resp = h.interact(h.submit(kevin, data["custom_id"].(string), map[string]string{"answer": "   "}))
	if d, _ := resp["data"].(map[string]any); resp["type"] != float64(4) || d["flags"] != float64(64) || d["content"] != "answer: is required" {
		t.Fatalf("empty answer response = %v", resp)
	}
	resp = h.interact(h.submit(kevin, data["custom_id"].(string), map[string]string{"answer": "Q3 report: final"}))
	if resp["type"] != float64(6) {
		t.Fatalf("submit response = %v, want a deferred update (6)", resp)
	}
	at := h.waitAttempts(1)[0]
	if at.Action != "answer" || string(at.Answer) != `"Q3 report: final"` || at.TaskVersion != 3 || at.By != "discord:"+kevin.ID {
		t.Fatalf("attempt = %+v", at)
	}
}

func TestDeclineWithReason(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.publishEvent(asked(colorQuestion()))
	msg := h.posted(channelA, 1)
	resp := h.interact(h.click(kevin, findComponent(t, msg, "Decline")["custom_id"].(string)))
	if resp["type"] != float64(9) {
		t.Fatalf("Decline click = %v, want a modal (9)", resp)
	}
	modalID := resp["data"].(map[string]any)["custom_id"].(string)
	h.interact(h.submit(kevin, modalID, map[string]string{"reason": "ask Ana"}))
	at := h.waitAttempts(1)[0]
	if at.Action != "decline" || at.Comment != "ask Ana" || len(at.Answer) != 0 {
		t.Fatalf("attempt = %+v", at)
	}
	text := bridge.DeclinedText(at.By, at.ByName, at.Comment)
	h.publishEvent(bridge.Event{Type: bridge.EventDeclined, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
		By: at.By, ByName: at.ByName, Via: "discord", Comment: "ask Ana", Text: text})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		m := h.fake.message(msg["id"].(string))
		got := fieldValue(embedOf(t, m), "Outcome")
		if len(components(m)) != 0 || !strings.Contains(got, "Declined by <@"+kevin.ID+">: ask Ana") {
			return fmt.Errorf("card: outcome %q, %d components", got, len(components(m)))
		}
		return nil
	})
}

func TestApprovalButtons(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := bridge.Question{Tenant: "acme", JobID: "job-3", QuestionID: "ap-1", TaskVersion: 1, Kind: bridge.KindApproval,
		Question: "May I send the refund?", Proposal: &bridge.Proposal{ID: "p1", Action: "refund", Summary: []string{"Refund 40 EUR to order 1234"}}}
	h.publishEvent(asked(q))
	msg := h.posted(channelA, 1)
	var labels []string
	for _, c := range components(msg) {
		labels = append(labels, c["label"].(string))
	}
	// As on Slack: Approve, Deny (asks why) and Decline; then Ask someone
	// else and Remind me later, in a row of their own.
	if !slices.Equal(labels, []string{"Approve", "Deny", "Decline", "Open in console", "Ask someone else", "Remind me later"}) {
		t.Fatalf("approval buttons = %v", labels)
	}
	for _, c := range components(msg) {
		if id, _ := c["custom_id"].(string); len(id) == 0 || len(id) > 100 {
			t.Errorf("custom_id %q: must be 1 to 100 characters", id)
		}
	}
	if got := fieldValue(embedOf(t, msg), "Proposal"); got != "Refund 40 EUR to order 1234" {
		t.Fatalf("proposal = %q", got)
	}
	// Deny opens a form asking why; nothing is proposed yet.
	resp := h.interact(h.click(kevin, findComponent(t, msg, "Deny")["custom_id"].(string)))
	modalID := denyModalOf(t, resp, q)
	if n := len(h.attempts.all()); n != 0 {
		t.Fatalf("opening the deny modal published %d attempts", n)
	}
	// A blank reason, or one too long, is refused at once, to the clicker
	// alone, before the runtime.
	for reason, want := range map[string]string{
		"   ": "Say why, so the agent can adjust its plan.",
		strings.Repeat("x", bridge.MaxCommentText+1): fmt.Sprintf("comment: must be at most %d characters", bridge.MaxCommentText),
	} {
		resp = h.interact(h.submit(kevin, modalID, map[string]string{"reason": reason}))
		if d, _ := resp["data"].(map[string]any); resp["type"] != float64(4) || d["flags"] != float64(64) || d["content"] != want {
			t.Fatalf("deny with reason of %d characters: response = %v, want %q", len(reason), resp, want)
		}
	}
	if n := len(h.attempts.all()); n != 0 {
		t.Fatalf("refused deny forms published %d attempts", n)
	}
	resp = h.interact(h.submit(kevin, modalID, map[string]string{"reason": "  Refund 20 EUR instead  "}))
	if resp["type"] != float64(6) {
		t.Fatalf("deny submit response = %v, want a deferred update (6)", resp)
	}
	h.interact(h.click(ana, findComponent(t, msg, "Approve")["custom_id"].(string)))
	ats := h.waitAttempts(2)
	if ats[0].Action != "deny" || ats[1].Action != "approve" || len(ats[0].Answer) != 0 {
		t.Fatalf("attempts = %+v", ats)
	}
	if ats[0].Comment != "Refund 20 EUR instead" || ats[0].By != "discord:"+kevin.ID || ats[0].TaskVersion != 1 ||
		ats[0].QuestionID != "ap-1" || ats[0].ReplyTo["token"] == "" || ats[1].Comment != "" {
		t.Fatalf("deny attempt = %+v", ats[0])
	}
}

// denyModalOf checks that resp opens the deny form for q (a modal, type 9,
// with one required paragraph input for the reason, as Slack's deny modal)
// and returns the form's custom_id.
func denyModalOf(t *testing.T, resp map[string]any, q bridge.Question) string {
	t.Helper()
	if resp["type"] != float64(9) {
		t.Fatalf("Deny click = %v, want a modal (9)", resp)
	}
	data, _ := resp["data"].(map[string]any)
	id, _ := data["custom_id"].(string)
	if a, err := parseCustomID(id); err != nil || a.Act != actModalDeny || a.TaskVersion != q.TaskVersion ||
		(a.Key == "" && (a.Tenant != q.Tenant || a.JobID != q.JobID || a.QuestionID != q.QuestionID)) {
		t.Fatalf("deny modal custom_id %q parses to %+v, %v", id, a, err)
	}
	if data["title"] != "Deny the proposal" {
		t.Errorf("deny modal title = %v", data["title"])
	}
	rows, _ := data["components"].([]any)
	if len(rows) != 1 {
		t.Fatalf("deny modal rows = %v, want one", rows)
	}
	inputs, _ := rows[0].(map[string]any)["components"].([]any)
	if len(inputs) != 1 {
		t.Fatalf("deny modal inputs = %v, want one", inputs)
	}
	in, _ := inputs[0].(map[string]any)
	if in["type"] != float64(4) || in["custom_id"] != "reason" || in["style"] != float64(2) || in["required"] != true ||
		in["label"] != "Why deny it?" || in["placeholder"] != "What should the agent do instead?" ||
		in["min_length"] != float64(1) || in["max_length"] != float64(bridge.MaxCommentText) {
		t.Fatalf("deny modal input = %v", in)
	}
	return id
}

func TestManyChoices(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	var twentyTwo, thirty []string
	for i := range 30 {
		if i < 22 {
			twentyTwo = append(twentyTwo, fmt.Sprintf("option %d", i))
		}
		thirty = append(thirty, fmt.Sprintf("option %d", i))
	}
	q := colorQuestion()
	q.Choices = twentyTwo
	h.publishEvent(asked(q))
	msg := h.posted(channelA, 1)
	sel := components(msg)[0]
	if sel["type"] != float64(3) || len(sel["options"].([]any)) != 22 {
		t.Fatalf("22 choices: first component = %v, want a string select with 22 options", sel)
	}
	resp := h.interact(h.selectChoice(kevin, sel["custom_id"].(string), "21"))
	if resp["type"] != float64(6) {
		t.Fatalf("select response = %v", resp)
	}
	if at := h.waitAttempts(1)[0]; string(at.Answer) != `"option 21"` {
		t.Fatalf("answer = %s", at.Answer)
	}
	// A value that is no choice is refused, with no attempt.
	resp = h.interact(h.selectChoice(kevin, sel["custom_id"].(string), "24"))
	if d, _ := resp["data"].(map[string]any); d["flags"] != float64(64) {
		t.Fatalf("bad select value response = %v", resp)
	}
	q2 := colorQuestion()
	q2.QuestionID, q2.Choices = "q-30", thirty
	h.publishEvent(asked(q2))
	msg2 := h.posted(msg["id"].(string), 1)
	assertNoLinkOnCard(t, h.signer, msg2)
	btn := findComponent(t, msg2, "Open in console")
	if btn["style"] == float64(5) || btn["url"] != nil {
		t.Fatalf("console button = %v, want a normal button", btn)
	}
	if got := fieldValue(embedOf(t, msg2), "Answer in the askbridge console"); !strings.Contains(got, "30 choices") {
		t.Fatalf("the card does not say to answer in the console: %q", got)
	}
	if l := linkOf(t, h.signer, h.consoleClick(kevin, btn["custom_id"].(string))); l.Identity != "discord:"+kevin.ID || l.QuestionID != "q-30" {
		t.Fatalf("link = %+v", l)
	}
	if n := len(h.attempts.all()); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
}

func TestLongIDsUseKeyedCustomIDs(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := colorQuestion()
	q.Tenant, q.JobID, q.QuestionID = strings.Repeat("t", 64), strings.Repeat("j", 64), strings.Repeat("q", 64)
	h.publishEvent(asked(q))
	msg := h.posted(channelA, 1)
	id := findComponent(t, msg, "green")["custom_id"].(string)
	if len(id) > 100 || !strings.HasPrefix(id, "ab#:") {
		t.Fatalf("custom_id = %q (%d chars)", id, len(id))
	}
	h.interact(h.click(kevin, id))
	at := h.waitAttempts(1)[0]
	if at.Tenant != q.Tenant || at.JobID != q.JobID || at.QuestionID != q.QuestionID || string(at.Answer) != `"green"` {
		t.Fatalf("attempt = %+v", at)
	}
}

func TestLongIDsDenyForm(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := bridge.Question{Tenant: strings.Repeat("t", 64), JobID: strings.Repeat("j", 64), QuestionID: strings.Repeat("q", 64),
		TaskVersion: 2, Kind: bridge.KindApproval, Question: "May I send the refund?",
		Proposal: &bridge.Proposal{ID: "p1", Action: "refund", Summary: []string{"Refund 40 EUR to order 1234"}}}
	h.publishEvent(asked(q))
	msg := h.posted(channelA, 1)
	resp := h.interact(h.click(kevin, findComponent(t, msg, "Deny")["custom_id"].(string)))
	id := denyModalOf(t, resp, q)
	if len(id) > 100 || !strings.HasPrefix(id, "ab#:"+actModalDeny+":") {
		t.Fatalf("deny modal custom_id = %q (%d chars), want the keyed form", id, len(id))
	}
	h.interact(h.submit(kevin, id, map[string]string{"reason": "too much"}))
	at := h.waitAttempts(1)[0]
	if at.Tenant != q.Tenant || at.JobID != q.JobID || at.QuestionID != q.QuestionID || at.TaskVersion != 2 ||
		at.Action != bridge.ActionDeny || at.Comment != "too much" || len(at.Answer) != 0 {
		t.Fatalf("attempt = %+v", at)
	}
}
