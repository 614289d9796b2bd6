package discord

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bots/engine"
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

// refuse publishes the refusal the runtime sends for an attempt.
func (h *harness) refuse(at bridge.AnswerAttempt, reason, text string) {
	h.publishEvent(bridge.Event{Type: bridge.EventRefused, Tenant: at.Tenant, JobID: at.JobID, QuestionID: at.QuestionID,
		TaskVersion: at.TaskVersion, To: at.By, Reason: reason, Text: text, AttemptID: at.AttemptID, ReplyTo: at.ReplyTo})
}

// followups waits for n follow-ups on an interaction token.
func (f *fakeDiscord) followups(t *testing.T, token string, n int) []fakeReq {
	t.Helper()
	var out []fakeReq
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		out = f.requests("POST", "/webhooks/"+testApp+"/"+token)
		if len(out) != n {
			return fmt.Errorf("%d follow-ups on the interaction, want %d", len(out), n)
		}
		return nil
	})
	return out
}

func TestStrangerRefusedEphemerally(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.publishEvent(asked(colorQuestion()))
	msg := h.posted(channelA, 1)
	h.interact(h.click(stranger, findComponent(t, msg, "red")["custom_id"].(string)))
	at := h.waitAttempts(1)[0]
	text := "You can't answer this question: it asks " + "discord:" + kevin.ID + "."
	h.refuse(at, bridge.RefusedForbidden, text)
	f := h.fake.followups(t, at.ReplyTo["token"], 1)[0]
	body := f.JSON(t)
	if body["flags"] != float64(64) || body["content"] != text {
		t.Fatalf("follow-up = %s, want the refusal, ephemeral", f.Body)
	}
	if !strings.Contains(f.Query, "wait=true") {
		t.Errorf("follow-up query = %q", f.Query)
	}
	// The card is untouched.
	if n := len(h.fake.requests("PATCH", "/channels/")); n != 0 {
		t.Fatalf("a refusal edited the card (%d edits)", n)
	}
	if n := len(components(h.fake.message(msg["id"].(string)))); n != 7 {
		t.Fatalf("the card has %d components after a refusal, want 7", n)
	}
	// Another front-end's refusal is not ours to show.
	h.publishEvent(bridge.Event{Type: bridge.EventRefused, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
		To: "slack:U1", Reason: bridge.RefusedForbidden, Text: "no", AttemptID: "slack-1", ReplyTo: map[string]string{"response_url": "x"}})
	// ...and a redelivered refusal is shown once: publish the same again
	// under a new event id; the attempt's refusal was already told.
	h.refuse(at, bridge.RefusedForbidden, text)
	h.markerEvent()
	if n := len(h.fake.requests("POST", "/webhooks/")); n != 1 {
		t.Fatalf("%d follow-ups, want 1", n)
	}
}

// markerEvent publishes events the bot handles visibly, one in each of
// the event loop's worker queues, and waits for them, so every event
// published before them has been processed.
func (h *harness) markerEvent() {
	h.t.Helper()
	jobs := map[string]bool{}
	for covered := map[int]bool{}; len(covered) < engine.DefaultWorkers; {
		job := "m-" + h.newSnowflake()
		if queue := engine.QueueOf(bridge.EventSubject("marker", job), engine.DefaultWorkers); !covered[queue] {
			covered[queue], jobs[job] = true, true
		}
	}
	for job := range jobs {
		q := bridge.Question{Tenant: "marker", JobID: job, QuestionID: "q", Question: "marker", Choices: []string{"x"}}
		q.Route = &bridge.Route{Discord: &bridge.DiscordRoute{ChannelID: "1999999999999999999"}}
		h.publishEvent(asked(q))
	}
	testenv.CheckFor(h.t, testenv.Patience, 10*time.Millisecond, func() error {
		seen := 0
		for _, d := range h.deliveriesNow() {
			if jobs[d.JobID] {
				seen++
			}
		}
		if seen < len(jobs) {
			return fmt.Errorf("%d of %d markers processed", seen, len(jobs))
		}
		return nil
	})
}

