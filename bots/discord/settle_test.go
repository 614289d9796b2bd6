package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// TestOutcomeEditedOnceAndRecorded checks a posted card is edited once
// and recorded with its outcome and as edited, and that the same outcome
// delivered again (as after a crash, under a new message id) edits
// nothing.
func TestOutcomeEditedOnceAndRecorded(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := colorQuestion()
	q.JobID, q.QuestionID = "job-once", "q-once"
	h.publishEvent(asked(q))
	msg := h.posted(channelA, 1)
	id := msg["id"].(string)
	ev := bridge.Event{Type: bridge.EventAnswered, Tenant: "acme", JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion,
		By: "discord:" + kevin.ID, ByName: "kevin", Via: "discord", Answer: json.RawMessage(`"blue"`), AnswerText: "blue",
		Text: "The answer: blue", At: time.Now().UTC().Truncate(time.Millisecond)}
	h.publishEvent(ev)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		c, err := h.bot.loadCard(context.Background(), "acme", q.JobID, q.QuestionID, q.TaskVersion)
		if err != nil || c == nil || c.Outcome == nil || !c.Edited {
			return fmt.Errorf("card record %+v (%v), want the outcome, edited", c, err)
		}
		if c.Outcome.Type != bridge.EventAnswered || c.Outcome.Answer != "blue" || c.MessageID != id {
			return fmt.Errorf("card record %+v", c)
		}
		return nil
	})
	ev.EventID = ""
	h.publishEvent(ev)
	marker := colorQuestion()
	marker.JobID, marker.QuestionID = "job-once", "q-marker"
	h.publishEvent(asked(marker)) // same job: handled after the repeat
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		c, err := h.bot.loadCard(context.Background(), "acme", marker.JobID, marker.QuestionID, marker.TaskVersion)
		if err != nil || c == nil || c.MessageID == "" {
			return fmt.Errorf("marker not posted yet (%v)", err)
		}
		return nil
	})
	if n := len(h.fake.requests("PATCH", "/channels/"+channelA+"/messages/"+id)); n != 1 {
		t.Fatalf("%d edits of the card, want 1", n)
	}
}

// TestWaitingQuestionLeavesNoRecord checks the bot keeps nothing lasting
// in its refs bucket for a question it showed, before or after it is
// settled: JetStream keeps every key in memory, and which message shows
// which question is the runtime's record. Short ids need no card index.
// The claim to show the question, which tells a try after a restart from
// a first one, goes on its own after engine.ShowClaimTTL.
func TestWaitingQuestionLeavesNoRecord(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := colorQuestion()
	q.JobID, q.QuestionID = "job-life", "q-life"
	h.publishEvent(asked(q))
	h.posted(channelA, 1)
	h.waitDelivery()
	keys := func() []string {
		t.Helper()
		lister, err := h.bot.refs.ListKeys(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		st, err := h.nats.JS.Stream(context.Background(), "KV_"+RefsBucket)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for k := range lister.Keys() {
			m, err := st.GetLastMsgForSubject(context.Background(), "$KV."+RefsBucket+"."+k)
			if err != nil {
				t.Fatal(err)
			}
			if ttl, err := time.ParseDuration(m.Header.Get(jetstream.MsgTTLHeader)); err == nil && ttl <= engine.ShowClaimTTL {
				continue
			}
			out = append(out, k)
		}
		return out
	}
	if k := keys(); len(k) != 0 {
		t.Fatalf("the refs bucket holds %v for a waiting question, want nothing", k)
	}
	h.publishEvent(bridge.Event{Type: bridge.EventAnswered, Tenant: "acme", JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion,
		By: "discord:" + kevin.ID, ByName: "kevin", Via: "discord", Answer: json.RawMessage(`"blue"`), AnswerText: "blue",
		Text: "The answer: blue", At: time.Now().UTC().Truncate(time.Millisecond)})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		c, err := h.bot.loadCard(context.Background(), "acme", q.JobID, q.QuestionID, q.TaskVersion)
		if err != nil || c == nil || c.Outcome == nil || !c.Edited {
			return fmt.Errorf("card %+v (%v), want the outcome, edited", c, err)
		}
		return nil
	})
	if k := keys(); len(k) != 0 {
		t.Fatalf("the refs bucket holds %v for a settled question, want nothing", k)
	}
}

