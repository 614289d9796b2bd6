package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// secondBot starts another bot on the same NATS, as a restart or a second
// replica would, and stops it when the test ends; mutate may change its
// options.
func (h *harness) secondBot(t *testing.T, mutate ...func(*Options)) *Bot {
	t.Helper()
	o := h.bot.o
	o.Logger = slog.New(slog.NewTextHandler(h.logs, nil))
	for _, m := range mutate {
		m(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b, err := New(ctx, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	b.backoff = h.bot.backoff
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	h.stopLast = stop
	t.Cleanup(stop)
	return b
}

// stopSecond stops the bot secondBot started last and waits for it.
func (h *harness) stopSecond() { h.stopLast() }

func TestRestartNeitherRepostsNorForgets(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.publishEvent(asked(colorQuestion()))
	msg := h.posted(channelA, 1)
	h.waitDelivery()
	// The report goes out before the event is acknowledged: a stop in
	// between would hand the event to the next bot, which reports it again.
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		c, err := h.nats.JS.Consumer(context.Background(), bridge.StreamEvents, ConsumerName)
		if err != nil {
			return err
		}
		if info, err := c.Info(context.Background()); err != nil || info.NumAckPending > 0 || info.NumPending > 0 {
			return fmt.Errorf("the asked event is not acknowledged yet: %+v, %v", info, err)
		}
		return nil
	})
	h.stopBot()

	// The runtime publishes the question again (its outbox relayed twice)
	// and later the outcome; a new bot handles both.
	again := asked(colorQuestion())
	again.EventID = "ob-asked-again"
	h.publishEvent(again)
	h.secondBot(t)
	h.publishEvent(bridge.Event{Type: bridge.EventAnswered, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
		By: "slack:U0KEV", ByName: "kevin", Via: "slack", Answer: json.RawMessage(`"red"`), AnswerText: "red"})
	h.fake.settledCard(t, msg["id"].(string), "slack:U0KEV (kevin)")
	// One card: the repeated asked, posted with the card's nonce, is the
	// same message to Discord.
	if cards := h.fake.cardsOf(channelA, colorQuestion()); len(cards) != 1 || cards[0] != msg["id"] {
		t.Fatalf("cards %v after a restart, want only %v", cards, msg["id"])
	}
	// The repeated asked was reported again, with the same message id
	// (JetStream deduplicates it by Nats-Msg-Id).
	ds := h.deliveriesNow()
	if len(ds) != 2 || ds[1].Message == nil || ds[1].Message.MessageID != msg["id"] {
		t.Fatalf("deliveries = %+v", ds)
	}
}

// TestOutcomeAfterARestartEditsTheCardTheEventNames checks a bot that
// remembers nothing of a card (it restarted) settles it from the event:
// the runtime names the card and carries the question.
func TestOutcomeAfterARestartEditsTheCardTheEventNames(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := colorQuestion()
	q.Timeout = "4h"
	h.publishEvent(asked(q))
	msg := h.posted(channelA, 1)
	h.waitDelivery()
	h.bot.cards.Forget()
	h.publishEvent(bridge.Event{Type: bridge.EventTimedOut, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
		Question: &q, Text: "Nobody answered within 4:00:00.",
		Messages: []bridge.MessageRef{{Platform: "discord", Channel: channelA, MessageID: msg["id"].(string)},
			{Platform: "slack", Channel: "C1", MessageID: "1.2"}}})
	h.fake.settledCard(t, msg["id"].(string), "Nobody answered within 4:00:00 · ")
	m := h.fake.message(msg["id"].(string))
	if embedOf(t, m)["description"] != "Which colour should the report use?" {
		t.Fatalf("the question was lost from the card: %v", embedOf(t, m))
	}
}

func TestOutcomeBeforeAskedPostsNothing(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := colorQuestion()
	h.publishEvent(bridge.Event{Type: bridge.EventCancelled, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
		Text: "The question was cancelled."})
	h.publishEvent(asked(q))
	h.markerEvent()
	if n := len(h.fake.requests("POST", "/channels/"+channelA)); n != 0 {
		t.Fatalf("%d posts for a question settled before it was shown", n)
	}
}

func TestGuildScopedRegistrationWithRateLimit(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{noRun: true, mutate: func(o *Options) { o.Guild = "900" }})
	h.fake.failOn(failRule{Method: "PUT", Prefix: "/applications/", Status: 429, RetryAfter: 0.02, Times: 1})
	if err := h.bot.registerCommands(context.Background()); err != nil {
		t.Fatalf("register: %v", err)
	}
	reqs := h.fake.requests("PUT", "/applications/"+testApp+"/guilds/900/commands")
	if len(reqs) != 2 {
		t.Fatalf("%d guild registrations, want 2 (one rate limited)", len(reqs))
	}
	var cmds []map[string]any
	if err := json.Unmarshal(reqs[1].Body, &cmds); err != nil || len(cmds) != 1 || cmds[0]["name"] != "ask" {
		t.Fatalf("commands = %s", reqs[1].Body)
	}
	var subs []string
	for _, o := range cmds[0]["options"].([]any) {
		subs = append(subs, o.(map[string]any)["name"].(string))
	}
	if strings.Join(subs, ",") != "list,queue,show,answer,decline,cancel,help" {
		t.Fatalf("subcommands = %v", subs)
	}
	// A rate limit that never ends is an error, not an endless loop.
	h.fake.failOn(failRule{Method: "PUT", Prefix: "/applications/", Status: 429, RetryAfter: 0.01, Times: -1})
	err := h.bot.registerCommands(context.Background())
	if err == nil || !strings.Contains(err.Error(), "rate limited") {
		t.Fatalf("register under a lasting 429: %v", err)
	}
	if n := len(h.fake.requests("PUT", "/applications/")); n != 2+1+rateLimitRetries {
		t.Fatalf("%d registrations, want %d", n, 2+1+rateLimitRetries)
	}
}

