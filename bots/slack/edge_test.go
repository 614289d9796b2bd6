package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge/bots/apimetrics"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// plainNATS is an embedded NATS with askbridge's streams and no runtime:
// the test plays the runtime by publishing its events.
func plainNATS(t *testing.T) *bridge.NATS {
	t.Helper()
	n, err := bridge.ConnectNATS(context.Background(), bridge.NATSOptions{Listen: "127.0.0.1:0", StoreDir: filepath.Join(t.TempDir(), "nats")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

func askedEvent(q *bridge.Question) bridge.Event {
	now := time.Now().UTC()
	return bridge.Event{Type: bridge.EventAsked, Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID,
		TaskVersion: q.TaskVersion, Question: q, AskedAt: now, Deadline: now.Add(q.TimeoutDuration())}
}

func TestRequestsThatAreNotSlacksAreRefused(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	h := startBot(t, n, newFakeSlack(t))
	attempts := testenv.Published(t, n.Conn, bridge.PrefixAnswer+".>")
	u := h.web.URL + "/slack/interactions"
	good := h.fake.click("U0KEV", "kevin", "trig-x", "C0123", "1700000000.000001", "ask.acme.job-1.q-1.1", "approve", "approve", "")

	send := func(body string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = fmt.Fprint(&b, resp.Status)
		return resp.StatusCode, b.String()
	}
	now := strconv.FormatInt(time.Now().Unix(), 10)
	old := strconv.FormatInt(time.Now().Add(-10*time.Minute).Unix(), 10)
	cases := []struct {
		name string
		body string
		hdr  map[string]string
		want int
	}{
		{"no signature", good, nil, 401},
		{"bad signature", good, map[string]string{"X-Slack-Request-Timestamp": now, "X-Slack-Signature": sign("wrong-secret", now, good)}, 401},
		{"tampered body", good + "x", map[string]string{"X-Slack-Request-Timestamp": now, "X-Slack-Signature": sign(testSecret, now, good)}, 401},
		{"10 minutes old", good, map[string]string{"X-Slack-Request-Timestamp": old, "X-Slack-Signature": sign(testSecret, old, good)}, 401},
		{"2 MiB body", "payload=" + strings.Repeat("a", 2<<20), map[string]string{"X-Slack-Request-Timestamp": now}, 413},
		{"not JSON", "payload=%7Bnot-json", map[string]string{"X-Slack-Request-Timestamp": now, "X-Slack-Signature": sign(testSecret, now, "payload=%7Bnot-json")}, 400},
		{"no payload", "x=1", map[string]string{"X-Slack-Request-Timestamp": now, "X-Slack-Signature": sign(testSecret, now, "x=1")}, 400},
		{"bad escape", "payload=%zz", map[string]string{"X-Slack-Request-Timestamp": now, "X-Slack-Signature": sign(testSecret, now, "payload=%zz")}, 400},
		{"a good click, not sent as a form", good, map[string]string{"X-Slack-Request-Timestamp": now, "X-Slack-Signature": sign(testSecret, now, good),
			"Content-Type": "text/plain"}, 400},
	}
	for _, c := range cases {
		if got, status := send(c.body, c.hdr); got != c.want {
			t.Errorf("%s: %s, want %d", c.name, status, c.want)
		}
	}
	// Slash commands are guarded the same way.
	req, _ := http.NewRequest(http.MethodPost, h.web.URL+"/slack/commands", strings.NewReader("text=list&user_id=U1"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("unsigned command: %d", resp.StatusCode)
	}
	if n := attempts.Count(t); n != 0 {
		t.Fatalf("refused requests published %d attempts", n)
	}
	// Still healthy: a properly signed click goes through.
	if resp, body := h.interact(good); resp.StatusCode != 200 {
		t.Fatalf("signed click after the bad ones: %d %s", resp.StatusCode, body)
	}
	if n := attempts.Count(t); n != 1 {
		t.Fatalf("signed click published %d attempts", n)
	}
	hr, err := http.Get(h.web.URL + "/healthz")
	if err != nil || hr.StatusCode != 200 {
		t.Fatalf("healthz after bad input: %v %v", hr, err)
	}
	hr.Body.Close()
}

// TestRateLimitHonoursRetryAfter: a 429 is retried after its Retry-After,
// and after a second when it names none (Slack always sends the header;
// a proxy in front of it may not), never reported as a failure.
func TestRateLimitHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		header map[string]string
	}{
		{"Retry-After: 1", map[string]string{"Retry-After": "1"}},
		{"no Retry-After", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := plainNATS(t)
			fake := newFakeSlack(t)
			fake.fail("chat.postMessage", 429, tc.header, `{"ok":false,"error":"ratelimited"}`)
			reg := prometheus.NewRegistry()
			startBot(t, n, fake, func(o *Options) { o.Registerer = reg })
			deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
			q := question("job-rl", "q-rl")
			publishEvent(t, n, askedEvent(q))
			d := deliveredTS(t, n, deliveries, "q-rl")
			if !d.OK {
				t.Fatalf("not delivered after a 429: %+v", d.Failure)
			}
			posts := fake.Calls("chat.postMessage")
			if len(posts) < 2 {
				t.Fatalf("%d posts", len(posts))
			}
			if gap := posts[1].At.Sub(posts[0].At); gap < time.Second {
				t.Fatalf("retried %v after the 429, want at least 1s", gap)
			}
			// Slack did not post on a 429: nothing to look for before the retry.
			if got := len(fake.Calls("conversations.history")) + len(fake.Calls("conversations.replies")); got != 0 {
				t.Fatalf("%d lookups after a 429, want none", got)
			}
			// /metrics: every post succeeded in the end (the thread parent and the
			// card), one of them after one rate-limited try.
			calls := float64(len(fake.Calls("chat.postMessage")) - 1)
			for _, c := range []struct {
				name   string
				labels map[string]string
				want   float64
			}{
				{"askbridge_platform_api_retries_total", map[string]string{"platform": "slack", "op": "chat.postMessage", "reason": "rate_limited"}, 1},
				{"askbridge_platform_api_calls_total", map[string]string{"platform": "slack", "op": "chat.postMessage", "result": "ok"}, calls},
				{"askbridge_platform_api_call_seconds", map[string]string{"platform": "slack", "op": "chat.postMessage"}, calls},
			} {
				if got, ok := apimetrics.Value(reg, c.name, c.labels); !ok || got != c.want {
					t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
				}
			}
			if n, _ := apimetrics.Value(reg, "askbridge_platform_api_calls_total", map[string]string{"platform": "slack", "op": "chat.postMessage", "result": "error"}); n != 0 {
				t.Error("a post that succeeded on its second try was counted as an error")
			}
		})
	}
}

func TestBoundedRetriesThenSourceUnreliable(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	for range 40 {
		fake.fail("chat.postMessage", 503, nil, "upstream down")
	}
	h := startBot(t, n, fake)
	h.bot.retry.Tries = 2
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	q := question("job-503", "q-503")
	q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0999", ThreadTS: "1600000000.000001"}}
	ev := askedEvent(q)
	// Last delivery: the failure is reported instead of retried forever.
	if err := h.bot.handleEvent(context.Background(), &ev, engine.Delivery{Attempt: 1, Last: true}); err != nil {
		t.Fatal(err)
	}
	d := deliveredTS(t, n, deliveries, "q-503")
	if d.OK || d.Failure == nil || d.Failure.Code != bridge.CodeSourceUnreliable || !d.Failure.Retryable {
		t.Fatalf("delivery: %+v %+v", d, d.Failure)
	}
	if got := len(fake.Calls("chat.postMessage")); got != 2 {
		t.Fatalf("%d tries, want the bounded 2", got)
	}
}

func TestPermanentErrorsAreTypedDeliveryFailures(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"channel_not_found": bridge.CodeReferenceUnresolved,
		"not_in_channel":    bridge.CodeAccessDenied,
		"missing_scope":     bridge.CodeCapabilityUnavailable,
		"invalid_auth":      bridge.CodeCapabilityUnavailable,
		"account_inactive":  bridge.CodeCapabilityUnavailable,
	}
	n := plainNATS(t)
	fake := newFakeSlack(t)
	startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	i := 0
	for code, want := range cases {
		i++
		id := fmt.Sprintf("q-perm-%d", i)
		fake.fail("chat.postMessage", 200, nil, `{"ok":false,"error":"`+code+`"}`)
		q := question("job-perm-"+strconv.Itoa(i), id)
		q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0NOPE", ThreadTS: "1600000000.000001"}}
		publishEvent(t, n, askedEvent(q))
		d := deliveredTS(t, n, deliveries, id)
		if d.OK || d.Failure == nil || d.Failure.Code != want || d.Failure.Retryable || d.Failure.Dependency != "slack" ||
			d.Failure.Operation != "chat.postMessage" || !strings.Contains(d.Failure.OperatorMessage, code) {
			t.Errorf("%s: %+v", code, d.Failure)
		}
		if strings.Contains(d.Failure.OperatorMessage, "xoxb") {
			t.Errorf("%s: token in the failure", code)
		}
	}
}

