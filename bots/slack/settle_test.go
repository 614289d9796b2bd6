package slack

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bots/engine"
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
// once, and that the event delivered again changes nothing.
func TestSettledCardUpdatedOnce(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	events := collect[bridge.Event](t, env.NATS, bridge.PrefixEvent+".>")
	q := question("job-so", "q-so")
	publishQuestion(t, env, q)
	ev := answered(t, h, events, q, "trig-so")
	ts := h.cardTS(t, q)
	h.updated(t, ts, "Answered by @kevin: blue")
	var rec *rememberedCard
	testenv.CheckFor(t, wait, tick, func() error {
		var err error
		rec, err = h.bot.loadCard(context.Background(), blockkit.RefOf(q))
		if err != nil || rec == nil || !rec.Updated {
			return fmt.Errorf("card %+v (%v), want it updated", rec, err)
		}
		return nil
	})
	if rec.Outcome != "Answered by @kevin: blue" || rec.TS != ts {
		t.Fatalf("card %+v", rec)
	}
	if err := h.bot.cards.Ended(context.Background(), &ev, engine.Delivery{Attempt: 2}); err != nil {
		t.Fatalf("event again: %v", err)
	}
	if n := updatesOf(h, ts); n != 1 {
		t.Fatalf("%d chat.update calls of the card, want 1", n)
	}
}

// TestSettledCardGoneFromSlack checks a card Slack no longer has is
// remembered settled but not updated, after one try.
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
	var rec *rememberedCard
	testenv.CheckFor(t, wait, tick, func() error {
		var err error
		rec, err = h.bot.loadCard(context.Background(), blockkit.RefOf(q))
		if err != nil || rec == nil || rec.Outcome == "" {
			return fmt.Errorf("card record %+v (%v), want its outcome", rec, err)
		}
		// The outcome is known before the update is tried.
		if updatesOf(h, ts) == 0 {
			return fmt.Errorf("the card's update was not tried yet")
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

// TestWaitingQuestionLeavesNoRecord checks the adapter keeps nothing in
// its bucket for a question it showed, before or after it is settled:
// JetStream keeps every key in memory, and which message shows which
// question is the runtime's record. A one-off side effect's record lives
// 8 days.
func TestWaitingQuestionLeavesNoRecord(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	events := collect[bridge.Event](t, env.NATS, bridge.PrefixEvent+".>")
	q := question("job-life", "q-life")
	publishQuestion(t, env, q)
	h.posted(t, q.QuestionID)
	if k := lastingKeys(t, env.NATS.JS, h.bot); len(k) != 0 {
		t.Fatalf("the bucket holds %v for a waiting question, want nothing but claims that go on their own", k)
	}
	answered(t, h, events, q, "trig-life")
	h.updated(t, h.cardTS(t, q), "Answered by @kevin: blue")
	if k := lastingKeys(t, env.NATS.JS, h.bot); len(k) != 0 {
		t.Fatalf("the bucket holds %v for a settled question, want nothing but claims that go on their own", k)
	}
	once := onceKey("test", "life")
	if ok, err := h.bot.once(context.Background(), once); err != nil || !ok {
		t.Fatalf("once: %v, %v", ok, err)
	}
	if ttl := testenv.KVTTL(t, env.NATS, KVBucket, once); ttl != "192h0m0s" {
		t.Errorf("one-off record TTL %q, want 192h0m0s (8 days)", ttl)
	}
}

// TestRestartedAdapterAsksInTheJobsThread checks an adapter that
// remembers nothing (restarted) puts a job's next question in the job's
// thread, which the runtime names on the asked event: one thread a job.
func TestRestartedAdapterAsksInTheJobsThread(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	q1 := question("job-again", "q-1")
	publishQuestion(t, env, q1)
	h.posted(t, q1.QuestionID)
	parent := h.fake.marked(threadMetaJSON("job-again"))
	// The runtime has the card's delivery report, and with it the thread.
	shownInSlack(t, env, q1)
	h.bot.cards.Forget()
	h.bot.threads.Clear()
	q2 := question("job-again", "q-2")
	publishQuestion(t, env, q2)
	second := h.posted(t, q2.QuestionID)
	if len(parent) != 1 || second.Str("thread_ts") != parent[0].TS {
		t.Fatalf("second card in thread %q; want the job's thread %+v", second.Str("thread_ts"), parent)
	}
	if got := h.fake.marked(threadMetaJSON("job-again")); len(got) != 1 {
		t.Fatalf("%d thread parents for the job, want 1", len(got))
	}
	if n := len(h.fake.Calls("conversations.history")); n != 0 {
		t.Fatalf("%d history lookups; the event named the thread", n)
	}
}

// TestSettledCardKeepsItsTextWhenItsRecordIsLost checks a card this
// adapter remembers nothing of (it restarted) keeps its question's text
// when the question settles: the event names the card and carries the
// question.
func TestSettledCardKeepsItsTextWhenItsRecordIsLost(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	q := question("job-lost", "q-lost")
	q.Timeout = "1h"
	publishQuestion(t, env, q)
	posted := h.posted(t, q.QuestionID)
	ts := h.cardTS(t, q)
	// The runtime knows where the card is, so its events name it.
	shownInSlack(t, env, q)
	h.bot.cards.Forget()
	if resp, body := h.interact(h.fake.click("U0KEV", "kevin", "trig-lost", "C0123", ts, actionsBlock(posted), "choice.1", "blue", "")); resp.StatusCode != http.StatusOK {
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
	if err := h.bot.handleEvent(context.Background(), &ev, engine.Delivery{Attempt: 1, Last: true}); err != nil {
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
		Question: q, Via: bridge.PlatformSlack, Failure: d.Failure, State: bridge.StateFailed,
		Text: "The question could not be shown to anyone: " + d.Failure.OperatorMessage})
	for _, c := range copies {
		up := h.updated(t, c.TS, "Failed: askbridge could not deliver this question")
		if s := up.Str("blocks"); !strings.Contains(s, q.Question) {
			t.Errorf("the settled card lost its text: %s", s)
		}
	}
	// The stray record goes once the cards are settled.
	testenv.CheckFor(t, wait, tick, func() error {
		if keys := lastingKeys(t, n.JS, h.bot); len(keys) != 0 {
			return fmt.Errorf("the bucket holds %v, want the stray record gone", keys)
		}
		return nil
	})
}

// lastingKeys are the bucket's keys but claims that go on their own: a
// click's, which folds a double click across replicas for clickFold, and
// a question's being shown, which tells a try after a restart from a
// first one for engine.ShowClaimTTL.
func lastingKeys(t *testing.T, js jetstream.JetStream, b *Bot) []string {
	t.Helper()
	st, err := js.Stream(context.Background(), "KV_"+KVBucket)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range bucketKeys(t, b) {
		m, err := st.GetLastMsgForSubject(context.Background(), "$KV."+KVBucket+"."+k)
		if err != nil {
			t.Fatal(err)
		}
		if ttl, err := time.ParseDuration(m.Header.Get(jetstream.MsgTTLHeader)); err == nil && ttl <= max(clickFold, engine.ShowClaimTTL) {
			continue
		}
		out = append(out, k)
	}
	return out
}