func TestStaleCardRefused(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	old := colorQuestion()
	old.TaskVersion = 2
	h.publishEvent(asked(old))
	msg := h.posted(channelA, 1)
	// The task moved on: version 2 is superseded, version 3 asked.
	h.publishEvent(bridge.Event{Type: bridge.EventSuperseded, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 2,
		Text: bridge.SupersededText(3)})
	h.publishEvent(asked(colorQuestion()))
	h.posted(msg["id"].(string), 1) // v3 in the job's thread
	// Kevin clicks the old card (an old client still shows the buttons).
	h.interact(h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string)))
	at := h.waitAttempts(1)[0]
	if at.TaskVersion != 2 {
		t.Fatalf("attempt version = %d, want the card's 2", at.TaskVersion)
	}
	text := "This question was asked for task version 2; the task is now at version 3."
	h.refuse(at, bridge.RefusedStale, text)
	f := h.fake.followups(t, at.ReplyTo["token"], 1)[0]
	if b := f.JSON(t); b["flags"] != float64(64) || b["content"] != text {
		t.Fatalf("follow-up = %s", f.Body)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		got := fieldValue(embedOf(t, h.fake.message(msg["id"].(string))), "Outcome")
		if !strings.Contains(got, "Superseded by task version 3") {
			return fmt.Errorf("old card outcome = %q", got)
		}
		return nil
	})
}

func TestDoubleClickTwoAttemptsOneID(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.publishEvent(asked(colorQuestion()))
	msg := h.posted(channelA, 1)
	id := findComponent(t, msg, "blue")["custom_id"].(string)
	h.interact(h.click(kevin, id))
	h.interact(h.click(kevin, id))
	ats := h.waitAttempts(2)
	// Two interactions are two attempts with their own ids; the runtime
	// settles the question once (see the end-to-end test).
	if ats[0].AttemptID == ats[1].AttemptID || ats[0].TaskVersion != 3 || ats[1].TaskVersion != 3 {
		t.Fatalf("attempts = %+v", ats)
	}
	// One outcome, delivered twice (redelivery), edits to the same result.
	ans := bridge.Event{Type: bridge.EventAnswered, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
		By: ats[0].By, ByName: "kevin", Answer: json.RawMessage(`"blue"`), AnswerText: "blue", At: time.Now().UTC()}
	h.publishEvent(ans)
	ans.EventID = "ob-again"
	h.publishEvent(ans)
	h.markerEvent()
	if n := len(h.fake.requests("PATCH", "/channels/")); n != 1 {
		t.Fatalf("%d edits for one outcome, want 1", n)
	}
}

// linkOf verifies a signed console link and returns what it grants.
func linkOf(t *testing.T, s console.Signer, raw string) console.Link {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("link %q: %v", raw, err)
	}
	if !strings.HasPrefix(raw, s.PublicURL+"/console/q/") {
		t.Fatalf("link %q is not a console question link", raw)
	}
	parts := strings.Split(strings.TrimPrefix(u.Path, "/console/q/"), "/")
	if len(parts) != 3 {
		t.Fatalf("link path %q", u.Path)
	}
	exp, err := strconv.ParseInt(u.Query().Get("exp"), 10, 64)
	if err != nil {
		t.Fatalf("link exp: %v", err)
	}
	l := console.Link{Identity: u.Query().Get("as"), Scope: console.ScopeQuestion, Tenant: parts[0], JobID: parts[1],
		QuestionID: parts[2], Expires: time.Unix(exp, 0)}
	if rs := u.Query().Get("roles"); rs != "" {
		l.Roles = strings.Split(rs, ",")
	}
	if err := s.Verify(l, u.Query().Get("sig"), time.Now()); err != nil {
		t.Fatalf("link %q does not verify: %v", raw, err)
	}
	return l
}

func typedQuestion() bridge.Question {
	one, nine := 1.0, 9.0
	return bridge.Question{Tenant: "acme", JobID: "job-2", QuestionID: "q-7", TaskVersion: 1,
		Question: "When should I send the report, and how many copies?",
		Fields: []bridge.Field{{Name: "on", Kind: "date", Label: "Send on", Required: true},
			{Name: "copies", Kind: "number", Integer: true, Min: &one, Max: &nine}},
		Answerers: []string{"slack:U0ANA", "discord:" + ana.ID, "discord:" + kevin.ID}, Owner: "discord:" + kevin.ID}
}

// assertNoLinkOnCard checks a posted card carries no link button and no
// signed console URL anywhere: a channel message is read by everyone there.
func assertNoLinkOnCard(t *testing.T, s console.Signer, msg map[string]any) {
	t.Helper()
	for _, c := range components(msg) {
		if c["style"] == float64(5) || c["url"] != nil {
			t.Fatalf("card component %v is a link", c)
		}
	}
	raw, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{s.PublicURL, "/console/", "sig=", "sig%3D", "as=discord", "as=discord%3A"} {
		if strings.Contains(string(raw), bad) {
			t.Fatalf("the card's JSON holds %q: %s", bad, raw)
		}
	}
}