// TestFailureDetails checks the failures that name more than Slack's code:
// the scope a missing_scope needs, a thread_ts Slack does not know, a
// route channel askbridge would not send to, and Slack's rate_limited
// answer taken as a rate limit to wait out, not a refusal.
func TestFailureDetails(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	cases := []struct {
		body, channel, code, capability, message string
		retryable                                bool
	}{
		{`{"ok":false,"error":"missing_scope","needed":"chat:write","provided":"commands,im:write"}`, "C0777", bridge.CodeCapabilityUnavailable, "slack:chat:write",
			"Slack refused chat.postMessage in channel C0777: missing_scope (the app needs the scope chat:write; its token has commands,im:write)", false},
		{`{"ok":false,"error":"invalid_thread_ts"}`, "C0777", bridge.CodeReferenceUnresolved, "",
			"Slack refused chat.postMessage in channel C0777: invalid_thread_ts", false},
		{"", "general", bridge.CodeReferenceUnresolved, "",
			`"general" is not a Slack channel id (such as C0123); askbridge did not send the message.`, false},
	}
	for i, c := range cases {
		id := fmt.Sprintf("q-detail-%d", i)
		if c.body != "" {
			fake.fail("chat.postMessage", 200, nil, c.body)
		}
		q := question("job-detail-"+strconv.Itoa(i), id)
		q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: c.channel, ThreadTS: "1600000000.000001"}}
		publishEvent(t, n, askedEvent(q))
		d := deliveredTS(t, n, deliveries, id)
		if d.OK || d.Failure == nil || d.Failure.Code != c.code || d.Failure.RequiredCapability != c.capability ||
			d.Failure.OperatorMessage != c.message || d.Failure.Retryable != c.retryable {
			t.Errorf("%s: %+v", id, d.Failure)
		}
	}
	// rate_limited in a 200: tried again, and shown.
	fake.fail("chat.postMessage", 200, nil, `{"ok":false,"error":"rate_limited"}`)
	q := question("job-detail-rl", "q-detail-rl")
	q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0777", ThreadTS: "1600000000.000001"}}
	publishEvent(t, n, askedEvent(q))
	if d := deliveredTS(t, n, deliveries, "q-detail-rl"); !d.OK {
		t.Errorf("after rate_limited: %+v %+v", d, d.Failure)
	}
}

