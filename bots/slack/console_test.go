package slack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// consoleButton returns "block_id|action_id" of the message's one "Open in
// console" button ("" for none); it fails the test if the button is a URL
// button or appears twice.
func consoleButton(c apiCall) string {
	found := ""
	for _, b := range blocksOf(c) {
		var els []any
		if e, ok := b["elements"].([]any); ok && b["type"] == "actions" {
			els = e
		}
		if a, ok := b["accessory"]; ok {
			els = append(els, a)
		}
		for _, e := range els {
			el, _ := e.(map[string]any)
			txt, _ := el["text"].(map[string]any)
			if el["type"] != "button" || txt["text"] != "Open in console" {
				continue
			}
			if _, isURL := el["url"]; isURL || found != "" {
				return "bad: URL button or two buttons"
			}
			found = fmt.Sprint(b["block_id"]) + "|" + fmt.Sprint(el["action_id"])
		}
	}
	return found
}

// noChannelLinks fails the test when any message posted or updated in a
// channel carries a console link or the old "slack:channel" identity.
func noChannelLinks(t *testing.T, fake *fakeSlack) {
	t.Helper()
	for _, m := range append(fake.Calls("chat.postMessage"), fake.Calls("chat.update")...) {
		if strings.HasPrefix(m.Str("channel"), "D") {
			continue // a DM reaches one person; its links are theirs
		}
		for _, bad := range []string{"/console/", "slack:channel", "sig=", "as="} {
			if s := m.Str("blocks") + m.Str("text"); strings.Contains(s, bad) {
				t.Fatalf("%s in %s carries %q: %s", m.Method, m.Str("channel"), bad, s)
			}
		}
		if strings.Contains(string(m.Body), "slack%3Achannel") {
			t.Fatalf("%s carries slack:channel: %s", m.Method, m.Body)
		}
	}
}

var consoleLinkRE = regexp.MustCompile(`<(https://ask\.example\.com/console/[^|>]*)\|([^>]*)>`)

// consoleLink reads the one console link in an ephemeral text back into
// the Link it claims to be, with its signature.
func consoleLink(t *testing.T, text string) (console.Link, string) {
	t.Helper()
	ms := consoleLinkRE.FindAllStringSubmatch(text, -1)
	if len(ms) != 1 {
		t.Fatalf("want one console link in %q", text)
	}
	u, err := url.Parse(ms[0][1])
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	exp, err := strconv.ParseInt(q.Get("exp"), 10, 64)
	if err != nil {
		t.Fatalf("exp in %s: %v", u, err)
	}
	l := console.Link{Identity: q.Get("as"), Expires: time.Unix(exp, 0)}
	parts := strings.Split(strings.TrimPrefix(u.Path, "/console/"), "/")
	switch {
	case len(parts) == 4 && parts[0] == "q":
		l.Scope, l.Tenant, l.JobID, l.QuestionID = console.ScopeQuestion, parts[1], parts[2], parts[3]
	case len(parts) == 3 && parts[0] == "job":
		l.Scope, l.Tenant, l.JobID = console.ScopeJob, parts[1], parts[2]
	default:
		t.Fatalf("console link to %s", u.Path)
	}
	return l, q.Get("sig")
}

// ephemeral waits for the n-th (from 1) ephemeral reply through a
// response_url and returns its text.
func (h *harness) ephemeral(t *testing.T, n int) string {
	t.Helper()
	var text string
	testenv.CheckFor(t, wait, tick, func() error {
		rs := h.fake.Calls("response_url")
		if len(rs) < n {
			return fmt.Errorf("%d response_url posts, want %d", len(rs), n)
		}
		r := rs[n-1]
		if r.JSON["response_type"] != "ephemeral" || r.JSON["replace_original"] != false || r.JSON["unfurl_links"] != false {
			return fmt.Errorf("response_url post is not a new ephemeral message without unfurling: %s", r.Body)
		}
		text, _ = r.JSON["text"].(string)
		return nil
	})
	return text
}

// checkLink verifies text's console link with the adapter's signer: for
// identity, in scope, on the question (or job), valid for about 7 days.
func checkLink(t *testing.T, signer console.Signer, text, identity, scope, job, question string) (console.Link, string) {
	t.Helper()
	l, sig := consoleLink(t, text)
	if err := signer.Verify(l, sig, time.Now()); err != nil {
		t.Fatalf("link in %q does not verify: %v", text, err)
	}
	if l.Identity != identity || l.Scope != scope || l.Tenant != "acme" || l.JobID != job || l.QuestionID != question {
		t.Fatalf("link %+v, want %s %s acme/%s/%s", l, identity, scope, job, question)
	}
	// Signed after the tests began and before now (order, not how long ago).
	if earliest, latest := began.Add(console.DefaultLinkTTL).Truncate(time.Second), time.Now().Add(console.DefaultLinkTTL); l.Expires.Before(earliest) || l.Expires.After(latest) {
		t.Fatalf("link expires %v, want %v after it was signed (between %v and %v)", l.Expires, console.DefaultLinkTTL, earliest, latest)
	}
	// The same signature for anyone else, or the old channel identity, is forged.
	for _, other := range []string{"slack:channel", "slack:U0OTHER"} {
		o := l
		o.Identity = other
		if err := signer.Verify(o, sig, time.Now()); err != console.ErrLinkForged {
			t.Fatalf("link re-addressed to %s: %v", other, err)
		}
	}
	return l, sig
}

