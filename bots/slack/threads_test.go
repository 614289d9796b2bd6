package slack

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// putThreadClaim writes a job's thread claim as the bucket holds it.
func putThreadClaim(t *testing.T, h *harness, job, raw string) {
	t.Helper()
	if _, err := h.bot.kv.Write(context.Background(), "t.acme."+job+".C0123", 0, []byte(raw), 0); err != nil {
		t.Fatal(err)
	}
}

// TestRestartKeepsTheJobsThreadAKilledRunOpened checks a kill -9 between
// a card's post and its report: the run that restarts shows the job's
// next question first, in the thread the killed run opened (named in the
// bucket, not yet on any event), and then adopts the killed run's card
// there instead of opening a second thread and posting it again.
func TestRestartKeepsTheJobsThreadAKilledRunOpened(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	parent := tsAt(claimedAt, 1)
	fake.hold(fakeMsg{Channel: "C0123", TS: parent, Text: "thread", Metadata: threadMetaJSON("job-rk")})
	card := tsAt(claimedAt.Add(time.Second), 2)
	fake.hold(fakeMsg{Channel: "C0123", Thread: parent, TS: card, Text: "the card", Metadata: questionMetaJSON("job-rk", "q-1", 1)})
	putThreadClaim(t, h, "job-rk", `{"ts":"`+parent+`"}`)

	q2 := askedEvent(question("job-rk", "q-2"))
	if err := h.bot.handleEvent(context.Background(), &q2, engine.Delivery{Attempt: 1}); err != nil {
		t.Fatalf("the next question: %v", err)
	}
	q1 := askedEvent(question("job-rk", "q-1"))
	q1.AskedAt = claimedAt
	again(t, h, q1)

	if d := deliveredTS(t, h.nats, deliveries, "q-2"); !d.OK || d.Message.Thread != parent {
		t.Fatalf("q-2 delivered %+v, want its card in thread %s", d.Message, parent)
	}
	if d := deliveredTS(t, h.nats, deliveries, "q-1"); !d.OK || d.Message.MessageID != card {
		t.Fatalf("q-1 delivered %+v, want the killed run's card %s", d.Message, card)
	}
	posts := h.fake.Calls("chat.postMessage")
	if len(posts) != 1 || posts[0].Str("thread_ts") != parent {
		t.Fatalf("%d posts: want only q-2's card, in thread %s", len(posts), parent)
	}
}

// TestRestartAdoptsTheParentAKilledRunNeverRecorded checks a kill -9
// between a thread parent's post and its record: the claim names only
// the killed run, so the next run looks for the parent in the channel
// since the claim, adopts it and records it for every replica.
func TestRestartAdoptsTheParentAKilledRunNeverRecorded(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	parent := tsAt(claimedAt.Add(time.Second), 1)
	fake.hold(fakeMsg{Channel: "C0123", TS: parent, Text: "thread", Metadata: threadMetaJSON("job-rp")})
	putThreadClaim(t, h, "job-rp", `{"run":"the-killed-run","since":"`+claimedAt.Format(time.RFC3339Nano)+`"}`)

	ev := askedEvent(question("job-rp", "q-2"))
	if err := h.bot.handleEvent(context.Background(), &ev, engine.Delivery{Attempt: 1}); err != nil {
		t.Fatalf("the next question: %v", err)
	}
	if d := deliveredTS(t, h.nats, deliveries, "q-2"); !d.OK || d.Message.Thread != parent {
		t.Fatalf("q-2 delivered %+v, want its card in thread %s", d.Message, parent)
	}
	if posts := h.fake.Calls("chat.postMessage"); len(posts) != 1 || posts[0].Str("thread_ts") != parent {
		t.Fatalf("%d posts: want only the card, in thread %s", len(posts), parent)
	}
	var c threadClaim
	if _, _, _, err := bridge.GetJSON(context.Background(), h.bot.kv, "t.acme.job-rp.C0123", &c); err != nil || c.TS != parent {
		t.Fatalf("claim %+v, %v: want the adopted parent recorded", c, err)
	}
}

// TestAnotherReplicaOpeningTheThreadHoldsTheJob checks two replicas
// showing two questions of one new job at once: the one that finds the
// other opening the job's thread holds the job, posting nothing, and
// posts its card in that thread once it is recorded.
func TestAnotherReplicaOpeningTheThreadHoldsTheJob(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	putThreadClaim(t, h, "job-ro", `{"run":"another-replica","since":"`+time.Now().UTC().Format(time.RFC3339Nano)+`"}`)

	ev := askedEvent(question("job-ro", "q-2"))
	err := h.bot.handleEvent(context.Background(), &ev, engine.Delivery{Attempt: 1})
	var hold *engine.Hold
	if !errors.As(err, &hold) {
		t.Fatalf("got %v, want the job held while the other replica opens its thread", err)
	}
	if posts := h.fake.Calls("chat.postMessage"); len(posts) != 0 {
		t.Fatalf("%d posts while the thread is being opened, want none", len(posts))
	}

	parent := tsAt(time.Now(), 1)
	fake.hold(fakeMsg{Channel: "C0123", TS: parent, Text: "thread", Metadata: threadMetaJSON("job-ro")})
	if _, err := h.bot.kv.Put(context.Background(), "t.acme.job-ro.C0123", []byte(`{"ts":"`+parent+`"}`)); err != nil {
		t.Fatal(err)
	}
	if err := h.bot.handleEvent(context.Background(), &ev, engine.Delivery{Attempt: 1}); err != nil {
		t.Fatalf("after the thread opened: %v", err)
	}
	if d := deliveredTS(t, h.nats, deliveries, "q-2"); !d.OK || d.Message.Thread != parent {
		t.Fatalf("q-2 delivered %+v, want its card in thread %s", d.Message, parent)
	}
	if posts := h.fake.Calls("chat.postMessage"); len(posts) != 1 || posts[0].Str("thread_ts") != parent {
		t.Fatalf("%d posts: want only the card, in thread %s", len(posts), parent)
	}
}
