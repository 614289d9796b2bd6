package discord

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/internal/testenv/testmain"
)

// api is the one fake Discord API of this package's tests (see fakeAPI):
// discordgo's endpoints are package variables, pointed at it before any
// test runs, so no bot writes them while others read them.
var api *fakeAPI

func TestMain(m *testing.M) {
	api = newFakeAPI()
	pointEndpoints(api.apiURL())
	code := testmain.Run(m, 8)
	api.srv.Close()
	testmain.Exit(code)
}

const (
	testToken = "test-bot-token-do-not-log" // each test's bot token starts with it (fakeAPI.newBot)
	testApp   = "555000111"
	channelA  = "1000000000000000001"
	adminRole = "2000000000000000001"
	operRole  = "2000000000000000002"
)

// collector records the messages published on a subject (core NATS sees
// every publish, including ones JetStream would deduplicate).
type collector struct {
	mu   sync.Mutex
	msgs []*nats.Msg
	sub  *nats.Subscription
}

// close stops collecting. A test whose publish must find no stream closes
// the collector of its subject first: a subscriber takes the publish, so
// JetStream's "no responders" never comes and the publisher waits out its
// deadline.
func (c *collector) close(t testing.TB) {
	t.Helper()
	if err := c.sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
}

func (c *collector) all() []*nats.Msg {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*nats.Msg(nil), c.msgs...)
}

func collect(t testing.TB, nc *nats.Conn, subject string) *collector {
	t.Helper()
	c := &collector{}
	var err error
	c.sub, err = nc.Subscribe(subject, func(m *nats.Msg) {
		c.mu.Lock()
		c.msgs = append(c.msgs, m)
		c.mu.Unlock()
	})
	if err != nil {
		t.Fatalf("subscribe %s: %v", subject, err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.sub.Unsubscribe() })
	return c
}

type harness struct {
	t          testing.TB
	ctx        context.Context
	nats       *bridge.NATS
	fake       *fakeDiscord // the bot's Discord
	bot        *Bot
	web        *httptest.Server
	priv       ed25519.PrivateKey
	signer     console.Signer
	attempts   *collector
	deliveries *collector
	cancels    *collector
	logs       *testenv.LockedBuffer
	nextID     atomic.Int64
	stop       func()
	stopLast   func() // stops the bot secondBot started last
}

type harnessOptions struct {
	nats   *bridge.NATS // shared NATS (restart tests); nil starts one
	fake   *fakeDiscord // the bot's Discord; nil makes one (api.newBot)
	mutate func(*Options)
	tweak  func(*Bot) // after New, before Run
	noRun  bool
}

// start starts embedded NATS, the bot pointed at the fake Discord API, and
// an HTTP server with its routes.
func start(t testing.TB, ho harnessOptions) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, ctx: ctx, fake: ho.fake, logs: &testenv.LockedBuffer{}}
	if h.fake == nil {
		h.fake = api.newBot(t)
	}
	// Interaction ids are snowflakes made now, as Discord's: the bot reads
	// an interaction's age (its token's life) from its id.
	first, _ := strconv.ParseInt(snowflakeAt(time.Now()), 10, 64)
	h.nextID.Store(first)
	h.nats = ho.nats
	if h.nats == nil {
		n, err := bridge.ConnectNATS(ctx, bridge.NATSOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"})
		if err != nil {
			t.Fatalf("nats: %v", err)
		}
		h.nats = n
		t.Cleanup(n.Close)
	}
	// The events stream drops an event no consumer is there for: the
	// consumer exists before anything is published, as the runtime makes
	// it in the service (runtime/eventconsumers.go).
	events := &bridge.Durable{NATS: h.nats, Stream: bridge.StreamEvents, Config: bridge.EventConsumer(ConsumerName)}
	if _, err := events.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h.priv = priv
	h.signer = console.Signer{PublicURL: "https://askbridge.example.com", Secret: []byte("console-secret-0123456789")}
	o := Options{
		NATS: h.nats, BotToken: h.fake.token, PublicKey: hex.EncodeToString(pub), AppID: testApp,
		APIURL: api.apiURL(), DefaultChannel: channelA, AdminRoles: []string{adminRole}, OperatorRoles: []string{operRole},
		Console: h.signer,
		Logger:  slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if ho.mutate != nil {
		ho.mutate(&o)
	}
	bot, err := New(ctx, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	bot.backoff = func(uint64) time.Duration { return 20 * time.Millisecond }
	// Discord's 3 s for the initial response is a benchmark figure
	// (BenchmarkInteractionResponse): here an interaction may take what a
	// busy machine needs, or the test would check the machine, not the bot.
	bot.budget = testenv.Patience
	if ho.tweak != nil {
		ho.tweak(bot)
	}
	h.bot = bot
	h.attempts = collect(t, h.nats.Conn, bridge.PrefixAnswer+".>")
	h.deliveries = collect(t, h.nats.Conn, bridge.PrefixDelivery+".>")
	h.cancels = collect(t, h.nats.Conn, bridge.PrefixCancel+".>")
	mux := http.NewServeMux()
	bot.Routes(mux)
	h.web = httptest.NewServer(mux)
	done := make(chan error, 1)
	if !ho.noRun {
		go func() { done <- bot.Run(ctx) }()
	} else {
		done <- nil
	}
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(testenv.Patience):
				t.Errorf("Run did not return after its context ended")
			}
		})
	}
	t.Cleanup(func() {
		h.stop()
		h.web.Close()
		if s := h.logs.String(); bytes.Contains([]byte(s), []byte(testToken)) || bytes.Contains([]byte(s), []byte("itoken-")) {
			t.Errorf("a token reached the logs:\n%s", s)
		}
	})
	return h
}

