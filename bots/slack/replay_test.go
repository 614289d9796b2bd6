package slack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// replayedAsked is an asked event as a consumer reading the stream from its
// start finds it: published five minutes ago, its deadline still ahead.
func replayedAsked(q *bridge.Question) bridge.Event {
	ev := askedEvent(q)
	ev.At = time.Now().UTC().Add(-5 * time.Minute)
	ev.AskedAt = ev.At
	return ev
}

// heldByDiscord makes the Discord adapter's consumer, which reads nothing
// here: the events stream keeps every event for it, so a Slack consumer
// made afterwards (a first start, or one made again) finds the events
// published before it, as it reads them back in the service.
func heldByDiscord(t *testing.T, n *bridge.NATS) {
	t.Helper()
	if _, err := n.JS.CreateOrUpdateConsumer(context.Background(), bridge.StreamEvents, bridge.EventConsumer(bridge.PlatformDiscord)); err != nil {
		t.Fatal(err)
	}
}

// consumerSettled waits until the adapter's consumer has acked the first
// n events of the stream and none waits for a redelivery.
func consumerSettled(t *testing.T, n *bridge.NATS, events uint64) {
	t.Helper()
	testenv.CheckFor(t, wait, tick, func() error {
		c, err := n.JS.Consumer(context.Background(), bridge.StreamEvents, ConsumerName)
		if err != nil {
			return err
		}
		info, err := c.Info(context.Background())
		if err != nil {
			return err
		}
		if info.AckFloor.Stream < events || info.NumAckPending != 0 || info.NumRedelivered != 0 {
			return fmt.Errorf("ack floor %d of %d, %d ack pending, %d redelivered", info.AckFloor.Stream, events, info.NumAckPending, info.NumRedelivered)
		}
		return nil
	})
}

func TestReplayedAskedForSettledQuestionIsNotPosted(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	shows := testenv.FakeShow(t, n.Conn, map[string]string{"q-gone": bridge.StateAnswered, "q-live": bridge.StatePending})
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	gone := question("job-replay", "q-gone")
	gone.Question = "Which archive did you mean last spring?"
	live := question("job-replay", "q-live")
	// Both wait in the stream before the adapter first starts; one job, so
	// the adapter handles them in this order.
	heldByDiscord(t, n)
	publishEvent(t, n, replayedAsked(gone))
	publishEvent(t, n, replayedAsked(live))
	h := startBot(t, n, fake)

	h.posted(t, "q-live")
	deliveredTS(t, n, deliveries, "q-live")
	consumerSettled(t, n, 2)
	for _, c := range fake.Calls("chat.postMessage") {
		if strings.Contains(actionsBlock(c), ".q-gone.") || strings.Contains(c.Str("text")+c.Str("blocks"), "archive") {
			t.Errorf("the answered question was posted: %q", c.Str("text"))
		}
	}
	for _, d := range deliveries.All() {
		if d.QuestionID == "q-gone" {
			t.Errorf("a delivery report for the answered question: %+v", d)
		}
	}
	reqs := shows.All()
	if len(reqs) != 2 {
		t.Fatalf("%d show requests, want one for each replayed question: %+v", len(reqs), reqs)
	}
	want := bridge.ShowRequest{Tenant: "acme", JobID: "job-replay", QuestionID: "q-gone", TaskVersion: 1}
	if reqs[0].As != "" || reqs[0].Tenant != want.Tenant || reqs[0].JobID != want.JobID || reqs[0].QuestionID != want.QuestionID || reqs[0].TaskVersion != want.TaskVersion {
		t.Errorf("show request %+v, want %+v (no as: the adapter asks as a trusted program)", reqs[0], want)
	}
}

func TestReplayedAskedForPendingQuestionIsPosted(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	shows := testenv.FakeShow(t, n.Conn, map[string]string{"q-wait": bridge.StatePending})
	q := question("job-wait", "q-wait")
	heldByDiscord(t, n)
	publishEvent(t, n, replayedAsked(q))
	h := startBot(t, n, fake)

	h.posted(t, "q-wait")
	consumerSettled(t, n, 1)
	if got := len(shows.All()); got != 1 {
		t.Errorf("%d show requests, want 1", got)
	}
}

func TestReplayedAskedIsPostedWhenTheRuntimeDoesNotSay(t *testing.T) {
	t.Parallel()
	t.Run("no responder", func(t *testing.T) {
		n := plainNATS(t)
		fake := newFakeSlack(t)
		heldByDiscord(t, n)
		publishEvent(t, n, replayedAsked(question("job-nr", "q-nr")))
		h := startBot(t, n, fake)
		h.posted(t, "q-nr")
		consumerSettled(t, n, 1)
	})
	t.Run("no reply in time", func(t *testing.T) {
		n := plainNATS(t)
		fake := newFakeSlack(t)
		shows := testenv.FakeShow(t, n.Conn, nil)
		heldByDiscord(t, n)
		publishEvent(t, n, replayedAsked(question("job-slow", "q-slow")))
		h := startBot(t, n, fake)
		h.posted(t, "q-slow")
		consumerSettled(t, n, 1)
		if got := len(shows.All()); got != 1 {
			t.Errorf("%d show requests, want 1", got)
		}
	})
}

func TestFreshAskedAsksTheRuntimeNothing(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	shows := testenv.FakeShow(t, n.Conn, map[string]string{"q-new": bridge.StatePending})
	h := startBot(t, n, fake)
	publishEvent(t, n, askedEvent(question("job-new", "q-new"))) // at: now

	h.posted(t, "q-new")
	if reqs := shows.All(); len(reqs) != 0 {
		t.Errorf("a fresh event made %d show requests: %+v", len(reqs), reqs)
	}
}

// reminderEvent is a ladder step of q sent at at, reminding kevin.
func reminderEvent(q *bridge.Question, at, deadline time.Time) bridge.Event {
	return bridge.Event{Type: bridge.EventReminded, Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID,
		TaskVersion: q.TaskVersion, Question: q, Step: "answerers", Targets: []string{"slack:U0KEV"},
		At: at, AskedAt: at.Add(-time.Hour), Deadline: deadline}
}

// TestStaleRemindersAreNotSent checks a consumer reading old events (a
// first start, a recreated consumer) DMs no reminder for a question that
// ended or whose deadline passed, and still DMs one that waits.
func TestStaleRemindersAreNotSent(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	testenv.FakeShow(t, n.Conn, map[string]string{"q-done": bridge.StateAnswered, "q-wait": bridge.StatePending})
	now := time.Now().UTC()
	done, wait, late := question("job-rd", "q-done"), question("job-rw", "q-wait"), question("job-rl", "q-late")
	heldByDiscord(t, n)
	publishEvent(t, n, reminderEvent(done, now.Add(-5*time.Minute), now.Add(time.Hour)))
	publishEvent(t, n, reminderEvent(late, now.Add(-2*time.Hour), now.Add(-time.Hour)))
	publishEvent(t, n, reminderEvent(wait, now.Add(-5*time.Minute), now.Add(time.Hour)))
	startBot(t, n, fake)
	consumerSettled(t, n, 3)
	var dms []string
	for _, c := range fake.Calls("chat.postMessage") {
		if strings.HasPrefix(c.Str("channel"), "D") {
			dms = append(dms, c.Str("text"))
		}
	}
	if len(dms) != 1 || !strings.Contains(dms[0], "Which colour") {
		t.Fatalf("reminder DMs %q, want one, for the question that waits", dms)
	}
}
