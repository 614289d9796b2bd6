package slack

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

const testSecret = "8f742231b10e8888abcd99yyyzzz85a5"

func sign(secret, ts, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "v0:%s:%s", ts, body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// post sends a signed form POST to the adapter, signed at `at`.
func post(t testing.TB, url, body string, at time.Time) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", sign(testSecret, ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func payload(v any) string {
	raw, _ := json.Marshal(v)
	return "payload=" + url.QueryEscape(string(raw))
}

// click is a block_actions payload for one button or select.
func (f *fakeSlack) click(user, name, trigger, channel, msgTS, blockID, actionID, value, selected string) string {
	action := map[string]any{"type": "button", "action_id": actionID, "block_id": blockID, "value": value, "action_ts": "1700000001.000001"}
	if selected != "" {
		action = map[string]any{"type": "static_select", "action_id": actionID, "block_id": blockID,
			"selected_option": map[string]any{"value": selected, "text": map[string]any{"type": "plain_text", "text": "x"}}, "action_ts": "1700000001.000001"}
	}
	return payload(map[string]any{
		"type": "block_actions", "trigger_id": trigger, "response_url": f.srv.URL + "/response/" + trigger,
		"user":      map[string]any{"id": user, "username": name, "name": name, "team_id": "T1"},
		"team":      map[string]any{"id": "T1"},
		"container": map[string]any{"type": "message", "message_ts": msgTS, "channel_id": channel, "is_ephemeral": false},
		"channel":   map[string]any{"id": channel},
		"message":   map[string]any{"ts": msgTS, "thread_ts": ""},
		"actions":   []any{action},
	})
}

// submission is a view_submission of a modal the adapter opened: the view
// as sent to views.open, plus Slack's id, hash and the person's state.
func submission(user, name string, opened apiCall, viewID, hash string, values map[string]map[string]any) string {
	view, _ := opened.JSON["view"].(map[string]any)
	v := map[string]any{}
	for k, x := range view {
		v[k] = x
	}
	v["id"], v["hash"], v["team_id"] = viewID, hash, "T1"
	state := map[string]any{}
	for block, val := range values {
		state[block] = map[string]any{"v": val}
	}
	v["state"] = map[string]any{"values": state}
	return payload(map[string]any{
		"type": "view_submission", "user": map[string]any{"id": user, "username": name, "name": name, "team_id": "T1"},
		"team": map[string]any{"id": "T1"}, "view": v,
	})
}

// blocksOf decodes the blocks a chat.postMessage or chat.update carried.
func blocksOf(c apiCall) []map[string]any {
	var out []map[string]any
	_ = json.Unmarshal([]byte(c.Str("blocks")), &out)
	return out
}

// actionsBlock returns the block id of the card's actions block, or "".
func actionsBlock(c apiCall) string {
	for _, b := range blocksOf(c) {
		if b["type"] == "actions" {
			id, _ := b["block_id"].(string)
			return id
		}
	}
	return ""
}

// --- the adapter under test ---

type harness struct {
	t    testing.TB
	fake *fakeSlack
	nats *bridge.NATS
	bot  *Bot
	web  *httptest.Server
	stop context.CancelFunc
	done chan struct{}
}

// testLogger is the adapter's log, printed when the test fails
// (SLACK_TEST_LOG=1: all of it, at debug level, as it comes).
func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("SLACK_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return testenv.FailureLogger(t).With("who", "slack")
}

// startBot starts an adapter on n talking to fake; opts may adjust options.
func startBot(t testing.TB, n *bridge.NATS, fake *fakeSlack, opts ...func(*Options)) *harness {
	t.Helper()
	return startBotAt(t, n, fake, time.Now, opts...)
}

