package slack

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// TestFirstDeliveryOfAQuestionAKilledRunClaimedAdoptsItsCard checks the
// single node after a kill -9: the embedded server had not written down
// that it delivered the asked event to the adapter that was killed after
// posting the card, so the event comes back as a first delivery. The
// killed run's claim to show the question (in the bucket, as the wire
// holds it) makes that try look, and adopt the card, not post another.
func TestFirstDeliveryOfAQuestionAKilledRunClaimedAdoptsItsCard(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	q := question("job-kr", "q-kr")
	ev := askedEvent(q)
	ev.AskedAt = claimedAt
	parent := tsAt(claimedAt.Add(-time.Hour), 1)
	ev.Threads = []bridge.MessageRef{{Platform: bridge.PlatformSlack, Channel: "C0123", Thread: parent}}
	fake.hold(fakeMsg{Channel: "C0123", TS: parent, Text: "thread", Metadata: threadMetaJSON("job-kr")})
	card := tsAt(claimedAt.Add(time.Second), 7)
	fake.hold(fakeMsg{Channel: "C0123", Thread: parent, TS: card, Text: "the card", Metadata: questionMetaJSON("job-kr", "q-kr", 1)})
	if _, err := h.bot.kv.Write(context.Background(), "shown.acme.job-kr.q-kr.1", 0, []byte("the-killed-run"), engine.ShowClaimTTL); err != nil {
		t.Fatal(err)
	}
	if err := h.bot.handleEvent(context.Background(), &ev, engine.Delivery{Attempt: 1}); err != nil {
		t.Fatalf("first delivery: %v", err)
	}
	d := deliveredTS(t, h.nats, deliveries, q.QuestionID)
	if !d.OK || d.Message == nil || d.Message.MessageID != card {
		t.Fatalf("delivery %+v (message %+v), want the card the killed run posted", d, d.Message)
	}
	if got := len(h.fake.Calls("chat.postMessage")); got != 0 {
		t.Fatalf("%d posts, want none: the card is in Slack", got)
	}
}

// TestFirstDeliveryClaimsTheQuestionForAWhile checks the other side: a
// first try claims the question for its run before it posts, looking
// nothing up, and the card is posted once. (A try of the same run that
// finds its own claim, a post put off by a rate limit, looks nothing up
// either: TestRateLimitHonoursRetryAfter.)
func TestFirstDeliveryClaimsTheQuestionForAWhile(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	q := question("job-kc", "q-kc")
	ev := askedEvent(q)
	for range 2 {
		if err := h.bot.handleEvent(context.Background(), &ev, engine.Delivery{Attempt: 1}); err != nil {
			t.Fatalf("first delivery: %v", err)
		}
	}
	if d := deliveredTS(t, h.nats, deliveries, q.QuestionID); !d.OK {
		t.Fatalf("delivery %+v", d)
	}
	if got := len(h.fake.Calls("conversations.history")) + len(h.fake.Calls("conversations.replies")); got != 0 {
		t.Fatalf("%d lookups, want none: the claim is this run's", got)
	}
	e, err := h.bot.kv.Get(context.Background(), "shown.acme.job-kc.q-kc.1")
	if err != nil {
		t.Fatalf("the claim: %v", err)
	}
	if len(e.Value()) == 0 {
		t.Fatal("the claim names no run")
	}
}

// TestLaterTryClaimsTheQuestionToo checks a try after the first (its
// first failed before posting) that posts the card: it claims the
// question as a first try does. A kill right after its post can cost the
// embedded server its count of the deliveries, and the event then comes
// back as a first one: only the claim makes that try look for the card
// (TestFirstDeliveryOfAQuestionAKilledRunClaimedAdoptsItsCard) rather than
// post a second one, as a kill -9 run once saw.
func TestLaterTryClaimsTheQuestionToo(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	q := question("job-lc", "q-lc")
	ev := askedEvent(q)
	if err := h.bot.handleEvent(context.Background(), &ev, engine.Delivery{Attempt: 2}); err != nil {
		t.Fatalf("second delivery: %v", err)
	}
	if d := deliveredTS(t, h.nats, deliveries, q.QuestionID); !d.OK || d.Message == nil {
		t.Fatalf("delivery %+v, want the card shown", d)
	}
	if got := len(fake.Calls("chat.postMessage")); got == 0 {
		t.Fatal("no post: the try found no card, so it posts one")
	}
	e, err := h.bot.kv.Get(context.Background(), "shown.acme.job-lc.q-lc.1")
	if err != nil {
		t.Fatalf("the claim of a later try that posted: %v", err)
	}
	if len(e.Value()) == 0 {
		t.Fatal("the claim names no run")
	}
}

// TestLookupWaitingForItsTurnHoldsTheJob checks a later try whose lookup
// must wait for the history method's turn (Slack limits those methods per
// method, and several tries look at once after a restart): the job is put
// aside until the turn, and no second card is posted meanwhile. It was
// taken for a lookup that failed for good, which posts.
func TestLookupWaitingForItsTurnHoldsTheJob(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	q := question("job-lt", "q-lt")
	ev := askedEvent(q)
	ev.AskedAt = claimedAt
	parent := tsAt(claimedAt.Add(-time.Hour), 1)
	ev.Threads = []bridge.MessageRef{{Platform: bridge.PlatformSlack, Channel: "C0123", Thread: parent}}
	fake.hold(fakeMsg{Channel: "C0123", TS: parent, Metadata: threadMetaJSON("job-lt")})
	card := tsAt(claimedAt, 3)
	fake.hold(fakeMsg{Channel: "C0123", TS: card, Thread: parent, Text: "the card", Metadata: questionMetaJSON("job-lt", "q-lt", 1)})
	// Other lookups took the method's turns for the next half minute.
	turn := time.Now().Add(30 * time.Second)
	h.bot.pace.mu.Lock()
	h.bot.pace.next["method conversations.replies"] = turn
	h.bot.pace.mu.Unlock()
	res := &engine.Reserved{}
	err := h.bot.handleEvent(engine.WithReserved(context.Background(), res), &ev, engine.Delivery{Attempt: 2})
	var hold *engine.Hold
	if !errors.As(err, &hold) || hold.Until.Before(turn) {
		t.Fatalf("handleEvent = %v; want the job held until the lookup's turn, %v", err, turn)
	}
	if got := len(fake.Calls("chat.postMessage")); got != 0 {
		t.Fatalf("%d posts while the lookup waited for its turn, want none", got)
	}
	// At its turn the lookup finds the card, and adopts it.
	h.bot.pace.mu.Lock()
	delete(h.bot.pace.next, "method conversations.replies")
	h.bot.pace.mu.Unlock()
	if err := h.bot.handleEvent(engine.WithReserved(context.Background(), &engine.Reserved{}), &ev, engine.Delivery{Attempt: 3}); err != nil {
		t.Fatal(err)
	}
	if got := len(fake.Calls("chat.postMessage")); got != 0 {
		t.Fatalf("%d posts after the lookup, want none: the card is in Slack", got)
	}
}