func TestChannelNotFoundFailsTheJob(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	h.fake.fail("chat.postMessage", 200, nil, `{"ok":false,"error":"channel_not_found"}`)
	q := question("job-cnf", "q-cnf")
	q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0GONE", ThreadTS: "1600000000.000001"}}
	publishQuestion(t, env, q)
	out := awaitOutcome(t, env, q)
	if out.Outcome != bridge.OutcomeFailed || out.Failure == nil || out.Failure.Code != bridge.CodeReferenceUnresolved {
		t.Fatalf("resume: %+v failure %+v", out, out.Failure)
	}
}

// TestDMChannelOpenedOnce checks reminders to a person open their DM
// channel once: conversations.open is paced, and a reminder step to many
// people should not pay it again for each later step.
func TestDMChannelOpenedOnce(t *testing.T) {
	t.Parallel()
	_, h := e2e(t, runtime.Roles{})
	ctx := context.Background()
	for _, text := range []string{"first reminder", "second reminder"} {
		if err := h.bot.dm(ctx, "U0KEV", text); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(h.fake.Calls("conversations.open")); n != 1 {
		t.Fatalf("%d conversations.open calls for two DMs to one person, want 1", n)
	}
	var texts []string
	for _, c := range h.fake.Calls("chat.postMessage") {
		if c.Str("channel") == "D0KEV" {
			texts = append(texts, c.Str("text"))
		}
	}
	if !slices.Equal(texts, []string{"first reminder", "second reminder"}) {
		t.Fatalf("DMs %q", texts)
	}
}

func TestEscalationDMs(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{Admins: []string{"slack:U0ADM"}})
	q := question("job-esc", "q-esc")
	q.Timeout = "6s"
	events := env.Record(t, bridge.StreamEvents, bridge.EventSubject("acme", "job-esc"))
	publishQuestion(t, env, q)
	h.posted(t, "q-esc")
	// The ladder: answerers at ¼, owner at ½, admins at ¾, then the timeout.
	dmTo := func(ch string) (apiCall, error) {
		for _, c := range h.fake.Calls("chat.postMessage") {
			if c.Str("channel") == ch {
				return c, nil
			}
		}
		return apiCall{}, fmt.Errorf("no DM in %s", ch)
	}
	var kev, owner, adm apiCall
	testenv.CheckFor(t, wait, tick, func() error {
		var err error
		if kev, err = dmTo("D0KEV"); err != nil {
			return err
		}
		if owner, err = dmTo("D0OWNER"); err != nil {
			return err
		}
		adm, err = dmTo("D0ADM")
		return err
	})
	opened := map[string]bool{}
	for _, c := range h.fake.Calls("conversations.open") {
		opened[c.Str("users")] = true
	}
	if !opened["U0KEV"] || !opened["U0OWNER"] || !opened["U0ADM"] {
		t.Fatalf("conversations.open for %v", opened)
	}
	for name, c := range map[string]apiCall{"answerer": kev, "owner": owner, "admin": adm} {
		text := c.Str("text")
		if !strings.Contains(text, "Which colour should the report use?") || !strings.Contains(text, "https://acme.slack.com/archives/C0123/p") ||
			!strings.Contains(text, "Time left: 0:00:0") {
			t.Errorf("%s DM: %q", name, text)
		}
	}
	for name, c := range map[string]apiCall{"owner": owner, "admin": adm} {
		if !strings.Contains(c.Str("text"), "Asked of <@U0KEV> since <!date^") {
			t.Errorf("%s DM does not say who was asked since when: %q", name, c.Str("text"))
		}
	}
	if strings.Contains(kev.Str("text"), "Asked of") {
		t.Errorf("answerer DM carries the owner's details: %q", kev.Str("text"))
	}
	out := awaitOutcome(t, env, q)
	if out.Outcome != bridge.OutcomeTimedOut {
		t.Fatalf("resume: %+v", out)
	}
	h.updated(t, h.cardTS(t, q), "Nobody answered within 0:00:06")
	// One DM per person and step, even if the runtime's events come again.
	again := 0
	for _, ev := range events.Events() {
		if ev.Type == bridge.EventEscalated || ev.Type == bridge.EventReminded {
			if err := h.bot.handleEvent(context.Background(), &ev, engine.Delivery{Attempt: 2}); err != nil {
				t.Fatal(err)
			}
			again++
		}
	}
	if again != 3 {
		t.Fatalf("%d ladder events handled again (%s), want 3", again, events.EventTypes())
	}
	dms := 0
	for _, c := range h.fake.Calls("chat.postMessage") {
		if strings.HasPrefix(c.Str("channel"), "D") {
			dms++
		}
	}
	if dms != 3 {
		t.Fatalf("%d DMs after redelivery, want 3", dms)
	}
}