// TestRestartedBotAsksInTheJobsThread checks a bot that remembers nothing
// (restarted) puts a job's next question in the job's thread, which the
// runtime names on the asked event: one thread a job.
func TestRestartedBotAsksInTheJobsThread(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	first := colorQuestion()
	first.JobID, first.QuestionID = "job-again", "q-first"
	h.publishEvent(asked(first))
	d := h.waitDelivery()
	if d.Message == nil || d.Message.Thread == "" {
		t.Fatalf("first delivery %+v, want the card and the job's thread", d)
	}
	h.bot.cards.Forget()
	h.bot.threads.Clear()
	second := colorQuestion()
	second.JobID, second.QuestionID, second.Question = "job-again", "q-second", "Which size should the cover be?"
	ev := asked(second)
	ev.Threads = []bridge.MessageRef{{Platform: bridge.PlatformDiscord, Channel: channelA, Thread: d.Message.Thread}}
	h.publishEvent(ev)
	h.waitCard(second.Question)
	if n := len(h.fake.requests("POST", "/channels/"+d.Message.Thread+"/messages")); n != 1 {
		t.Fatalf("%d posts in the job's thread, want the second card", n)
	}
	inChannel := 0
	for _, r := range h.fake.requests("POST", "/channels/"+channelA+"/messages") {
		if r.Path == "/channels/"+channelA+"/messages" {
			inChannel++
		}
	}
	if inChannel != 1 {
		t.Fatalf("%d posts in the channel, want only the first card", inChannel)
	}
}

// TestSeenLifetimes checks a handled interaction is remembered a day, and
// a refusal or reminder sent as long as its event may come back (the
// events stream's seven days and one more).
func TestSeenLifetimes(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	ctx := context.Background()
	if ok, err := h.bot.markSeen(ctx, seenKey("i", "1400000000000000001"), interactionTTL); err != nil || !ok {
		t.Fatalf("interaction: %v, %v", ok, err)
	}
	if ok, err := h.bot.markSeen(ctx, seenKey("dm", "ob-1", "acme", "job-1", "q-1", kevin.ID), 0); err != nil || !ok {
		t.Fatalf("reminder: %v, %v", ok, err)
	}
	if ok, err := h.bot.markSeen(ctx, seenKey("dm", "ob-1", "acme", "job-1", "q-1", kevin.ID), 0); err != nil || ok {
		t.Fatalf("the same reminder again: %v, %v; want seen", ok, err)
	}
	s, err := h.nats.JS.Stream(ctx, "KV_"+SeenBucket)
	if err != nil {
		t.Fatal(err)
	}
	if age := s.CachedInfo().Config.MaxAge; age != 192*time.Hour {
		t.Errorf("seen bucket keeps entries %v, want 192h (8 days)", age)
	}
	ttlOf := func(key string) string { return testenv.KVTTL(t, h.nats, SeenBucket, key) }
	if ttl := ttlOf(seenKey("i", "1400000000000000001")); ttl != "24h0m0s" {
		t.Errorf("interaction TTL %q, want 24h0m0s", ttl)
	}
	if ttl := ttlOf(seenKey("dm", "ob-1", "acme", "job-1", "q-1", kevin.ID)); ttl != "" {
		t.Errorf("reminder TTL %q, want the bucket's", ttl)
	}
}

