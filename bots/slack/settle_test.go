package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// answered clicks the card of q and returns the answered event.
func answered(t *testing.T, h *harness, events *collector[bridge.Event], q *bridge.Question, trigger string) bridge.Event {
	t.Helper()
	card := h.posted(t, q.QuestionID)
	ts := h.cardTS(t, q)
	if resp, body := h.interact(h.fake.click("U0KEV", "kevin", trigger, "C0123", ts, actionsBlock(card), "choice.1", "blue", "")); resp.StatusCode != http.StatusOK {
		t.Fatalf("click: %d %s", resp.StatusCode, body)
	}
	var ev bridge.Event
	testenv.CheckFor(t, wait, tick, func() error {
		for _, e := range events.All() {
			if e.Type == bridge.EventAnswered && e.QuestionID == q.QuestionID {
				ev = e
				return nil
			}
		}
		return fmt.Errorf("no answered event for %s", q.QuestionID)
	})
	return ev
}

func updatesOf(h *harness, ts string) int {
	n := 0
	for _, c := range h.fake.Calls("chat.update") {
		if c.Str("ts") == ts {
			n++
		}
	}
	return n
}

// TestSettledCardUpdatedOnce checks a posted card is updated in Slack
// once and recorded settled and updated, and that the event delivered
// again (as after a crash) changes nothing.
func TestSettledCardUpdatedOnce(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	events := collect[bridge.Event](t, env.NATS, bridge.PrefixEvent+".>")
	q := question("job-so", "q-so")
	publishQuestion(t, env, q)
	ev := answered(t, h, events, q, "trig-so")
	ts := h.cardTS(t, q)
	h.updated(t, ts, "Answered by @kevin: blue")
	var rec *card
	testenv.CheckFor(t, wait, tick, func() error {
		var err error
		rec, err = h.bot.loadCard(context.Background(), blockkit.RefOf(q))
		if err != nil || rec == nil || !rec.Updated {
			return fmt.Errorf("card record %+v (%v), want it updated", rec, err)
		}
		return nil
	})
	if rec.Outcome != "Answered by @kevin: blue" || rec.TS != ts {
		t.Fatalf("card record %+v", rec)
	}
	if err := h.bot.onSettled(context.Background(), &ev, false); err != nil {
		t.Fatalf("event again: %v", err)
	}
	if n := updatesOf(h, ts); n != 1 {
		t.Fatalf("%d chat.update calls of the card, want 1", n)
	}
}

// TestSettledCardGoneFromSlack checks a card Slack no longer has is
// recorded settled but not updated, after one try.
func TestSettledCardGoneFromSlack(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	events := collect[bridge.Event](t, env.NATS, bridge.PrefixEvent+".>")
	q := question("job-sg", "q-sg")
	publishQuestion(t, env, q)
	h.posted(t, q.QuestionID)
	ts := h.cardTS(t, q)
	h.fake.fail("chat.update", http.StatusOK, nil, `{"ok":false,"error":"message_not_found"}`)
	answered(t, h, events, q, "trig-sg")
	var rec *card
	testenv.CheckFor(t, wait, tick, func() error {
		var err error
		rec, err = h.bot.loadCard(context.Background(), blockkit.RefOf(q))
		if err != nil || rec == nil || rec.Outcome == "" {
			return fmt.Errorf("card record %+v (%v), want its outcome", rec, err)
		}
		return nil
	})
	if rec.Updated || rec.Outcome != "Answered by @kevin: blue" {
		t.Fatalf("card record %+v, want the outcome and not updated", rec)
	}
	if n := updatesOf(h, ts); n != 1 {
		t.Fatalf("%d chat.update calls of the card, want 1", n)
	}
}