func TestAskCommand(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{Admins: []string{"slack:U0ADM"}, Readers: []string{"slack:U0READ"}})
	attempts := testenv.Published(t, env.NATS.Conn, bridge.AnswerSubject("acme", "job-cmd"))
	q1 := question("job-cmd", "q-c1")
	q2 := question("job-cmd", "q-c2")
	q3 := question("job-cmd", "q-c3")
	q4 := question("job-cmd", "q-c4")
	for _, q := range []*bridge.Question{q1, q2, q3, q4} {
		publishQuestion(t, env, q)
	}
	h.posted(t, "q-c4")
	reply := func(user, text string) string {
		t.Helper()
		resp, body := h.command(user, strings.ToLower(user), text, "trig-"+strconv.FormatInt(time.Now().UnixNano(), 10))
		var r commandReply
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &r) != nil || r.ResponseType != "ephemeral" {
			t.Fatalf("/ask %s: %d %s", text, resp.StatusCode, body)
		}
		return r.Text
	}
	if s := reply("U0KEV", "help"); !strings.Contains(s, "/ask list") || !strings.Contains(s, "/ask cancel") || !strings.Contains(s, "`<tenant>/<job_id>/<question_id>`") {
		t.Fatalf("help: %q", s)
	}
	if s := reply("U0KEV", "list"); !strings.Contains(s, "`job-cmd/q-c1`") || !strings.Contains(s, "Which colour") ||
		!strings.Contains(s, "https://ask.example.com/console/q/acme/job-cmd/q-c1?") {
		t.Fatalf("list for an answerer: %q", s)
	}
	// A reader learns that questions wait, not what they ask.
	if s := reply("U0READ", "list"); !strings.Contains(s, "`job-cmd/q-c1`") || strings.Contains(s, "Which colour") {
		t.Fatalf("list for a reader: %q", s)
	}
	if s := reply("U0KEV", "show q-c1"); !strings.Contains(s, "Which colour") || !strings.Contains(s, "Choices: red | blue") || !strings.Contains(s, "State: pending") {
		t.Fatalf("show: %q", s)
	}
	if s := reply("U0KEV", "show bad/id/x/y"); !strings.Contains(s, "is not a question id") {
		t.Fatalf("show with a bad id: %q", s)
	}
	if s := reply("U0KEV", "answer job-cmd/q-c1 purple"); !strings.Contains(s, "Not sent: answer: must be one of: red, blue") {
		t.Fatalf("invalid answer: %q", s)
	}
	if s := reply("U0KEV", "answer job-cmd/q-c1 blue"); !strings.Contains(s, "Sent your answer") {
		t.Fatalf("answer: %q", s)
	}
	if out := awaitOutcome(t, env, q1); out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: blue" || out.By != "slack:U0KEV" {
		t.Fatalf("answer resume: %+v", out)
	}
	if s := reply("U0KEV", "decline q-c2 ask Ana"); !strings.Contains(s, "Sent your decline") {
		t.Fatalf("decline: %q", s)
	}
	if out := awaitOutcome(t, env, q2); out.Outcome != bridge.OutcomeDeclined || out.Text != "slack:U0KEV (u0kev) declined to answer: ask Ana." {
		t.Fatalf("decline resume: %+v", out)
	}
	// A stranger's answer typed in /ask is refused privately, via the response_url.
	// A stranger may not even see the question: told so at once, nothing sent.
	if s := reply("U0BAD", "answer job-cmd/q-c4 red"); !strings.HasPrefix(s, "`job-cmd/q-c4`: ") || strings.Contains(s, "Which colour") || strings.Contains(s, "Sent") {
		t.Fatalf("stranger's answer: %q", s)
	}
	if n := attempts.Count(t); n != 2 {
		t.Fatalf("%d attempts, want the answer and the decline only", n)
	}
	// An operator may not cancel: the runtime's refusal reaches them privately.
	if s := reply("U0KEV", "cancel job-cmd/q-c3"); !strings.Contains(s, "Asked askbridge to cancel `job-cmd/q-c3`") {
		t.Fatalf("operator's cancel: %q", s)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, c := range h.fake.Calls("response_url") {
			if c.JSON["text"] == "You can't cancel questions: that needs the admin or owner role." {
				return nil
			}
		}
		return fmt.Errorf("no cancel refusal among %d response_url posts", len(h.fake.Calls("response_url")))
	})
	if s := reply("U0ADM", "cancel job-cmd/q-c3"); !strings.Contains(s, "Asked askbridge to cancel `job-cmd/q-c3`") {
		t.Fatalf("cancel: %q", s)
	}
	if out := awaitOutcome(t, env, q3); out.Outcome != bridge.OutcomeCanceled {
		t.Fatalf("cancel resume: %+v", out)
	}
	h.updated(t, h.cardTS(t, q3), "Cancelled: cancelled from Slack by slack:U0ADM")
	if s := reply("U0KEV", "frobnicate"); !strings.Contains(s, "I don't know `frobnicate`") {
		t.Fatalf("unknown subcommand: %q", s)
	}
}