func TestConsoleButtonMintsALinkForTheClicker(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	attempts := testenv.Published(t, n.Conn, bridge.PrefixAnswer+".>")
	q := question("job-cb", "q-cb")
	q.Question = strings.Repeat("A long question & <details>. ", 200) // cut on the card
	publishEvent(t, n, askedEvent(q))
	card := h.posted(t, "q-cb")
	d := deliveredTS(t, n, deliveries, "q-cb")
	posts := fake.Calls("chat.postMessage")
	parent := posts[0]
	if parent.Str("thread_ts") != "" || d.Message == nil || d.Message.Thread == "" {
		t.Fatalf("no thread parent: %v", parent.Form)
	}
	if got := consoleButton(card); got != "ask.acme.job-cb.q-cb.1|console" {
		t.Fatalf("card's console button: %q", got)
	}
	if got := consoleButton(parent); got != "ask.acme.job-cb.q-cb.1|console.job" {
		t.Fatalf("thread parent's console button: %q", got)
	}
	if s := card.Str("blocks"); !strings.Contains(s, "_(cut short: *Open in console* shows the whole text)_") {
		t.Fatalf("cut text does not point to the console button: %s", s)
	}
	noChannelLinks(t, fake)
	answers := attempts.Count(t)

	signer := h.bot.o.Console
	// Kevin clicks the card's button: at once, an ephemeral link of his own.
	resp, body := h.interact(fake.click("U0KEV", "kevin", "trig-c1", d.Message.Channel, d.Message.MessageID, "ask.acme.job-cb.q-cb.1", "console", "console", ""))
	if resp.StatusCode != http.StatusOK || body != "" {
		t.Fatalf("console click: HTTP %d %q", resp.StatusCode, body)
	}
	text := h.ephemeral(t, 1)
	if !strings.Contains(text, "|Open this question in the askbridge console>") || !strings.Contains(text, "for you alone") {
		t.Fatalf("ephemeral reply: %q", text)
	}
	kevin, kevinSig := checkLink(t, signer, text, "slack:U0KEV", console.ScopeQuestion, "job-cb", "q-cb")
	// Its signature does not open another question or the job.
	other := kevin
	other.QuestionID = "q-other"
	if err := signer.Verify(other, kevinSig, time.Now()); err != console.ErrLinkForged {
		t.Fatalf("question link opens another question: %v", err)
	}

	// Ana clicks the same button: her own identity, not Kevin's.
	h.interact(fake.click("U0ANA", "ana", "trig-c2", d.Message.Channel, d.Message.MessageID, "ask.acme.job-cb.q-cb.1", "console", "console", ""))
	checkLink(t, signer, h.ephemeral(t, 2), "slack:U0ANA", console.ScopeQuestion, "job-cb", "q-cb")

	// The thread parent's button: a job link for the clicker.
	h.interact(fake.click("U0ANA", "ana", "trig-c3", d.Message.Channel, d.Message.Thread, "ask.acme.job-cb.q-cb.1", "console.job", "console.job", ""))
	text = h.ephemeral(t, 3)
	if !strings.Contains(text, "|Open job `job-cb` in the askbridge console>") {
		t.Fatalf("ephemeral job reply: %q", text)
	}
	job, jobSig := checkLink(t, signer, text, "slack:U0ANA", console.ScopeJob, "job-cb", "")
	asQuestion := job
	asQuestion.Scope, asQuestion.QuestionID = console.ScopeQuestion, "q-cb"
	if err := signer.Verify(asQuestion, jobSig, time.Now()); err != console.ErrLinkForged {
		t.Fatalf("job link opens a question: %v", err)
	}

	// Without a usable response_url the reply goes through chat.postEphemeral,
	// to the clicker in the card's thread.
	var p map[string]any
	raw, _ := url.QueryUnescape(strings.TrimPrefix(fake.click("U0KEV", "kevin", "trig-c4", d.Message.Channel, d.Message.MessageID, "ask.acme.job-cb.q-cb.1", "console", "console", ""), "payload="))
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatal(err)
	}
	p["response_url"] = "https://attacker.example.com/hook"
	p["container"].(map[string]any)["thread_ts"] = d.Message.Thread // the card is a reply in the job's thread
	h.interact(payload(p))
	var eph apiCall
	testenv.CheckFor(t, wait, tick, func() error {
		e := fake.Calls("chat.postEphemeral")
		if len(e) != 1 {
			return fmt.Errorf("%d chat.postEphemeral calls", len(e))
		}
		eph = e[0]
		return nil
	})
	if eph.Str("user") != "U0KEV" || eph.Str("channel") != d.Message.Channel || eph.Str("thread_ts") != d.Message.Thread || eph.Str("unfurl_links") != "false" {
		t.Fatalf("chat.postEphemeral: %v", eph.Form)
	}
	checkLink(t, signer, eph.Str("text"), "slack:U0KEV", console.ScopeQuestion, "job-cb", "q-cb")
	if got := len(fake.Calls("response_url")); got != 3 {
		t.Fatalf("%d response_url posts, want 3 (none to a foreign URL)", got)
	}

	// A console click is not an answer.
	if got := attempts.Count(t); got != answers {
		t.Fatalf("console clicks published %d answer attempts", got-answers)
	}

	// Settled: the card keeps the button (outside any actions block), and
	// still carries no link.
	publishEvent(t, n, bridge.Event{Type: bridge.EventAnswered, Tenant: "acme", JobID: "job-cb", QuestionID: "q-cb", TaskVersion: 1,
		By: "slack:U0KEV", ByName: "kevin", AnswerText: "blue", Answer: json.RawMessage(`"blue"`)})
	upd := h.updated(t, d.Message.MessageID, "Answered by @kevin: blue")
	if got := consoleButton(upd); got != "ask.acme.job-cb.q-cb.1|console" {
		t.Fatalf("settled card's console button: %q", got)
	}
	noChannelLinks(t, fake)
}