// consoleClick clicks a card's Open in console button as p and returns the
// link of the ephemeral reply.
func (h *harness) consoleClick(p person, customID string) string {
	h.t.Helper()
	resp := h.interact(h.click(p, customID))
	data, _ := resp["data"].(map[string]any)
	if resp["type"] != float64(4) || data == nil || data["flags"] != float64(64) {
		h.t.Fatalf("console click = %v, want an ephemeral message (type 4, flags 64)", resp)
	}
	cs := components(data)
	if len(cs) != 1 || cs[0]["style"] != float64(5) {
		h.t.Fatalf("console click components = %v, want one link button", cs)
	}
	u, _ := cs[0]["url"].(string)
	return u
}

// verifiesFor reports whether a signed console link verifies as granting
// identity the question tenant/job/question.
func verifiesFor(s console.Signer, raw, identity, tenant, job, question string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	exp, err := strconv.ParseInt(u.Query().Get("exp"), 10, 64)
	if err != nil {
		return false
	}
	l := console.Link{Identity: identity, Scope: console.ScopeQuestion, Tenant: tenant, JobID: job, QuestionID: question,
		Expires: time.Unix(exp, 0)}
	return s.Verify(l, u.Query().Get("sig"), time.Now()) == nil
}

func TestTypedQuestionConsoleLinkIsPerClicker(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	// The question names Discord answerers and a Discord owner: still no
	// link on the card, which anyone in the channel can read.
	h.publishEvent(asked(typedQuestion()))
	msg := h.posted(channelA, 1)
	assertNoLinkOnCard(t, h.signer, msg)
	btn := findComponent(t, msg, "Open in console")
	id, _ := btn["custom_id"].(string)
	if btn["style"] == float64(5) || id == "" {
		t.Fatalf("console button = %v, want a normal button", btn)
	}
	if a, err := parseCustomID(id); err != nil || a.Act != actConsole || a.Tenant != "acme" || a.JobID != "job-2" || a.QuestionID != "q-7" || a.TaskVersion != 1 {
		t.Fatalf("console button custom_id %q parses to %+v, %v", id, a, err)
	}
	findComponent(t, msg, "Decline")
	got := fieldValue(embedOf(t, msg), "Answer in the askbridge console")
	if !strings.Contains(got, "Send on (date, required)") || !strings.Contains(got, "Open in console") {
		t.Fatalf("the card does not say to answer in the console: %q", got)
	}

	// User A (ana, a named answerer) gets a link signed for her alone.
	forAna := h.consoleClick(ana, id)
	if l := linkOf(t, h.signer, forAna); l.Identity != "discord:"+ana.ID || l.Tenant != "acme" || l.JobID != "job-2" || l.QuestionID != "q-7" {
		t.Fatalf("ana's link grants %+v, want discord:%s on acme/job-2/q-7", l, ana.ID)
	}
	if !verifiesFor(h.signer, forAna, "discord:"+ana.ID, "acme", "job-2", "q-7") {
		t.Fatal("ana's link does not verify for her")
	}
	if verifiesFor(h.signer, forAna, "discord:"+kevin.ID, "acme", "job-2", "q-7") ||
		verifiesFor(h.signer, forAna, "discord:"+stranger.ID, "acme", "job-2", "q-7") {
		t.Fatal("ana's link verifies for another user")
	}
	if verifiesFor(h.signer, forAna, "discord:"+ana.ID, "acme", "job-2", "q-8") ||
		verifiesFor(h.signer, forAna, "discord:"+ana.ID, "acme", "job-1", "q-7") {
		t.Fatal("ana's link verifies for another question")
	}
	// A forged link (re-addressed in the URL) does not verify.
	forged := strings.Replace(forAna, "as=discord%3A"+ana.ID, "as=discord%3A"+stranger.ID, 1)
	if forged == forAna {
		t.Fatalf("link %q does not name ana in as=", forAna)
	}
	u, _ := url.Parse(forged)
	exp, _ := strconv.ParseInt(u.Query().Get("exp"), 10, 64)
	if h.signer.Verify(console.Link{Identity: u.Query().Get("as"), Scope: console.ScopeQuestion, Tenant: "acme", JobID: "job-2",
		QuestionID: "q-7", Expires: time.Unix(exp, 0)}, u.Query().Get("sig"), time.Now()) == nil {
		t.Fatal("a link re-addressed to someone else verified")
	}

	// User B (someone the question does not name) gets B's own link; the
	// console, not the link, decides what B may do.
	forB := h.consoleClick(stranger, id)
	if l := linkOf(t, h.signer, forB); l.Identity != "discord:"+stranger.ID || l.QuestionID != "q-7" {
		t.Fatalf("B's link grants %+v, want discord:%s", l, stranger.ID)
	}
	if verifiesFor(h.signer, forB, "discord:"+ana.ID, "acme", "job-2", "q-7") {
		t.Fatal("B's link verifies for ana")
	}
	if n := len(h.attempts.all()); n != 0 {
		t.Fatalf("console clicks published %d attempts", n)
	}
}