// TestAskCommandTextIsUnescaped checks /ask reads the text as the person
// typed it: Slack sends & < > in a slash command as &amp; &lt; &gt;.
func TestAskCommandTextIsUnescaped(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	q1 := question("job-ent", "q-e1")
	q1.Choices = []string{"Black & white", "Colour"}
	q2 := question("job-ent2", "q-e2")
	q2.Choices = nil
	q3 := question("job-ent3", "q-e3")
	for _, q := range []*bridge.Question{q1, q2, q3} {
		publishQuestion(t, env, q)
		h.posted(t, q.QuestionID)
	}
	for i, c := range []struct{ text, want string }{
		{"answer job-ent/q-e1 Black &amp; white", "The answer: Black & white"},
		{"answer job-ent2/q-e2 R&amp;D &lt;ops&gt; &amp;lt;", "The answer: R&D <ops> &lt;"},
		{"decline job-ent3/q-e3 ask &lt;Ana&gt; &amp; Bo", "slack:U0KEV (u0kev) declined to answer: ask <Ana> & Bo."},
	} {
		resp, body := h.command("U0KEV", "u0kev", c.text, "trig-ent-"+strconv.Itoa(i))
		if resp.StatusCode != 200 || !strings.Contains(body, "Sent your") {
			t.Fatalf("/ask %s: %d %s", c.text, resp.StatusCode, body)
		}
		if out := awaitOutcome(t, env, []*bridge.Question{q1, q2, q3}[i]); out.Text != c.want {
			t.Errorf("/ask %s: the agent read %q, want %q", c.text, out.Text, c.want)
		}
	}
}

