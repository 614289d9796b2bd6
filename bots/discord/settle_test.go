package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestOutcomeEditedOnceAndRecorded checks a posted card is edited once
// and recorded with its outcome and as edited, and that the same outcome
// delivered again (as after a crash, under a new message id) edits
// nothing.
func TestOutcomeEditedOnceAndRecorded(t *testing.T) {
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
	checkFor(t, 10*time.Second, func() error {
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
	checkFor(t, 10*time.Second, func() error {
		c, err := h.bot.loadCard(context.Background(), "acme", marker.JobID, marker.QuestionID, marker.TaskVersion)
		if err != nil || c == nil || c.MessageID == "" {
			return fmt.Errorf("marker not posted yet (%v)", err)
		}
		return nil
	})
	if n := len(fake.requests("PATCH", "/channels/"+channelA+"/messages/"+id)); n != 1 {
		t.Fatalf("%d edits of the card, want 1", n)
	}
}

// TestRecordLifetimes checks a waiting card's record lives as long as the
// bucket keeps anything, while a settled card and a job's thread are given
// their own, shorter lives: JetStream keeps every key in memory.
func TestRecordLifetimes(t *testing.T) {
	h := start(t, harnessOptions{})
	q := colorQuestion()
	q.JobID, q.QuestionID = "job-life", "q-life"
	h.publishEvent(asked(q))
	h.posted(channelA, 1)
	key := cardKey("acme", q.JobID, q.QuestionID, q.TaskVersion)
	checkFor(t, 10*time.Second, func() error {
		c, err := h.bot.loadCard(context.Background(), "acme", q.JobID, q.QuestionID, q.TaskVersion)
		if err != nil || c == nil || c.MessageID == "" {
			return fmt.Errorf("card record %+v (%v), want it posted", c, err)
		}
		return nil
	})
	if ttl := testenv.KVTTL(t, h.nats, RefsBucket, key); ttl != "" {
		t.Errorf("waiting card record has TTL %q, want the bucket's", ttl)
	}
	// Short ids need no card index.
	keys, err := h.bot.refs.ListKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for k := range keys.Keys() {
		if strings.HasPrefix(k, "ix.") {
			t.Errorf("card index %s written for a card whose custom ids carry the ids", k)
		}
	}
	checkFor(t, 10*time.Second, func() error {
		if _, err := h.bot.refs.Get(context.Background(), jobKey("acme", q.JobID, channelA)); err != nil {
			return fmt.Errorf("job thread record: %v", err)
		}
		return nil
	})
	if ttl := testenv.KVTTL(t, h.nats, RefsBucket, jobKey("acme", q.JobID, channelA)); ttl != "720h0m0s" {
		t.Errorf("job thread record TTL %q, want 720h0m0s (30 days)", ttl)
	}
	h.publishEvent(bridge.Event{Type: bridge.EventAnswered, Tenant: "acme", JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion,
		By: "discord:" + kevin.ID, ByName: "kevin", Via: "discord", Answer: json.RawMessage(`"blue"`), AnswerText: "blue",
		Text: "The answer: blue", At: time.Now().UTC().Truncate(time.Millisecond)})
	checkFor(t, 10*time.Second, func() error {
		c, err := h.bot.loadCard(context.Background(), "acme", q.JobID, q.QuestionID, q.TaskVersion)
		if err != nil || c == nil || c.Outcome == nil || !c.Edited {
			return fmt.Errorf("card record %+v (%v), want the outcome, edited", c, err)
		}
		return nil
	})
	if ttl := testenv.KVTTL(t, h.nats, RefsBucket, key); ttl != "192h0m0s" {
		t.Errorf("settled card record TTL %q, want 192h0m0s (8 days)", ttl)
	}
}

// TestJobThreadRecordRenewedOnUse checks a job's thread record older than
// threadRefresh is written again, with its TTL, when the job asks in the
// thread, so the thread lives 30 days from its last question.
func TestJobThreadRecordRenewedOnUse(t *testing.T) {
	h := start(t, harnessOptions{tweak: func(b *Bot) { b.threadRefresh = 0 }})
	ctx := context.Background()
	key := jobKey("acme", "job-renew", channelA)
	first := colorQuestion()
	first.JobID, first.QuestionID = "job-renew", "q-first"
	h.publishEvent(asked(first))
	var opened uint64
	checkFor(t, 10*time.Second, func() error {
		e, err := h.bot.refs.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("job thread record: %v", err)
		}
		opened = e.Revision()
		return nil
	})
	second := colorQuestion()
	second.JobID, second.QuestionID, second.Question = "job-renew", "q-second", "Which size should the cover be?"
	h.publishEvent(asked(second))
	h.waitCard(second.Question)
	e, err := h.bot.refs.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if e.Revision() <= opened {
		t.Fatalf("revision %d after %d: the record was not renewed when the job asked again", e.Revision(), opened)
	}
	if ttl := testenv.KVTTL(t, h.nats, RefsBucket, key); ttl != "720h0m0s" {
		t.Errorf("renewed job thread record TTL %q, want 720h0m0s", ttl)
	}
}

// TestSeenLifetimes checks a handled interaction is remembered a day, and
// a refusal or reminder sent as long as its event may come back (the
// events stream's seven days and one more).
func TestSeenLifetimes(t *testing.T) {
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
			fake.failOn(failRule{Method: "POST", Prefix: "/channels/" + where + "/messages", Status: tc.status, Code: 0, Lost: tc.stored, Times: 1})
			h.publishEvent(asked(q))
			checkFor(t, 10*time.Second, func() error {
				if !strings.Contains(h.logs.String(), "event failed; will retry") {
					return fmt.Errorf("the post has not failed yet")
				}
				return nil
			})
			var cardID string
			fake.mu.Lock()
			for id, m := range fake.msgs {
				if m["channel_id"] == where && strings.Contains(fmt.Sprint(m["components"]), ":q-1:") {
					cardID = id
				}
			}
			fake.mu.Unlock()
			if (cardID != "") != tc.stored {
				t.Fatalf("card in Discord: %q, want one: %v", cardID, tc.stored)
			}
			h.publishEvent(bridge.Event{Type: bridge.EventAnswered, Tenant: "acme", JobID: q.JobID, QuestionID: q.QuestionID,
				TaskVersion: q.TaskVersion, By: "console:ana", ByName: "ana", Via: "console", Answer: json.RawMessage(`"blue"`),
				AnswerText: "blue", Text: "The answer: blue", At: time.Now().UTC()})
			if tc.stored {
				settledCard(t, cardID, "blue")
				return
			}
			// Nothing to settle: once the retry has looked, no card is posted.
			checkFor(t, 10*time.Second, func() error {
				c, err := h.bot.loadCard(h.ctx, q.Tenant, q.JobID, q.QuestionID, q.TaskVersion)
				if err != nil || c == nil || c.Claim != "" {
					return fmt.Errorf("card record %+v (%v), want the claim given up", c, err)
				}
				return nil
			})
			h.markerEvent()
			posts := 0
			for _, r := range fake.requests("POST", "/channels/"+where+"/messages") {
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