func TestConsoleButtonSignsForTheClicker(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := typedQuestion()
	q.Answerers, q.Owner = []string{"slack:U0ANA"}, "slack:U0OWNER"
	h.publishEvent(asked(q))
	msg := h.posted(channelA, 1)
	btn := findComponent(t, msg, "Open in console")
	if btn["style"] == float64(5) || btn["custom_id"] == nil {
		t.Fatalf("console button = %v, want a normal button", btn)
	}
	resp := h.interact(h.click(stranger, btn["custom_id"].(string)))
	data := resp["data"].(map[string]any)
	if resp["type"] != float64(4) || data["flags"] != float64(64) {
		t.Fatalf("click = %v, want an ephemeral reply", resp)
	}
	link := components(data)[0]
	l := linkOf(t, h.signer, link["url"].(string))
	if l.Identity != "discord:"+stranger.ID || l.QuestionID != "q-7" {
		t.Fatalf("link grants %+v, want the clicker", l)
	}
	if n := len(h.attempts.all()); n != 0 {
		t.Fatalf("a console click published %d attempts", n)
	}
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

// TestJobThreadPerChannel checks a job's question routed to another
// channel is shown there, in a thread of its own, and the job's later
// questions for the first channel still go to the first thread.
func TestJobThreadPerChannel(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	const channelB = "1000000000000000002"
	q1 := colorQuestion()
	h.publishEvent(asked(q1))
	first := h.posted(channelA, 1)

	q2 := colorQuestion()
	q2.QuestionID, q2.Question = "q-2", "Which size?"
	q2.Route = &bridge.Route{Discord: &bridge.DiscordRoute{ChannelID: channelB}}
	h.publishEvent(asked(q2))
	second := h.posted(channelB, 1)
	if embedOf(t, second)["description"] != "Which size?" {
		t.Fatalf("card in %s: %v", channelB, second)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if n := len(h.fake.requests("POST", "/channels/"+channelB+"/messages/"+second["id"].(string)+"/threads")); n != 1 {
			return fmt.Errorf("%d thread starts from the card in %s, want 1", n, channelB)
		}
		return nil
	})

	q3 := colorQuestion()
	q3.QuestionID, q3.Question = "q-3", "And the font?"
	h.publishEvent(asked(q3))
	if third := h.posted(first["id"].(string), 1); embedOf(t, third)["description"] != "And the font?" {
		t.Fatalf("card in the first thread: %v", third)
	}
	if n := len(h.fake.requests("POST", "/channels/"+channelB+"/messages")); n != 2 { // the card and its thread start
		t.Fatalf("%d requests to %s, want 2", n, channelB)
	}
}

// TestDeletedJobThread checks a question of a job whose thread was
// deleted is shown in the channel, which starts the job a new thread,
// instead of failing the job.
func TestDeletedJobThread(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q1 := colorQuestion()
	h.publishEvent(asked(q1))
	gone := h.posted(channelA, 1)["id"].(string)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if n := len(h.fake.requests("POST", "/channels/"+channelA+"/messages/"+gone+"/threads")); n != 1 {
			return fmt.Errorf("%d thread starts, want 1", n)
		}
		return nil
	})
	h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/" + gone + "/messages", Status: 404, Code: 10003, Times: -1})

	q2 := colorQuestion()
	q2.QuestionID, q2.Question = "q-2", "Which size?"
	h.publishEvent(asked(q2))
	second := h.posted(channelA, 2)
	if embedOf(t, second)["description"] != "Which size?" {
		t.Fatalf("second card in the channel: %v", second)
	}
	thread := second["id"].(string)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, d := range h.deliveriesNow() {
			if d.QuestionID == "q-2" && d.OK && d.Message.Channel == channelA && d.Message.Thread == thread {
				return nil
			}
		}
		return fmt.Errorf("no delivery report for q-2 in the new thread %s: %+v", thread, h.deliveriesNow())
	})

	q3 := colorQuestion()
	q3.QuestionID, q3.Question = "q-3", "And the font?"
	h.publishEvent(asked(q3))
	if third := h.posted(thread, 1); embedOf(t, third)["description"] != "And the font?" {
		t.Fatalf("third card in the new thread: %v", third)
	}
}