func TestRestartResyncsCardsAndNeverPostsTwice(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	q := question("job-rs", "q-rs")
	events := env.Record(t, bridge.StreamEvents, bridge.EventSubject("acme", "job-rs"))
	publishQuestion(t, env, q)
	h.posted(t, "q-rs")
	ts := h.cardTS(t, q)
	h.Stop()

	// While the adapter is down, the question is answered elsewhere (CLI).
	if err := env.Attempt(context.Background(), bridge.AnswerAttempt{Tenant: "acme", JobID: "job-rs", QuestionID: "q-rs",
		AttemptID: "cli-1", Action: bridge.ActionAnswer, Answer: json.RawMessage(`"red"`), By: "slack:U0KEV", ByName: "kevin", Via: "cli"}); err != nil {
		t.Fatal(err)
	}
	awaitOutcome(t, env, q)
	// The runtime's asked event is redelivered too (an outbox replay).
	var asked bridge.Event
	for _, ev := range events.Events() {
		if ev.Type == bridge.EventAsked {
			asked = ev
		}
	}
	if asked.Type == "" {
		t.Fatalf("no asked event recorded: %s", events.EventTypes())
	}
	publishEvent(t, env.NATS, asked)

	h2 := startBot(t, env.NATS, h.fake)
	h2.updated(t, ts, "Answered by @kevin: red")
	// A new question for the same job after the restart reuses the thread.
	q2 := question("job-rs", "q-rs2")
	publishQuestion(t, env, q2)
	c2 := h2.posted(t, "q-rs2")
	posts := h.fake.Calls("chat.postMessage")
	if len(posts) != 3 {
		t.Fatalf("%d posts after a restart, want parent + 2 cards", len(posts))
	}
	if c2.Str("thread_ts") != posts[0].Str("ts") && c2.Str("thread_ts") != posts[1].Str("thread_ts") {
		t.Fatalf("new thread after restart: %q", c2.Str("thread_ts"))
	}
}

