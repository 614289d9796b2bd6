package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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