// TestEmbedsStayWithinDiscordsTotal checks the pending and the settled
// card of a question that fills every field stay within the 6,000
// characters Discord allows an embed in all (an edit over it is refused,
// and the card would keep its buttons).
func TestEmbedsStayWithinDiscordsTotal(t *testing.T) {
	t.Parallel()
	q := colorQuestion()
	q.Agent = strings.Repeat("a", 300)
	q.Question = strings.Repeat("q", 5000)
	q.Context = strings.Repeat("c", 2000)
	q.WhyItMatters = strings.Repeat("w", 2000)
	q.BlockedTools = []string{strings.Repeat("t", 2000)}
	q.Choices = nil
	for i := range 20 {
		q.Fields = append(q.Fields, bridge.Field{Name: fmt.Sprintf("f%d", i), Kind: "text", Label: strings.Repeat("l", 60)})
	}
	for i := range 40 {
		q.Answerers = append(q.Answerers, fmt.Sprintf("discord:%019d", i))
	}
	q.Owner = "discord:" + strings.Repeat("9", 19)
	q.JobID, q.QuestionID = strings.Repeat("j", 64), strings.Repeat("k", 64)
	c := &card{Tenant: "acme", JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: 3, Question: &q,
		AskedAt: time.Now(), Deadline: time.Now().Add(time.Hour)}
	pending := cardEmbed(c)
	settled := settledEmbed(pending, &outcome{Type: bridge.EventDeclined, By: "discord:" + kevin.ID, ByName: "kevin",
		Reason: strings.Repeat("r", 1500), At: time.Now()})
	for name, e := range map[string]*discordgo.MessageEmbed{"pending": pending, "settled": settled} {
		if n := embedSize(e); n > maxEmbedTotal {
			t.Errorf("%s card: %d characters, Discord allows %d", name, n, maxEmbedTotal)
		}
	}
	if last := settled.Fields[len(settled.Fields)-1]; last.Name != "Outcome" || !strings.Contains(last.Value, "<@"+kevin.ID+">") {
		t.Errorf("settled card's last field %q: %q", last.Name, last.Value)
	}
	if !strings.HasPrefix(settled.Description, "qqqq") || utf8.RuneCountInString(settled.Description) < 200 {
		t.Errorf("settled description cut to %d characters", utf8.RuneCountInString(settled.Description))
	}
	if embedSize(pending) > maxEmbedTotal || pending.Fields[len(pending.Fields)-1].Name == "Outcome" {
		t.Error("settling changed the pending card's embed")
	}
}

// TestRefusalOvertakingTheResponseIsRetried checks a refusal whose
// follow-up reaches Discord before the bot's response to the interaction
// (Discord answers an unknown webhook, 10015) is tried again, not dropped
// as if the token had expired.
func TestRefusalOvertakingTheResponseIsRetried(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{tweak: func(b *Bot) { b.backoff = func(uint64) time.Duration { return 10 * time.Millisecond } }})
	h.publishEvent(asked(colorQuestion()))
	msg := h.posted(channelA, 1)
	h.interact(h.click(stranger, findComponent(t, msg, "red")["custom_id"].(string)))
	at := h.waitAttempts(1)[0]
	token := at.ReplyTo["token"]
	h.fake.failOn(failRule{Method: "POST", Prefix: "/webhooks/" + testApp + "/" + token, Status: 404, Code: 10015, Times: 1})
	text := "You can't answer this question: it asks discord:" + kevin.ID + "."
	h.publishEvent(bridge.Event{Type: bridge.EventRefused, Tenant: at.Tenant, JobID: at.JobID, QuestionID: at.QuestionID,
		TaskVersion: at.TaskVersion, To: at.By, Reason: bridge.RefusedForbidden, Text: text, AttemptID: at.AttemptID,
		ReplyTo: at.ReplyTo, At: time.Now()})
	tries := h.fake.followups(t, token, 2)
	if body := tries[1].JSON(t); body["content"] != text {
		t.Fatalf("second try = %s", tries[1].Body)
	}
}

// TestSettlingACardInAnArchivedThread checks a card in the job's thread,
// archived by Discord after a week without a message, is still settled:
// the bot reopens the thread and edits the card.
func TestSettlingACardInAnArchivedThread(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.publishEvent(asked(colorQuestion()))
	thread := h.posted(channelA, 1)["id"].(string)
	q2 := colorQuestion()
	q2.QuestionID, q2.Question = "q-2", "And the font?"
	h.publishEvent(asked(q2))
	second := h.posted(thread, 1)
	h.fake.archive(thread)
	h.publishEvent(bridge.Event{Type: bridge.EventAnswered, Tenant: "acme", JobID: "job-1", QuestionID: "q-2", TaskVersion: 3,
		By: "discord:" + kevin.ID, ByName: "kevin", Via: "discord", Answer: json.RawMessage(`"blue"`), AnswerText: "blue", Text: "The answer: blue"})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		m := h.fake.message(second["id"].(string))
		if n := len(components(m)); n != 0 {
			return fmt.Errorf("the card in the archived thread still has %d components", n)
		}
		return nil
	})
	reopen := h.fake.requests("PATCH", "/channels/"+thread)
	var bodies []string
	for _, r := range reopen {
		if !strings.Contains(r.Path, "/messages/") {
			bodies = append(bodies, string(r.Body))
		}
	}
	if len(bodies) != 1 || !strings.Contains(bodies[0], `"archived":false`) {
		t.Fatalf("thread edits %v, want one reopening it", bodies)
	}
}