func TestSocketMode(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{}, func(o *Options) { o.AppToken = "xapp-1-test"; o.SigningSecret = "" })
	q := question("job-sm", "q-sm")
	one := 1.0
	q.Choices = nil
	q.Fields = []bridge.Field{{Name: "copies", Kind: bridge.FieldNumber, Integer: true, Min: &one, Required: true}}
	qb := question("job-sm", "q-sm2")
	publishQuestion(t, env, q)
	publishQuestion(t, env, qb)
	cardB := h.posted(t, "q-sm2")
	h.posted(t, "q-sm")
	testenv.CheckFor(t, wait, tick, func() error {
		if len(h.fake.Calls("apps.connections.open")) == 0 {
			return fmt.Errorf("apps.connections.open not called")
		}
		return nil
	})
	if c := h.fake.Calls("apps.connections.open")[0]; c.Auth != "Bearer xapp-1-test" {
		t.Fatalf("apps.connections.open with %q", c.Auth)
	}
	// The HTTP endpoints are off without a signing secret.
	if resp, _ := h.interact("payload=%7B%7D"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("HTTP interactions without a signing secret: %d", resp.StatusCode)
	}
	send := func(envelope, typ, body string) {
		var p any
		_ = json.Unmarshal([]byte(body), &p)
		raw, _ := json.Marshal(map[string]any{"envelope_id": envelope, "type": typ, "payload": p, "accepts_response_payload": true})
		h.fake.wsSend <- raw
	}
	acked := func(envelope string) apiCall {
		var got apiCall
		testenv.CheckFor(t, wait, tick, func() error {
			for _, c := range h.fake.Calls("ws_ack") {
				if c.JSON["envelope_id"] == envelope {
					got = c
					return nil
				}
			}
			return fmt.Errorf("no ack for %s", envelope)
		})
		return got
	}
	unpayload := func(p string) string { s, _ := url.QueryUnescape(strings.TrimPrefix(p, "payload=")); return s }
	tsB := h.cardTS(t, qb)
	send("env-1", "interactive", unpayload(h.fake.click("U0KEV", "kevin", "trig-sm", "C0123", tsB, actionsBlock(cardB), "choice.1", "blue", "")))
	acked("env-1")
	if out := awaitOutcome(t, env, qb); out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: blue" {
		t.Fatalf("socket mode click resume: %+v", out)
	}
	// A modal's inline errors travel in the ack payload.
	tsA := h.cardTS(t, q)
	send("env-2", "interactive", unpayload(h.fake.click("U0KEV", "kevin", "trig-sm2", "C0123", tsA, "ask.acme.job-sm.q-sm.1", "answer", "answer", "")))
	acked("env-2")
	var opened apiCall
	testenv.CheckFor(t, wait, tick, func() error {
		if o := h.fake.Calls("views.open"); len(o) > 0 {
			opened = o[0]
			return nil
		}
		return fmt.Errorf("no views.open")
	})
	send("env-3", "interactive", unpayload(submission("U0KEV", "kevin", opened, "V1", "h1", map[string]map[string]any{
		"f.copies": {"type": "number_input", "value": "0"}})))
	ack := acked("env-3")
	p, _ := ack.JSON["payload"].(map[string]any)
	if p["response_action"] != "errors" || p["errors"].(map[string]any)["f.copies"] != "must be at least 1" {
		t.Fatalf("socket mode inline errors: %s", ack.Body)
	}
	// /ask over the websocket: the reply is the ack's payload.
	send("env-4", "slash_commands", `{"command":"/ask","text":"show q-sm","user_id":"U0KEV","user_name":"kevin","channel_id":"C0123","trigger_id":"trig-cmd"}`)
	ack = acked("env-4")
	p, _ = ack.JSON["payload"].(map[string]any)
	if p["response_type"] != "ephemeral" || !strings.Contains(fmt.Sprint(p["text"]), "Fields: copies (number)") {
		t.Fatalf("socket mode /ask: %s", ack.Body)
	}
}

func TestRoutedThreadAndPrivateRefusalFallback(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	q := question("job-rt", "q-rt")
	q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0777", ThreadTS: "1600000000.000042"}}
	publishEvent(t, n, askedEvent(q))
	d := deliveredTS(t, n, deliveries, "q-rt")
	posts := fake.Calls("chat.postMessage")
	if !d.OK || len(posts) != 1 || posts[0].Str("channel") != "C0777" || posts[0].Str("thread_ts") != "1600000000.000042" {
		t.Fatalf("routed thread: %+v, %d posts", d, len(posts))
	}
	// A refusal of a modal submission (no response_url) and one whose
	// reply_to names a foreign URL: both go through chat.postEphemeral.
	for i, to := range []map[string]string{
		{replyUser: "U0KEV", replyChannel: "C0777", replyThread: "1600000000.000042"},
		{replyUser: "U0KEV", replyChannel: "C0777", replyThread: "1600000000.000042", replyResponseURL: "http://169.254.169.254/latest"},
	} {
		publishEvent(t, n, bridge.Event{Type: bridge.EventRefused, EventID: fmt.Sprintf("ob-r%d", i), Tenant: "acme", JobID: "job-rt", QuestionID: "q-rt",
			TaskVersion: 1, To: "slack:U0KEV", Reason: bridge.RefusedInvalid, Text: "copies: must be at most 9",
			AttemptID: fmt.Sprintf("slack-view-V%d", i), ReplyTo: to})
	}
	testenv.CheckFor(t, wait, tick, func() error {
		if got := len(fake.Calls("chat.postEphemeral")); got != 2 {
			return fmt.Errorf("%d ephemerals", got)
		}
		return nil
	})
	for _, c := range fake.Calls("chat.postEphemeral") {
		if c.Str("channel") != "C0777" || c.Str("user") != "U0KEV" || c.Str("thread_ts") != "1600000000.000042" || c.Str("text") != "copies: must be at most 9" {
			t.Fatalf("ephemeral: %v", c.Form)
		}
	}
	if got := len(fake.Calls("response_url")); got != 0 {
		t.Fatalf("POSTed to a response_url that is not Slack's")
	}
	// A refusal for someone else's attempt (the console's) is not ours to tell.
	publishEvent(t, n, bridge.Event{Type: bridge.EventRefused, EventID: "ob-r9", Tenant: "acme", JobID: "job-rt", QuestionID: "q-rt",
		TaskVersion: 1, To: "console:ana", Text: "no", ReplyTo: map[string]string{"nonce": "x"}})
	// Settled before it was shown: a late asked posts nothing.
	q2 := question("job-rt", "q-late")
	q2.Route = q.Route
	publishEvent(t, n, bridge.Event{Type: bridge.EventCancelled, Tenant: "acme", JobID: "job-rt", QuestionID: "q-late", TaskVersion: 1})
	publishEvent(t, n, askedEvent(q2))
	// A marker question after both proves they were handled (one queue per job).
	q3 := question("job-rt", "q-mark")
	q3.Route = q.Route
	publishEvent(t, n, askedEvent(q3))
	deliveredTS(t, n, deliveries, "q-mark")
	if got := len(fake.Calls("chat.postMessage")); got != 2 {
		t.Fatalf("%d posts, want q-rt and q-mark only", got)
	}
	if got := len(fake.Calls("chat.postEphemeral")); got != 2 {
		t.Fatalf("%d ephemerals, want 2", got)
	}
	_ = h
}