func TestNewRefusesBadOptionsWithoutSecrets(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{noRun: true})
	for name, mutate := range map[string]func(*Options){
		"no token":    func(o *Options) { o.BotToken = "" },
		"bad key":     func(o *Options) { o.PublicKey = "zz" + testToken },
		"no app":      func(o *Options) { o.AppID = "" },
		"bad api url": func(o *Options) { o.APIURL = "ftp://discord.com/api" },
		"no nats":     func(o *Options) { o.NATS = nil },
	} {
		o := h.bot.o
		mutate(&o)
		_, err := New(context.Background(), o)
		if err == nil {
			t.Fatalf("%s: New accepted it", name)
		}
		if strings.Contains(err.Error(), testToken) {
			t.Fatalf("%s: the error carries the token: %v", name, err)
		}
	}
}

func TestErrorsNeverCarryInteractionTokens(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{noRun: true})
	h.fake.failOn(failRule{Method: "POST", Prefix: "/webhooks/", Status: 429, RetryAfter: 3600, Times: -1})
	err := h.bot.onRefused(context.Background(), &bridge.Event{Type: bridge.EventRefused, Tenant: "acme", JobID: "j", QuestionID: "q",
		AttemptID: "discord-" + snowflakeAt(time.Now()), Text: "no", ReplyTo: map[string]string{"platform": "discord", "app_id": testApp, "token": "secret-interaction-token"}})
	if err == nil || strings.Contains(err.Error(), "secret-interaction-token") || strings.Contains(err.Error(), "/webhooks/") {
		t.Fatalf("error = %v", err)
	}
	_ = fmt.Sprint(time.Now())
}

func TestExpiredAskedNotPosted(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	ev := asked(colorQuestion())
	ev.AskedAt, ev.Deadline = time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour)
	h.publishEvent(ev)
	h.markerEvent()
	if n := len(h.fake.requests("POST", "/channels/"+channelA)); n != 0 {
		t.Fatalf("%d posts for a question past its deadline", n)
	}
}

func TestTwoReplicasPostEachQuestionOnce(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.secondBot(t)
	const n = 6
	for i := range n {
		q := colorQuestion()
		q.JobID = fmt.Sprintf("job-r%d", i)
		ev := asked(q)
		h.publishEvent(ev)
		ev.EventID = "" // the same question relayed twice
		h.publishEvent(ev)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		jobs := map[string]bool{}
		for _, d := range h.deliveriesNow() {
			if !d.OK {
				return fmt.Errorf("delivery failed: %+v", d.Failure)
			}
			jobs[d.JobID] = true
		}
		if len(jobs) != n {
			return fmt.Errorf("%d questions reported, want %d", len(jobs), n)
		}
		return nil
	})
	h.markerEvent()
	h.fake.mu.Lock()
	stored := 0
	for _, m := range h.fake.msgs {
		if m["channel_id"] == channelA {
			stored++
		}
	}
	h.fake.mu.Unlock()
	if stored != n {
		t.Fatalf("%d cards in the channel, want %d (one per question)", stored, n)
	}
	// Every delivery report of a question names the same message.
	byJob := map[string]string{}
	for _, d := range h.deliveriesNow() {
		if prev, ok := byJob[d.JobID]; ok && prev != d.Message.MessageID {
			t.Fatalf("%s reported as %s and %s", d.JobID, prev, d.Message.MessageID)
		}
		byJob[d.JobID] = d.Message.MessageID
	}
}