func TestNoConsoleButtonWithoutTheConsole(t *testing.T) {
	t.Parallel()
	for name, signer := range map[string]console.Signer{
		"no public URL": {Secret: []byte("console-key")},
		"no secret":     {PublicURL: "https://ask.example.com"},
	} {
		t.Run(name, func(t *testing.T) {
			n := plainNATS(t)
			fake := newFakeSlack(t)
			h := startBot(t, n, fake, func(o *Options) { o.Console = signer })
			deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
			q := question("job-nc", "q-nc")
			q.Question = strings.Repeat("A long question. ", 400)
			publishEvent(t, n, askedEvent(q))
			card := h.posted(t, "q-nc")
			d := deliveredTS(t, n, deliveries, "q-nc")
			parent := fake.Calls("chat.postMessage")[0]
			if consoleButton(card) != "" || consoleButton(parent) != "" {
				t.Fatalf("console buttons without a console: %q %q", consoleButton(card), consoleButton(parent))
			}
			if s := card.Str("blocks"); !strings.Contains(s, "… _(cut short)_") || strings.Contains(s, "Open in console") {
				t.Fatalf("cut text without a console: %s", s)
			}
			noChannelLinks(t, fake)
			// A click on an old card's button says so, and mints nothing.
			h.interact(fake.click("U0KEV", "kevin", "trig-nc", d.Message.Channel, d.Message.MessageID, "ask.acme.job-nc.q-nc.1", "console", "console", ""))
			if text := h.ephemeral(t, 1); !strings.Contains(text, "console is not set up") || strings.Contains(text, "http") {
				t.Fatalf("console click without a console: %q", text)
			}
		})
	}
}

func TestConsoleButtonOverSocketMode(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake, func(o *Options) { o.AppToken = "xapp-1-test"; o.SigningSecret = "" })
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	q := question("job-sc", "q-sc")
	publishEvent(t, n, askedEvent(q))
	card := h.posted(t, "q-sc")
	d := deliveredTS(t, n, deliveries, "q-sc")
	if got := consoleButton(card); got != "ask.acme.job-sc.q-sc.1|console" {
		t.Fatalf("card's console button: %q", got)
	}
	raw, _ := url.QueryUnescape(strings.TrimPrefix(fake.click("U0KEV", "kevin", "trig-s1", d.Message.Channel, d.Message.MessageID, "ask.acme.job-sc.q-sc.1", "console", "console", ""), "payload="))
	var p any
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatal(err)
	}
	env, _ := json.Marshal(map[string]any{"envelope_id": "env-c1", "type": "interactive", "payload": p, "accepts_response_payload": true})
	fake.wsSend <- env
	testenv.CheckFor(t, wait, tick, func() error {
		for _, c := range fake.Calls("ws_ack") {
			if c.JSON["envelope_id"] == "env-c1" {
				return nil
			}
		}
		return fmt.Errorf("no ack for env-c1")
	})
	checkLink(t, h.bot.o.Console, h.ephemeral(t, 1), "slack:U0KEV", console.ScopeQuestion, "job-sc", "q-sc")
	noChannelLinks(t, fake)
}