// TestRecordLifetimes checks a waiting card's record lives as long as the
// bucket keeps anything, while a settled card, a job's thread and a
// one-off side effect are given their own, shorter lives: JetStream keeps
// every key in memory, and a settled record is needed only while its
// events may be read again.
func TestRecordLifetimes(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	events := collect[bridge.Event](t, env.NATS, bridge.PrefixEvent+".>")
	q := question("job-life", "q-life")
	publishQuestion(t, env, q)
	h.posted(t, q.QuestionID)
	key := cardKey(blockkit.RefOf(q))
	testenv.CheckFor(t, wait, tick, func() error {
		rec, err := h.bot.loadCard(context.Background(), blockkit.RefOf(q))
		if err != nil || rec == nil || rec.TS == "" {
			return fmt.Errorf("card record %+v (%v), want it posted", rec, err)
		}
		return nil
	})
	if ttl := testenv.KVTTL(t, env.NATS, KVBucket, key); ttl != "" {
		t.Errorf("waiting card record has TTL %q, want the bucket's", ttl)
	}
	if ttl := testenv.KVTTL(t, env.NATS, KVBucket, threadKey("acme", "job-life", "C0123")); ttl != "720h0m0s" {
		t.Errorf("thread record TTL %q, want 720h0m0s (30 days)", ttl)
	}

	answered(t, h, events, q, "trig-life")
	testenv.CheckFor(t, wait, tick, func() error {
		rec, err := h.bot.loadCard(context.Background(), blockkit.RefOf(q))
		if err != nil || rec == nil || !rec.Updated {
			return fmt.Errorf("card record %+v (%v), want it updated", rec, err)
		}
		return nil
	})
	if ttl := testenv.KVTTL(t, env.NATS, KVBucket, key); ttl != "192h0m0s" {
		t.Errorf("settled card record TTL %q, want 192h0m0s (8 days)", ttl)
	}

	once := onceKey("test", "life")
	if ok, err := h.bot.once(context.Background(), once); err != nil || !ok {
		t.Fatalf("once: %v, %v", ok, err)
	}
	if ttl := testenv.KVTTL(t, env.NATS, KVBucket, once); ttl != "192h0m0s" {
		t.Errorf("one-off record TTL %q, want 192h0m0s (8 days)", ttl)
	}
}