func TestNewRefusesBadOptionsClearly(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	ok := Options{NATS: n, BotToken: "xoxb-secret-token", SigningSecret: "s3cret", APIURL: "https://slack.com/api/"}
	cases := map[string]func(*Options){
		"a connected NATS":       func(o *Options) { o.NATS = nil },
		"ASK_SLACK_BOT_TOKEN":    func(o *Options) { o.BotToken = "" },
		"ASK_SLACK_SIGNING_SECR": func(o *Options) { o.SigningSecret = "" },
		"starting with xapp-":    func(o *Options) { o.AppToken = "xoxb-wrong" },
		"must end with /":        func(o *Options) { o.APIURL = "https://slack.com/api" },
		"must be a channel id":   func(o *Options) { o.DefaultChannel = "#general" },
	}
	for want, mutate := range cases {
		o := ok
		mutate(&o)
		_, err := New(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
			continue
		}
		if strings.Contains(err.Error(), "xoxb-secret-token") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("secret in error: %v", err)
		}
	}
	if _, err := New(context.Background(), ok); err != nil {
		t.Fatalf("valid options: %v", err)
	}
}

// TestDuplicateEventsPostOnce checks the runtime's outbox publishing an
// asked event twice (a crash between publish and commit) shows one card
// and one thread: a job's events are handled in order, and the second copy
// finds the card the first posted.
func TestDuplicateEventsPostOnce(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	var qs []*bridge.Question
	for i := range 3 {
		q := question("job-rep", fmt.Sprintf("q-rep%d", i))
		qs = append(qs, q)
		ev := askedEvent(q)
		publishEvent(t, n, ev)
		publishEvent(t, n, ev)
	}
	for _, q := range qs {
		deliveredTS(t, n, deliveries, q.QuestionID)
	}
	// Both copies of each event are handled once the consumer has no backlog.
	testenv.CheckFor(t, wait, tick, func() error {
		c, err := n.JS.Consumer(context.Background(), bridge.StreamEvents, ConsumerName)
		if err != nil {
			return err
		}
		info, err := c.Info(context.Background())
		if err != nil {
			return err
		}
		if info.NumPending != 0 || info.NumAckPending != 0 {
			return fmt.Errorf("pending %d, unacked %d", info.NumPending, info.NumAckPending)
		}
		return nil
	})
	posts := fake.Calls("chat.postMessage")
	parents, cards := 0, map[string]int{}
	for _, c := range posts {
		if id := actionsBlock(c); id != "" {
			cards[id]++
		} else {
			parents++
		}
	}
	if parents != 1 || len(cards) != 3 {
		t.Fatalf("%d parents and cards %v, want 1 parent and 3 cards once each", parents, cards)
	}
	for id, k := range cards {
		if k != 1 {
			t.Fatalf("card %s posted %d times", id, k)
		}
	}
}
