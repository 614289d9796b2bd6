package discord

// End-to-end: the real runtime (internal/testenv: embedded NATS, SQLite
// store, runtime), the bot, the fake Discord API, and signed interactions.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

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
