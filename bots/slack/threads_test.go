package slack

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// putThreadClaim names a job's thread as the threads bucket holds it.
func putThreadClaim(t *testing.T, h *harness, job, raw string) {
	t.Helper()
	if _, err := h.bot.hints.Write(context.Background(), "slack.t.acme."+job+".C0123", 0, []byte(raw), 0); err != nil {
		t.Fatal(err)
	}
}

// TestRestartKeepsTheJobsThreadAKilledRunOpened checks a kill -9 between
// a card's post and its report: the run that restarts shows the job's
// next question first, in the thread the killed run opened (named in the
// threads bucket, which the run follows, not yet on any event), and then
// adopts the killed run's card there instead of opening a second thread
// and posting it again.
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
	// The bot follows the bucket: it hears of the thread without asking.
	testenv.CheckFor(t, wait, tick, func() error {
		if ts, _ := h.bot.threads.Get(threadKey("acme", "job-rk", "C0123")); ts != parent {
			return fmt.Errorf("the bot knows the job's thread as %q, want %s", ts, parent)
		}
		return nil
	})

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

// TestNewThreadIsNamedInTheBucket checks the other side: the job's new
// thread parent is named in the threads bucket once it is posted, for a
// run that comes after, and only for a while (the runtime knows it then).
func TestNewThreadIsNamedInTheBucket(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	ev := askedEvent(question("job-nt", "q-1"))
	if err := h.bot.handleEvent(context.Background(), &ev, engine.Delivery{Attempt: 1}); err != nil {
		t.Fatalf("first question: %v", err)
	}
	d := deliveredTS(t, h.nats, deliveries, "q-1")
	if !d.OK || d.Message.Thread == "" {
		t.Fatalf("delivered %+v, want the card in a new thread", d.Message)
	}
	key := "slack.t.acme.job-nt.C0123"
	testenv.CheckFor(t, wait, tick, func() error {
		e, err := h.bot.hints.Get(context.Background(), key)
		if err != nil {
			return fmt.Errorf("the bucket names no thread for the job: %v", err)
		}
		if want := `{"ts":"` + d.Message.Thread + `"}`; string(e.Value()) != want {
			return fmt.Errorf("the bucket holds %s, want %s", e.Value(), want)
		}
		return nil
	})
	st, err := h.nats.JS.Stream(context.Background(), "KV_"+bridge.ThreadsBucket)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(context.Background(), "$KV."+bridge.ThreadsBucket+"."+key)
	if err != nil {
		t.Fatal(err)
	}
	if ttl := m.Header.Get(jetstream.MsgTTLHeader); ttl != engine.ShowClaimTTL.String() {
		t.Fatalf("the record lasts %q, want %v", ttl, engine.ShowClaimTTL)
	}
}