// TestConsoleLinkCarriesMappedRoles checks the console link a member gets
// from "Open in console" carries the roles mapped from their Discord
// roles, so the console lets them do what a click would.
func TestConsoleLinkCarriesMappedRoles(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := typedQuestion()
	h.publishEvent(asked(q))
	msg := h.posted(channelA, 1)
	btn := findComponent(t, msg, "Open in console")["custom_id"].(string)
	boss := person{ID: "3000000000000000005", Name: "boss", Roles: []string{"99", adminRole}}
	if l := linkOf(t, h.signer, h.consoleClick(boss, btn)); l.Identity != "discord:"+boss.ID || !slices.Equal(l.Roles, []string{"admin"}) {
		t.Fatalf("the admin's link %+v, want the admin role", l)
	}
	if l := linkOf(t, h.signer, h.consoleClick(kevin, btn)); len(l.Roles) != 0 {
		t.Fatalf("kevin's link %+v, want no roles", l)
	}
}

// TestWhoMayAnswerKeepsWholeNames checks the card names whole mentions
// only: a mention cut at the field's limit shows as raw text.
func TestWhoMayAnswerKeepsWholeNames(t *testing.T) {
	t.Parallel()
	answerers := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("discord:%d", 3000000000000000000+i))
		}
		return out
	}
	cases := []struct {
		name      string
		answerers []string
		owner     string
		want      string // a suffix
		names     int
	}{
		{"none", nil, "", "operators", 0},
		{"a few", answerers(3), "slack:U0OWNER", "<@3000000000000000002>, slack:U0OWNER (owner), and operators", 3},
		{"forty", answerers(40), "discord:1234", "more, <@1234> (owner), and operators", -1},
		{"forty, no owner", answerers(40), "", "more, and operators", -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := &bridge.Question{Question: "Which colour?", Choices: []string{"red", "blue"}, Answerers: tc.answerers, Owner: tc.owner}
			got := fieldValue(embedMap(t, cardEmbed(&card{Question: q})), "Who may answer")
			if !strings.HasSuffix(got, tc.want) {
				t.Fatalf("who may answer = %q, want it to end %q", got, tc.want)
			}
			if n := utf8.RuneCountInString(got); n > 1024 {
				t.Fatalf("who may answer has %d characters, over Discord's 1024", n)
			}
			if strings.Count(got, "<@") != strings.Count(got, ">") {
				t.Fatalf("a mention is cut: %q", got)
			}
			if tc.names < 0 {
				listed := strings.Count(got, "<@30000")
				if !strings.Contains(got, fmt.Sprintf(", %d more, ", 40-listed)) || listed < 10 {
					t.Fatalf("%d listed, and %q", listed, got)
				}
			}
		})
	}
}

func embedMap(t *testing.T, e *discordgo.MessageEmbed) map[string]any {
	t.Helper()
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRefusalOnADeadTokenIsNotRetried checks a refusal whose interaction
// token is dead is not tried again, however fresh the refused event: an
// unknown webhook (10015) for an interaction made more than a few seconds
// ago is no refusal overtaking the bot's own response, and an interaction
// older than 15 minutes is tried once: its id's time is read against this
// host's clock, which is no proof that the token is dead. The
// interaction's age is in its id (a snowflake).
func TestRefusalOnADeadTokenIsNotRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		age   time.Duration
		tries int
	}{
		{"unknown webhook 11 s after the interaction", 11 * time.Second, 1},
		{"interaction older than its token", 16 * time.Minute, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := start(t, harnessOptions{tweak: func(b *Bot) { b.backoff = func(uint64) time.Duration { return 10 * time.Millisecond } }})
			id := snowflakeAt(time.Now().Add(-tc.age))
			token := "itoken-" + id
			h.fake.failOn(failRule{Method: "POST", Prefix: "/webhooks/" + testApp + "/" + token, Status: 404, Code: 10015, Times: -1})
			// The runtime decided just now (it was away, or the answers
			// stream was read late): the event is fresh, the token is not.
			h.publishEvent(bridge.Event{Type: bridge.EventRefused, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
				To: "discord:" + stranger.ID, Reason: bridge.RefusedForbidden, Text: "You can't answer this question: it asks someone else.",
				AttemptID: "discord-" + id, At: time.Now(),
				ReplyTo: map[string]string{replyPlatform: bridge.PlatformDiscord, replyAppID: testApp, replyToken: token, replyChannel: channelA}})
			// Handled once the bot has recorded the refusal as told (or as
			// not to be told).
			testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
				if done, err := h.bot.wasSeen(h.ctx, seenKey("refused", "discord-"+id)); err != nil || !done {
					return fmt.Errorf("refusal not handled yet (%v); %d tries", err, len(h.fake.requests("POST", "/webhooks/")))
				}
				return nil
			})
			if n := len(h.fake.requests("POST", "/webhooks/")); n != tc.tries {
				t.Fatalf("%d follow-up tries on a dead token, want %d", n, tc.tries)
			}
		})
	}
}