// startBotAt is startBot with the adapter's clock.
func startBotAt(t testing.TB, n *bridge.NATS, fake *fakeSlack, now func() time.Time, opts ...func(*Options)) *harness {
	t.Helper()
	o := Options{NATS: n, BotToken: "xoxb-test-token", SigningSecret: testSecret, APIURL: fake.APIURL(),
		DefaultChannel: "C0123", Console: console.Signer{PublicURL: "https://ask.example.com", Secret: []byte("console-key")},
		Logger: testLogger(t)}
	for _, f := range opts {
		f(&o)
	}
	// The events stream drops an event no consumer is there for: the
	// consumer exists before anything is published, as the runtime makes
	// it in the service (runtime/eventconsumers.go).
	events := &bridge.Durable{NATS: n, Stream: bridge.StreamEvents, Config: bridge.EventConsumer(ConsumerName)}
	if _, err := events.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b, err := New(ctx, o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	b.now = now
	b.pace = newPacer(20*time.Millisecond, 3)
	// Slack's 3 s for the ack is a benchmark figure (askbridge bench):
	// here a click may take what a busy machine needs, or the test would
	// check the machine, not the adapter.
	b.budget = testenv.Patience
	b.retry = retryPolicy{Tries: 4, Base: 20 * time.Millisecond, Cap: 200 * time.Millisecond, MaxRetryAft: 5 * time.Second}
	mux := http.NewServeMux()
	b.Routes(mux)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	h := &harness{t: t, fake: fake, nats: n, bot: b, web: httptest.NewServer(mux), stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		if err := b.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(h.Stop)
	return h
}

// Stop stops the adapter and waits for Run to return.
func (h *harness) Stop() {
	h.stop()
	<-h.done
	h.web.Close()
}

func (h *harness) interact(body string) (*http.Response, string) {
	return post(h.t, h.web.URL+"/slack/interactions", body, time.Now())
}

func (h *harness) command(user, name, text, trigger string) (*http.Response, string) {
	form := url.Values{"command": {"/ask"}, "text": {text}, "user_id": {user}, "user_name": {name},
		"channel_id": {"C0123"}, "team_id": {"T1"}, "trigger_id": {trigger},
		"response_url": {h.fake.srv.URL + "/response/" + trigger}}
	return post(h.t, h.web.URL+"/slack/commands", form.Encode(), time.Now())
}

// publishEvent publishes an event as the runtime would.
func publishEvent(t testing.TB, n *bridge.NATS, ev bridge.Event) {
	t.Helper()
	if ev.EventID == "" {
		ev.EventID = fmt.Sprintf("ob-test-%d", time.Now().UnixNano())
	}
	if ev.At.IsZero() {
		ev.At = time.Now().UTC()
	}
	if err := bridge.Publish(context.Background(), n.JS, bridge.EventSubject(ev.Tenant, ev.JobID), ev.EventID+"-"+strconv.FormatInt(time.Now().UnixNano(), 10), ev); err != nil {
		t.Fatal(err)
	}
}

// collect subscribes to subject and gathers decoded messages.
type collector[T any] struct {
	mu   sync.Mutex
	msgs []T
}

func collect[T any](t testing.TB, n *bridge.NATS, subject string) *collector[T] {
	t.Helper()
	c := &collector[T]{}
	sub, err := n.Conn.Subscribe(subject, func(m *nats.Msg) {
		var v T
		if json.Unmarshal(m.Data, &v) == nil {
			c.mu.Lock()
			c.msgs = append(c.msgs, v)
			c.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return c
}

func (c *collector[T]) All() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]T(nil), c.msgs...)
}

// rememberedCard is what the adapter remembers of a card, as the tests
// read it.
type rememberedCard struct {
	Channel, TS, Thread string
	Outcome             string // the settled card's context line
	Updated             bool   // Slack's card shows the outcome
}

// loadCard is what the adapter remembers of the card of r (nil: nothing).
func (b *Bot) loadCard(_ context.Context, r blockkit.Ref) (*rememberedCard, error) {
	c, ok := b.cards.Get(r)
	if !ok {
		return nil, nil
	}
	out := &rememberedCard{Updated: c.Updated}
	if m := c.Message; m != nil {
		out.Channel, out.TS, out.Thread = m.Channel, m.MessageID, m.Thread
	}
	if c.Ended != nil {
		out.Outcome = blockkit.OutcomeLine(c.Ended, c.Question)
	}
	return out, nil
}

// bucketKeys lists the keys of the adapter's bucket.
func bucketKeys(t *testing.T, b *Bot) []string {
	t.Helper()
	kv, err := b.js.KeyValue(context.Background(), b.kv.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	lister, err := kv.ListKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range lister.Keys() {
		out = append(out, k)
	}
	return out
}