// TestCardWhosePostWentUnansweredIsSettled checks a card Discord created
// but whose answer the bot never got (the connection dropped) is settled
// when the question ends before the asked event comes back: the retry
// finds the card in Discord and edits it, rather than leaving it with live
// buttons. A post Discord never made is not made then either.
func TestCardWhosePostWentUnansweredIsSettled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		inThread bool // the job's second question, posted in its thread
		status   int  // what the lost post's answer was: 0 a dropped connection
		stored   bool // whether Discord made the message
	}{
		{name: "first question, connection dropped", stored: true},
		{name: "in the job's thread, connection dropped", inThread: true, stored: true},
		{name: "not made, 500", status: 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := start(t, harnessOptions{tweak: func(b *Bot) {
				// The first try's retry comes late enough for the outcome
				// to be handled before it.
				b.backoff = func(attempt uint64) time.Duration {
					if attempt == 1 {
						return 2 * time.Second
					}
					return 20 * time.Millisecond
				}
			}})
			q := colorQuestion()
			where := channelA
			if tc.inThread {
				first := colorQuestion()
				first.QuestionID = "q-0"
				h.publishEvent(asked(first))
				where = h.posted(channelA, 1)["id"].(string) // the job's thread
				h.waitDelivery()
			}
			h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/" + where + "/messages", Status: tc.status, Code: 0, Lost: tc.stored, Times: 1})
			h.publishEvent(asked(q))
			testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
				if !strings.Contains(h.logs.String(), "event failed; will retry") {
					return fmt.Errorf("the post has not failed yet")
				}
				return nil
			})
			var cardID string
			h.fake.mu.Lock()
			for id, m := range h.fake.msgs {
				if m["channel_id"] == where && strings.Contains(fmt.Sprint(m["components"]), ":q-1:") {
					cardID = id
				}
			}
			h.fake.mu.Unlock()
			if (cardID != "") != tc.stored {
				t.Fatalf("card in Discord: %q, want one: %v", cardID, tc.stored)
			}
			h.publishEvent(bridge.Event{Type: bridge.EventAnswered, Tenant: "acme", JobID: q.JobID, QuestionID: q.QuestionID,
				TaskVersion: q.TaskVersion, By: "console:ana", ByName: "ana", Via: "console", Answer: json.RawMessage(`"blue"`),
				AnswerText: "blue", Text: "The answer: blue", At: time.Now().UTC()})
			if tc.stored {
				h.fake.settledCard(t, cardID, "blue")
				return
			}
			// Nothing to settle: once the retry has looked, no card is posted.
			testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
				if len(h.fake.requests("GET", "/channels/"+where+"/messages")) == 0 {
					return fmt.Errorf("the retry has not looked for the card yet")
				}
				return nil
			})
			h.markerEvent()
			posts := 0
			for _, r := range h.fake.requests("POST", "/channels/"+where+"/messages") {
				if r.Path == "/channels/"+where+"/messages" && strings.Contains(string(r.Body), ":q-1:") {
					posts++
				}
			}
			if posts != 1 {
				t.Fatalf("%d posts of the question, want only the one that failed: a settled question is not posted", posts)
			}
		})
	}
}

// cardsOf returns the ids of the messages in channel posted as q's card,
// settled or not, oldest first. They are told by the nonce the bot posts a
// card with: a settled card has lost the components that name q.
func (f *fakeDiscord) cardsOf(channel string, q bridge.Question) []string {
	nonce := nonceFor("card", q.Tenant, q.JobID, q.QuestionID, fmt.Sprint(q.TaskVersion))
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id, m := range f.msgs {
		if m["channel_id"] == channel && m["nonce"] == nonce {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// TestQuestionEndedAfterALostPostSettlesItsCard checks a card Discord
// stored while the bot lost its answer (the connection dropped on the last
// delivery of the asked event, the earlier ones refused with a 500, so the
// bot reported the post failed) does not keep live buttons once its
// question ends: when Discord was the only
// platform the runtime fails the question (delivery_failed, state failed),
// and the card says so; when the question still waited elsewhere and was
// answered there, the card says that. Every click on a live card would be
// refused as no longer pending.
func TestQuestionEndedAfterALostPostSettlesItsCard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		inThread bool // the job's second question, posted in its thread
		slack    bool // Slack is to show it too (it never reports here)
		// Only the first try makes the card; the later ones, minutes
		// after it, get a 500 and make nothing, and Discord lists no
		// messages until the bot has given up.
		firstOnly bool
	}{
		{name: "discord only, first question"},
		{name: "discord only, in the job's thread", inThread: true},
		{name: "answered elsewhere", slack: true},
		{name: "made minutes before the last try", firstOnly: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			platforms := map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}
			if tc.slack {
				platforms[bridge.PlatformSlack] = bridge.Platform{DefaultChannel: "C0123"}
			}
			env := testenv.Start(t, testenv.Options{Platforms: platforms})
			var skew atomic.Int64
			h := start(t, harnessOptions{nats: env.NATS, tweak: func(b *Bot) {
				if !tc.firstOnly {
					return
				}
				// The retries come five minutes after the first try, as
				// after long waits (429s, timeouts), by the bot's clock.
				b.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
				b.backoff = func(uint64) time.Duration {
					skew.Store(int64(5 * time.Minute))
					return 20 * time.Millisecond
				}
			}})
			where := channelA
			if tc.inThread {
				first := colorQuestion()
				first.QuestionID = "q-0"
				ask(t, env, first)
				where = h.posted(channelA, 1)["id"].(string) // the job's thread
				h.waitDelivery()
			}
			posts := "/channels/" + where + "/messages"
			if tc.firstOnly {
				h.fake.failOn(failRule{Method: "POST", Prefix: posts, Lost: true, Times: 1})
				h.fake.failOn(failRule{Method: "POST", Prefix: posts, Status: 500, Times: -1})
				h.fake.failOn(failRule{Method: "GET", Prefix: posts, Status: 500, Times: -1})
			} else {
				// The last try makes the card, and its answer is lost.
				h.fake.failOn(failRule{Method: "POST", Prefix: posts, Status: 500, Times: maxEventAttempts - 1})
				h.fake.failOn(failRule{Method: "POST", Prefix: posts, Lost: true, Times: -1})
			}
			q := colorQuestion()
			ask(t, env, q)
			var d bridge.Delivery
			testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
				for _, x := range h.deliveriesNow() {
					if x.QuestionID == q.QuestionID {
						d = x
						return nil
					}
				}
				return fmt.Errorf("no delivery report for %s yet", q.QuestionID)
			})
			if d.OK || d.Failure == nil || d.Failure.Code != bridge.CodeSourceUnreliable {
				t.Fatalf("delivery %+v (failure %+v), want SOURCE_UNRELIABLE", d, d.Failure)
			}
			h.fake.clearRules() // Discord is well again
			cards := h.fake.cardsOf(where, q)
			if len(cards) != 1 {
				t.Fatalf("%d cards in Discord, want the one it made", len(cards))
			}
			want := "Failed: askbridge could not deliver this question"
			if tc.slack {
				// It still waits for Slack: answered in the console, by one of its answerers.
				if err := env.Attempt(context.Background(), bridge.AnswerAttempt{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID,
					TaskVersion: q.TaskVersion, AttemptID: "console-1", Action: bridge.ActionAnswer, Answer: json.RawMessage(`"blue"`),
					By: "discord:" + kevin.ID, ByName: "kevin", Via: "console"}); err != nil {
					t.Fatal(err)
				}
				want = "Answered by <@" + kevin.ID + ">: blue"
			}
			res := await(t, env, q)
			if tc.slack && res.Outcome != bridge.OutcomeAnswered || !tc.slack && (res.Outcome != bridge.OutcomeFailed || res.Code != bridge.CodeSourceUnreliable) {
				t.Fatalf("resume = %+v", res)
			}
			h.fake.settledCard(t, cards[0], want)
			testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
				c, err := h.bot.loadCard(h.ctx, q.Tenant, q.JobID, q.QuestionID, q.TaskVersion)
				if err != nil || c == nil || c.MessageID != cards[0] || !c.Edited {
					return fmt.Errorf("card record %+v (%v), want the card found and edited", c, err)
				}
				return nil
			})
		})
	}
}