// publishEvent publishes an event as the runtime does.
func (h *harness) publishEvent(ev bridge.Event) {
	h.t.Helper()
	if ev.At.IsZero() {
		ev.At = time.Now().UTC()
	}
	if ev.EventID == "" {
		ev.EventID = fmt.Sprintf("ob-%d", h.nextID.Add(1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bridge.Publish(ctx, h.nats.JS, bridge.EventSubject(ev.Tenant, ev.JobID), ev.EventID, ev); err != nil {
		h.t.Fatalf("publish event: %v", err)
	}
}

// sign signs body as Discord does: Ed25519 over timestamp + body.
func (h *harness) post(body []byte, ts time.Time, key ed25519.PrivateKey) (int, []byte) {
	h.t.Helper()
	stamp := strconv.FormatInt(ts.Unix(), 10)
	sig := ed25519.Sign(key, append([]byte(stamp), body...))
	req, err := http.NewRequest(http.MethodPost, h.web.URL+"/discord/interactions", bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Signature-Ed25519", hex.EncodeToString(sig))
	req.Header.Set("X-Signature-Timestamp", stamp)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("post interaction: %v", err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// interact posts a signed interaction and decodes the response.
func (h *harness) interact(in map[string]any) map[string]any {
	h.t.Helper()
	body, _ := json.Marshal(in)
	// How soon the response comes is a benchmark figure (BenchmarkInteractionResponse),
	// not something a test on a shared machine can assert.
	status, out := h.post(body, time.Now(), h.priv)
	if status != http.StatusOK {
		h.t.Fatalf("interaction: HTTP %d: %s", status, out)
	}
	var resp map[string]any
	if err := json.Unmarshal(out, &resp); err != nil {
		h.t.Fatalf("interaction response is not JSON: %v: %s", err, out)
	}
	return resp
}

func (h *harness) newSnowflake() string { return strconv.FormatInt(h.nextID.Add(1), 10) }

type person struct {
	ID, Name string
	Roles    []string
}

var (
	kevin    = person{ID: "3000000000000000001", Name: "kevin"}
	ana      = person{ID: "3000000000000000002", Name: "ana"}
	stranger = person{ID: "3000000000000000009", Name: "mallory"}
)

// interaction builds an interaction as Discord sends it from a guild.
func (h *harness) interaction(typ int, p person, data map[string]any) map[string]any {
	id := h.newSnowflake()
	roles := p.Roles
	if roles == nil {
		roles = []string{}
	}
	return map[string]any{
		"id": id, "application_id": testApp, "type": typ, "token": "itoken-" + id, "version": 1,
		"guild_id": "900", "channel_id": channelA, "locale": "en-US",
		"member": map[string]any{"user": map[string]any{"id": p.ID, "username": p.Name, "global_name": p.Name + " G"},
			"roles": roles, "joined_at": "2026-01-01T00:00:00Z"},
		"data": data,
	}
}

func (h *harness) click(p person, customID string) map[string]any {
	return h.interaction(3, p, map[string]any{"custom_id": customID, "component_type": 2})
}

func (h *harness) selectChoice(p person, customID string, values ...string) map[string]any {
	return h.interaction(3, p, map[string]any{"custom_id": customID, "component_type": 3, "values": values})
}

func (h *harness) submit(p person, customID string, inputs map[string]string) map[string]any {
	var rows []any
	for k, v := range inputs {
		rows = append(rows, map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": k, "value": v}}})
	}
	return h.interaction(5, p, map[string]any{"custom_id": customID, "components": rows})
}

func (h *harness) command(p person, sub string, opts map[string]string) map[string]any {
	var o []any
	for k, v := range opts {
		o = append(o, map[string]any{"name": k, "type": 3, "value": v})
	}
	return h.interaction(2, p, map[string]any{"id": "777", "name": "ask", "type": 1,
		"options": []any{map[string]any{"name": sub, "type": 1, "options": o}}})
}

// attemptsNow decodes the attempts published so far.
func (h *harness) attemptsNow() []bridge.AnswerAttempt {
	var out []bridge.AnswerAttempt
	for _, m := range h.attempts.all() {
		var a bridge.AnswerAttempt
		if err := json.Unmarshal(m.Data, &a); err != nil {
			h.t.Fatalf("attempt is not JSON: %v", err)
		}
		if got, want := m.Header.Get("Nats-Msg-Id"), "attempt-"+a.AttemptID; got != want {
			h.t.Errorf("attempt Nats-Msg-Id = %q, want %q", got, want)
		}
		out = append(out, a)
	}
	return out
}

// waitAttempts waits for n attempts.
func (h *harness) waitAttempts(n int) []bridge.AnswerAttempt {
	h.t.Helper()
	testenv.CheckFor(h.t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := len(h.attempts.all()); got != n {
			return fmt.Errorf("%d attempts, want %d", got, n)
		}
		return nil
	})
	return h.attemptsNow()
}

func (h *harness) deliveriesNow() []bridge.Delivery {
	var out []bridge.Delivery
	for _, m := range h.deliveries.all() {
		var d bridge.Delivery
		if err := json.Unmarshal(m.Data, &d); err != nil {
			h.t.Fatalf("delivery is not JSON: %v", err)
		}
		want := fmt.Sprintf("delivery.discord.%s.%s.%s.%d", d.Tenant, d.JobID, d.QuestionID, d.TaskVersion) // docs/contract.md
		if got := m.Header.Get("Nats-Msg-Id"); got != want {
			h.t.Errorf("delivery Nats-Msg-Id = %q, want %q", got, want)
		}
		out = append(out, d)
	}
	return out
}

func (h *harness) waitDelivery() bridge.Delivery {
	h.t.Helper()
	var d bridge.Delivery
	testenv.CheckFor(h.t, testenv.Patience, 10*time.Millisecond, func() error {
		ds := h.deliveriesNow()
		if len(ds) == 0 {
			return fmt.Errorf("no delivery report yet")
		}
		d = ds[len(ds)-1]
		return nil
	})
	return d
}

// asked is the event the runtime publishes for a new question.
func asked(q bridge.Question) bridge.Event {
	now := time.Now().UTC().Truncate(time.Second)
	return bridge.Event{Type: bridge.EventAsked, Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID,
		TaskVersion: q.TaskVersion, Question: &q, State: bridge.StatePending, AskedAt: now, Deadline: now.Add(4 * time.Hour)}
}

func colorQuestion() bridge.Question {
	return bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
		Question: "Which colour should the report use?", WhyItMatters: "The brand guide changed.",
		Choices: []string{"red", "blue", "green"}, Answerers: []string{"discord:" + kevin.ID}, Agent: "acme-support"}
}

// components returns a stored message's components flattened: every
// button or select with its fields.
func components(msg map[string]any) []map[string]any {
	var out []map[string]any
	rows, _ := msg["components"].([]any)
	for _, r := range rows {
		row, _ := r.(map[string]any)
		cs, _ := row["components"].([]any)
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

func findComponent(t testing.TB, msg map[string]any, label string) map[string]any {
	t.Helper()
	for _, c := range components(msg) {
		if c["label"] == label {
			return c
		}
	}
	t.Fatalf("no component labelled %q in %v", label, components(msg))
	return nil
}

// posted waits for the n-th message stored in a channel and returns it.
func (h *harness) posted(channel string, n int) map[string]any {
	h.t.Helper()
	var ids []string
	testenv.CheckFor(h.t, testenv.Patience, 10*time.Millisecond, func() error {
		h.fake.mu.Lock()
		ids = ids[:0]
		for mid, m := range h.fake.msgs {
			if m["channel_id"] == channel {
				ids = append(ids, mid)
			}
		}
		h.fake.mu.Unlock()
		if len(ids) < n {
			return fmt.Errorf("%d messages in %s, want %d; bot log:\n%s", len(ids), channel, n, h.logs.String())
		}
		return nil
	})
	slices.Sort(ids) // ids of one length: numeric order
	return h.fake.message(ids[n-1])
}

// postTampered signs body and sends it with one byte changed.
func (h *harness) postTampered(body []byte, ts time.Time) (int, []byte) {
	h.t.Helper()
	stamp := strconv.FormatInt(ts.Unix(), 10)
	sig := ed25519.Sign(h.priv, append([]byte(stamp), body...))
	changed := bytes.Replace(body, []byte(`"type":1`), []byte(`"type":2`), 1)
	req, _ := http.NewRequest(http.MethodPost, h.web.URL+"/discord/interactions", bytes.NewReader(changed))
	req.Header.Set("X-Signature-Ed25519", hex.EncodeToString(sig))
	req.Header.Set("X-Signature-Timestamp", stamp)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("post: %v", err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// stopBot stops the harness's bot (its Run) before the test ends.
func (h *harness) stopBot() {
	h.t.Helper()
	h.stop()
}

// rememberedCard is what the bot remembers of a card, as the tests read
// it: the card as drawn, and whether Discord's shows its outcome.
type rememberedCard struct {
	*card
	Edited bool
}

// loadCard is what the bot remembers of the card of a question (nil:
// nothing).
func (b *Bot) loadCard(_ context.Context, tenant, job, question string, version int64) (*rememberedCard, error) {
	c, ok := b.cards.Get(bridge.Ref{Tenant: tenant, JobID: job, QuestionID: question, Version: version})
	if !ok {
		return nil, nil
	}
	return &rememberedCard{card: b.viewOf(c), Edited: c.Updated}, nil
}