// TestJobThreadRecordRenewedOnUse checks a job's thread record is written
// again, with its TTL, when the job asks in a thread whose record is older
// than threadRefresh, so the thread lives 30 days from its last question;
// and not rewritten on every question.
func TestJobThreadRecordRenewedOnUse(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	ctx := context.Background()
	b, err := New(ctx, Options{NATS: n, BotToken: "xoxb-test-token", SigningSecret: testSecret, APIURL: fake.APIURL(),
		DefaultChannel: "C0123", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	q := question("job-renew", "q-renew")
	key := threadKey("acme", "job-renew", "C0123")
	revision := func() uint64 {
		t.Helper()
		e, err := b.kv.Get(ctx, key)
		if err != nil {
			t.Fatalf("thread record: %v", err)
		}
		return e.Revision()
	}
	ts, err := b.jobThread(ctx, q, "C0123", false)
	if err != nil || ts == "" {
		t.Fatalf("open the thread: %q, %v", ts, err)
	}
	opened := revision()
	if again, err := b.jobThread(ctx, q, "C0123", false); err != nil || again != ts || revision() != opened {
		t.Fatalf("a fresh record was rewritten: %q, %v, revision %d after %d", again, err, revision(), opened)
	}
	b.threadRefresh = 0 // as if the record were older than a day
	if again, err := b.jobThread(ctx, q, "C0123", false); err != nil || again != ts {
		t.Fatalf("thread %q, %v; want %q", again, err, ts)
	}
	if renewed := revision(); renewed <= opened {
		t.Fatalf("revision %d after %d: the old record was not renewed", renewed, opened)
	}
	if ttl := testenv.KVTTL(t, n, KVBucket, key); ttl != "720h0m0s" {
		t.Errorf("renewed thread record TTL %q, want 720h0m0s", ttl)
	}
	if posts := len(fake.Calls("chat.postMessage")); posts != 1 {
		t.Errorf("%d thread parents posted, want 1", posts)
	}
}

// TestSettledCardKeepsItsTextWhenItsRecordIsLost checks a card whose KV
// record is gone (the bucket made anew) keeps its question's text when the
// question settles: the event names the card but not the question, which
// the adapter asks the runtime for.
func TestSettledCardKeepsItsTextWhenItsRecordIsLost(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	q := question("job-lost", "q-lost")
	q.Timeout = "1h"
	publishQuestion(t, env, q)
	card := h.posted(t, q.QuestionID)
	ts := h.cardTS(t, q)
	// The runtime knows where the card is, so its events name it.
	testenv.CheckFor(t, wait, tick, func() error {
		req, _ := json.Marshal(bridge.ShowRequest{Tenant: "acme", JobID: q.JobID, QuestionID: q.QuestionID})
		msg, err := env.NATS.Conn.Request(bridge.APIShow, req, wait)
		if err != nil {
			return err
		}
		var reply bridge.ShowReply
		if err := json.Unmarshal(msg.Data, &reply); err != nil || reply.Question == nil || len(reply.Question.Messages) == 0 {
			return fmt.Errorf("show: %s", msg.Data)
		}
		return nil
	})
	if err := h.bot.kv.Delete(context.Background(), cardKey(blockkit.RefOf(q))); err != nil {
		t.Fatal(err)
	}
	if resp, body := h.interact(h.fake.click("U0KEV", "kevin", "trig-lost", "C0123", ts, actionsBlock(card), "choice.1", "blue", "")); resp.StatusCode != http.StatusOK {
		t.Fatalf("click: %d %s", resp.StatusCode, body)
	}
	up := h.updated(t, ts, "Answered by @kevin: blue")
	if s := up.Str("blocks"); !strings.Contains(s, q.Question) || !strings.Contains(s, q.WhyItMatters) || strings.Contains(s, "not available") {
		t.Fatalf("the settled card lost its question's text: %s", s)
	}
}

// TestFailedQuestionSettlesTheCardsSlackAccepted checks a question that
// failed because the adapter gave up on its card, although Slack had
// accepted the posts whose answers were lost (and the lookup for them
// failed too), does not keep cards with live buttons: once the runtime
// says the question failed, every copy loses its controls and says so.
func TestFailedQuestionSettlesTheCardsSlackAccepted(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	h.bot.retry.Tries = 2
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	const parent = "1600000000.000001"
	fake.hold(fakeMsg{Channel: "C0123", TS: parent, Text: "the job's thread"})
	q := question("job-df", "q-df")
	q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0123", ThreadTS: parent}}
	ev := askedEvent(q)
	for range 2 {
		fake.failAfter("chat.postMessage", 500, `{"ok":false,"error":"internal_error"}`)
	}
	for range 2 {
		fake.fail("conversations.replies", 500, nil, `{"ok":false,"error":"internal_error"}`)
	}
	// The event's last try: the failure is reported, not retried.
	if err := h.bot.handleEvent(context.Background(), &ev, true); err != nil {
		t.Fatal(err)
	}
	d := deliveredTS(t, n, deliveries, "q-df")
	if d.OK || d.Failure == nil || d.Failure.Code != bridge.CodeSourceUnreliable {
		t.Fatalf("delivery %+v %+v, want SOURCE_UNRELIABLE", d, d.Failure)
	}
	copies := fake.marked(questionMetaJSON("job-df", "q-df", 1))
	if len(copies) != 2 {
		t.Fatalf("%d cards in Slack, want the 2 it accepted", len(copies))
	}
	// The runtime fails the question, as no platform showed it.
	publishEvent(t, n, bridge.Event{Type: bridge.EventDeliveryFailed, Tenant: "acme", JobID: "job-df", QuestionID: "q-df", TaskVersion: 1,
		Via: bridge.PlatformSlack, Failure: d.Failure, State: bridge.StateFailed,
		Text: "The question could not be shown to anyone: " + d.Failure.OperatorMessage})
	for _, c := range copies {
		up := h.updated(t, c.TS, "Failed: askbridge could not deliver this question")
		if s := up.Str("blocks"); !strings.Contains(s, q.Question) {
			t.Errorf("the settled card lost its text: %s", s)
		}
	}
	// The record is written after the updates it records.
	testenv.CheckFor(t, wait, tick, func() error {
		rec, err := h.bot.loadCard(context.Background(), blockkit.Ref{Tenant: "acme", JobID: "job-df", QuestionID: "q-df", Version: 1})
		if err != nil || rec == nil || !rec.Updated {
			return fmt.Errorf("card record %+v (%v), want it settled and updated", rec, err)
		}
		return nil
	})
}