// TestRefusedPostIsNotLookedFor checks a card Discord refused outright
// (403: it made nothing) is not looked for when its question fails: only
// a post whose answer was lost may have left a card.
func TestRefusedPostIsNotLookedFor(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/" + channelA + "/messages", Status: 403, Code: 50013, Times: -1})
	q := colorQuestion()
	ask(t, env, q)
	if res := await(t, env, q); res.Outcome != bridge.OutcomeFailed || res.Code != bridge.CodeAccessDenied {
		t.Fatalf("resume = %+v", res)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		c, err := h.bot.loadCard(h.ctx, q.Tenant, q.JobID, q.QuestionID, q.TaskVersion)
		if err != nil || c == nil || c.Outcome == nil || c.Outcome.Type != bridge.EventDeliveryFailed {
			return fmt.Errorf("card %+v (%v), want the failure remembered", c, err)
		}
		return nil
	})
	if got := h.fake.requests("GET", "/channels/"); len(got) != 0 {
		t.Fatalf("%d reads of channel messages, want none: Discord said it made nothing", len(got))
	}
}

// TestRetryAdoptsTheCardAnEarlierTryMade checks a retried asked event
// whose earlier try Discord carried out, its answer lost, does not post a
// second card once Discord has forgotten the nonce (it remembers one a
// few minutes): the retry finds the card, records and reports it, and
// starts the job's thread from it when it is the job's first.
func TestRetryAdoptsTheCardAnEarlierTryMade(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		inThread bool
		status   int  // the lost answer: 0 a dropped connection
		stored   bool // whether Discord made the message
	}{
		{name: "first question, connection dropped", stored: true},
		{name: "in the job's thread, 500", inThread: true, status: 500, stored: true},
		{name: "not made, 500", status: 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := api.newBot(t)
			h := start(t, harnessOptions{fake: fake, tweak: func(b *Bot) {
				b.backoff = func(attempt uint64) time.Duration {
					if attempt == 1 {
						fake.forgetNonces() // the retry comes after Discord's nonce memory
					}
					return 20 * time.Millisecond
				}
			}})
			q := colorQuestion()
			where := channelA
			if tc.inThread {
				first := colorQuestion()
				first.QuestionID = "q-0"
				h.publishEvent(asked(first))
				where = h.posted(channelA, 1)["id"].(string) // the job's thread
				h.waitDelivery()
			}
			h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/" + where + "/messages", Status: tc.status, Lost: tc.stored, Times: 1})
			h.publishEvent(asked(q))
			var d bridge.Delivery
			testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
				for _, x := range h.deliveriesNow() {
					if x.QuestionID == q.QuestionID {
						d = x
						return nil
					}
				}
				return fmt.Errorf("no delivery report for %s yet", q.QuestionID)
			})
			cards := h.fake.cardsOf(where, q)
			if len(cards) != 1 {
				t.Fatalf("%d cards of the question in Discord, want 1", len(cards))
			}
			if !d.OK || d.Message == nil || d.Message.MessageID != cards[0] || d.Message.Channel != where {
				t.Fatalf("delivery %+v (message %+v), want the card %s in %s", d, d.Message, cards[0], where)
			}
			if !tc.inThread {
				if d.Message.Thread != cards[0] {
					t.Errorf("delivery thread %q, want the job's thread started from the card %s", d.Message.Thread, cards[0])
				}
			} else if d.Message.Thread != where {
				t.Errorf("delivery thread %q, want the job's thread %s", d.Message.Thread, where)
			}
		})
	}
}

