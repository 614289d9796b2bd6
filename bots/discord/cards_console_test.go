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

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

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
