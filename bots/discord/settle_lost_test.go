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

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// Cards whose post went unanswered or failed: settled, adopted or posted
// once, never left with live buttons or shown twice.

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