// TestRestartedBotFindsTheJobsThreadBeforeTheRuntimeKnowsIt checks a bot
// stopped after it started a job's thread, before the runtime learned the
// thread from the card's report: the next bot puts the job's next question
// in that thread, named by the threads bucket, rather than start a second
// one, whether the next bot starts after the thread was named (a restart)
// or ran beside the first all along (a replica following the bucket).
func TestRestartedBotFindsTheJobsThreadBeforeTheRuntimeKnowsIt(t *testing.T) {
	t.Parallel()
	for _, beside := range []bool{false, true} {
		name := map[bool]string{false: "restart", true: "replica beside"}[beside]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testNextBotFindsTheJobsThread(t, beside)
		})
	}
}

func testNextBotFindsTheJobsThread(t *testing.T, beside bool) {
	h := start(t, harnessOptions{})
	var next *Bot
	if beside {
		// The first bot holds the events' pin once it has handled one;
		// the second, started after, only follows the bucket.
		warm := colorQuestion()
		warm.JobID = "job-warm"
		h.publishEvent(asked(warm))
		h.waitDelivery()
		next = h.secondBot(t)
	}
	first := colorQuestion()
	first.JobID, first.QuestionID = "job-fresh", "q-first"
	h.publishEvent(asked(first))
	var d bridge.Delivery
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, d = range h.deliveriesNow() {
			if d.QuestionID == first.QuestionID {
				return nil
			}
		}
		return fmt.Errorf("no delivery report of the first question yet")
	})
	if d.Message == nil || d.Message.Thread == "" {
		t.Fatalf("first delivery %+v, want the card and the job's thread", d)
	}
	// The bucket's record is written without waiting for it.
	key := jobKey("acme", "job-fresh", channelA)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		_, err := h.bot.hints.Get(context.Background(), threadHintPrefix+key)
		return err
	})
	h.stopBot()
	if beside {
		testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
			if _, ok := next.hinted.Get(key); !ok {
				return fmt.Errorf("the replica beside has not followed the thread named in the bucket")
			}
			return nil
		})
	} else {
		next = h.secondBot(t)
	}
	inChannel := func() int {
		n := 0
		for _, r := range h.fake.requests("POST", "/channels/"+channelA+"/messages") {
			if r.Path == "/channels/"+channelA+"/messages" {
				n++
			}
		}
		return n
	}
	cards := inChannel()
	second := colorQuestion()
	second.JobID, second.QuestionID, second.Question = "job-fresh", "q-second", "Which size should the cover be?"
	h.publishEvent(asked(second)) // naming no thread
	h.waitCard(second.Question)
	if n := len(h.fake.requests("POST", "/channels/"+d.Message.Thread+"/messages")); n != 1 {
		t.Fatalf("%d posts in the job's thread, want the second card", n)
	}
	if n := inChannel(); n != cards {
		t.Fatalf("%d posts in the channel after the second question, want %d: it started a second thread", n, cards)
	}
	if th, ok := next.threads.Get(key); !ok || th != d.Message.Thread {
		t.Fatalf("the next bot remembers thread %q (%v), want %s", th, ok, d.Message.Thread)
	}
}