// TestRefusalWithAnOldLookingInteractionIdIsTold checks a refusal is
// told on its token whatever time the interaction id seems to carry: an id
// from another clock (a host clock running ahead of Discord's, a test's
// fixed ids such as 1400000000000000001) is no proof that the token is
// dead. Only Discord's "unknown webhook" ends the try.
func TestRefusalWithAnOldLookingInteractionIdIsTold(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{tweak: func(b *Bot) { b.backoff = func(uint64) time.Duration { return 10 * time.Millisecond } }})
	for _, id := range []string{"1400000000000000001", "42"} {
		token := "itoken-" + id
		h.publishEvent(bridge.Event{Type: bridge.EventRefused, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
			To: "discord:" + stranger.ID, Reason: bridge.RefusedForbidden, Text: "You can't answer this question: it asks someone else.",
			AttemptID: "discord-" + id, At: time.Now(),
			ReplyTo: map[string]string{replyPlatform: bridge.PlatformDiscord, replyAppID: testApp, replyToken: token, replyChannel: channelA}})
		testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
			for _, r := range h.fake.requests("POST", "/webhooks/"+testApp+"/"+token) {
				if strings.Contains(string(r.Body), "it asks someone else") {
					return nil
				}
			}
			return fmt.Errorf("interaction %s: no follow-up told the refusal", id)
		})
	}
}

// TestRefusalAfterA5xxIsToldNotLost checks a refusal whose follow-up gets
// Discord's 502 (after discordgo's own retry too) is tried again later and
// reaches the clicker. Discord's follow-ups take no nonce, so a 5xx after
// Discord stored the message cannot be told from one before: a rare
// duplicate private notice is preferred to a clicker never told why their
// answer was not taken (docs/discord.md).
func TestRefusalAfterA5xxIsToldNotLost(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{tweak: func(b *Bot) { b.backoff = func(uint64) time.Duration { return 10 * time.Millisecond } }})
	h.publishEvent(asked(colorQuestion()))
	msg := h.posted(channelA, 1)
	h.interact(h.click(stranger, findComponent(t, msg, "red")["custom_id"].(string)))
	at := h.waitAttempts(1)[0]
	token := at.ReplyTo["token"]
	h.fake.failOn(failRule{Method: "POST", Prefix: "/webhooks/" + testApp + "/" + token, Status: 502, Times: 2})
	text := "You can't answer this question: it asks discord:" + kevin.ID + "."
	h.refuse(at, bridge.RefusedForbidden, text)
	tries := h.fake.followups(t, token, 3) // 502, discordgo's retry: 502, the event's retry
	if body := tries[2].JSON(t); body["content"] != text || body["flags"] != float64(64) {
		t.Fatalf("last try = %s", tries[2].Body)
	}
	h.markerEvent()
	if n := len(h.fake.requests("POST", "/webhooks/")); n != 3 {
		t.Fatalf("%d follow-up tries, want 3 (told once it got through)", n)
	}
}

