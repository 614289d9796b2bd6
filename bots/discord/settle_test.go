package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
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
		refs, err := h.nats.JS.KeyValue(context.Background(), RefsBucket)
		if err != nil {
			t.Fatal(err)
		}
		lister, err := refs.ListKeys(context.Background())
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