// TestConsoleLinkTooLongForAButton: with a long ASK_PUBLIC_URL and long
// ids the signed link is longer than the 512 characters Discord takes in
// a link button. The clicker and a reminder's reader still get it, in
// the text, instead of being told the console is not set up.
func TestConsoleLinkTooLongForAButton(t *testing.T) {
	t.Parallel()
	label := strings.Repeat("a", 60)
	long := console.Signer{PublicURL: "https://" + strings.Join([]string{label, label, label, label}, ".") + ".example.com",
		Secret: []byte("console-secret-0123456789")}
	h := start(t, harnessOptions{mutate: func(o *Options) { o.Console = long }})
	h.signer = long
	q := typedQuestion()
	q.JobID, q.QuestionID = "job-"+strings.Repeat("j", 60), "q-"+strings.Repeat("q", 62)
	ev := asked(q)
	h.publishEvent(ev)
	msg := h.posted(channelA, 1)
	assertNoLinkOnCard(t, h.signer, msg)

	resp := h.interact(h.click(ana, findComponent(t, msg, "Open in console")["custom_id"].(string)))
	data, _ := resp["data"].(map[string]any)
	if resp["type"] != float64(4) || data == nil || data["flags"] != float64(64) {
		t.Fatalf("console click = %v, want an ephemeral message", resp)
	}
	for _, c := range components(data) {
		if u, _ := c["url"].(string); len(u) > 512 {
			t.Fatalf("a button's url has %d characters; Discord takes 512", len(u))
		}
	}
	content, _ := data["content"].(string)
	const intro = "Here is your personal link to this question (do not share it): <"
	if !strings.HasPrefix(content, intro) || !strings.HasSuffix(content, ">") {
		t.Fatalf("console click says %q, want the link in the text", content)
	}
	link := strings.TrimSuffix(strings.TrimPrefix(content, intro), ">")
	if len(link) <= 512 {
		t.Fatalf("the link has %d characters: the test needs one over 512", len(link))
	}
	if l := linkOf(t, h.signer, link); l.Identity != "discord:"+ana.ID || l.JobID != q.JobID || l.QuestionID != q.QuestionID {
		t.Fatalf("link grants %+v", l)
	}

	// A reminder DM carries it in a field of its embed.
	h.publishEvent(bridge.Event{Type: bridge.EventReminded, EventID: "ob-rem-long", Tenant: "acme", JobID: q.JobID, QuestionID: q.QuestionID,
		TaskVersion: 1, Step: bridge.TargetAnswerers, Targets: []string{"discord:" + kevin.ID}, Question: &q, AskedAt: ev.AskedAt, Deadline: ev.Deadline})
	var dm map[string]any
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		reqs := h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages")
		if len(reqs) != 1 {
			return fmt.Errorf("%d DMs to kevin", len(reqs))
		}
		dm = reqs[0].JSON(t)
		return nil
	})
	for _, c := range components(dm) {
		if u, _ := c["url"].(string); len(u) > 512 || strings.Contains(u, "/console/") {
			t.Fatalf("the DM has a button to %q", u)
		}
	}
	e := dm["embeds"].([]any)[0].(map[string]any)
	got := fieldValue(e, "Open in console")
	if l := linkOf(t, h.signer, got); l.Identity != "discord:"+kevin.ID || l.QuestionID != q.QuestionID {
		t.Fatalf("the DM's console link grants %+v", l)
	}
}

// TestPaddedChoicesReadApartOnButtons checks choices whose words fit a
// button but which carry spaces around them are labelled by their words:
// cut with the spaces, two such choices read the same.
func TestPaddedChoicesReadApartOnButtons(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := colorQuestion()
	stem := strings.Repeat("x", 78)
	q.Choices = []string{"   " + stem + "A", "   " + stem + "B"}
	if err := bridge.ValidateQuestion(&q); err != nil {
		t.Fatal(err)
	}
	h.publishEvent(asked(q))
	msg := h.posted(channelA, 1)
	var labels []string
	for _, c := range components(msg) {
		if c["type"] == float64(2) && c["label"] != "Decline" && c["label"] != "Open in console" &&
			c["label"] != "Ask someone else" && c["label"] != "Remind me later" {
			labels = append(labels, c["label"].(string))
		}
	}
	if want := []string{stem + "A", stem + "B"}; !slices.Equal(labels, want) {
		t.Fatalf("button labels %q, want %q", labels, want)
	}
}

// TestSettledConsoleCardSaysNoMoreToClick checks a typed-fields card, once
// settled and its Open in console button gone, no longer tells readers to
// click it, and still lists the fields asked for.
func TestSettledConsoleCardSaysNoMoreToClick(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := colorQuestion()
	q.Choices = nil
	q.Fields = []bridge.Field{{Name: "copies", Kind: "number", Integer: true}}
	h.publishEvent(asked(q))
	msg := h.posted(channelA, 1)
	if got := fieldValue(embedOf(t, msg), "Answer in the askbridge console"); !strings.Contains(got, "Click **Open in console**") {
		t.Fatalf("waiting card's console field %q", got)
	}
	h.publishEvent(bridge.Event{Type: bridge.EventAnswered, Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID,
		TaskVersion: q.TaskVersion, By: "discord:" + kevin.ID, ByName: "kevin", Via: "console",
		Answer: []byte(`{"copies":2}`), AnswerText: `{"copies":2}`, At: time.Now().UTC()})
	id := msg["id"].(string)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if len(components(h.fake.message(id))) != 0 {
			return errors.New("card not settled yet")
		}
		return nil
	})
	e := embedOf(t, h.fake.message(id))
	if got := fieldValue(e, "Answer in the askbridge console"); got != "" {
		t.Fatalf("the settled card still has %q", got)
	}
	if got := fieldValue(e, "Asked in the askbridge console"); got != "• copies (number)" {
		t.Fatalf("the settled card's fields: %q", got)
	}
}
