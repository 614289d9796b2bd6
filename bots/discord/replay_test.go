package discord

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// replayedAsked is an asked event as a consumer reading the stream from
// long ago finds it: published five minutes ago, its deadline ahead.
func replayedAsked(q bridge.Question) bridge.Event {
	ev := asked(q)
	ev.At = time.Now().UTC().Add(-5 * time.Minute)
	ev.AskedAt = ev.At
	return ev
}

// cardPosts returns the message posts the fake Discord received whose
// body carries text.
func (f *fakeDiscord) cardPosts(text string) []fakeReq {
	var out []fakeReq
	for _, r := range f.requests("POST", "/channels/") {
		if strings.HasSuffix(r.Path, "/messages") && bytes.Contains(r.Body, []byte(text)) {
			out = append(out, r)
		}
	}
	return out
}

// waitCard waits for the card of the question asking text.
func (h *harness) waitCard(text string) {
	h.t.Helper()
	testenv.CheckFor(h.t, testenv.Patience, 10*time.Millisecond, func() error {
		if len(h.fake.cardPosts(text)) == 0 {
			return fmt.Errorf("no card asking %q; bot log:\n%s", text, h.logs.String())
		}
		return nil
	})
}

// consumerSettled waits until the adapter's consumer has acked the first
// n events of the stream and none waits for a redelivery.
func (h *harness) consumerSettled(events uint64) {
	h.t.Helper()
	testenv.CheckFor(h.t, testenv.Patience, 10*time.Millisecond, func() error {
		c, err := h.nats.JS.Consumer(context.Background(), bridge.StreamEvents, ConsumerName)
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
	h := start(t, harnessOptions{})
	shows := testenv.FakeShow(h.t, h.nats.Conn, map[string]string{"q-gone": bridge.StateAnswered, "q-live": bridge.StatePending})
	gone := colorQuestion()
	gone.QuestionID, gone.Question = "q-gone", "Which archive did you mean last spring?"
	live := colorQuestion()
	live.QuestionID = "q-live"
	// One job: the adapter handles them in this order.
	h.publishEvent(replayedAsked(gone))
	h.publishEvent(replayedAsked(live))

	h.waitCard(live.Question)
	h.consumerSettled(2)
	if posts := h.fake.cardPosts("archive"); len(posts) != 0 {
		t.Errorf("the answered question was posted %d times: %s", len(posts), posts[0].Body)
	}
	for _, d := range h.deliveriesNow() {
		if d.QuestionID == "q-gone" {
			t.Errorf("a delivery report for the answered question: %+v", d)
		}
	}
	if !strings.Contains(h.logs.String(), "no longer waits") {
		t.Errorf("no log line for the question not shown:\n%s", h.logs.String())
	}
	reqs := shows.All()
	if len(reqs) != 2 {
		t.Fatalf("%d show requests, want one for each replayed question: %+v", len(reqs), reqs)
	}
	r := reqs[0]
	if r.As != "" || r.Tenant != "acme" || r.JobID != "job-1" || r.QuestionID != "q-gone" || r.TaskVersion != 3 {
		t.Errorf("show request %+v: want acme/job-1/q-gone at task version 3, without as (a trusted program)", r)
	}
}

func TestReplayedAskedForPendingQuestionIsPosted(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	shows := testenv.FakeShow(h.t, h.nats.Conn, map[string]string{"q-1": bridge.StatePending})
	q := colorQuestion()
	h.publishEvent(replayedAsked(q))

	h.waitCard(q.Question)
	h.consumerSettled(1)
	if got := len(shows.All()); got != 1 {
		t.Errorf("%d show requests, want 1", got)
	}
}

func TestReplayedAskedIsPostedWhenTheRuntimeDoesNotSay(t *testing.T) {
	t.Parallel()
	t.Run("no responder", func(t *testing.T) {
		t.Parallel()
		h := start(t, harnessOptions{})
		q := colorQuestion()
		h.publishEvent(replayedAsked(q))
		h.waitCard(q.Question)
		h.consumerSettled(1)
	})
	t.Run("no reply in time", func(t *testing.T) {
		t.Parallel()
		h := start(t, harnessOptions{})
		shows := testenv.FakeShow(h.t, h.nats.Conn, nil)
		q := colorQuestion()
		h.publishEvent(replayedAsked(q))
		h.waitCard(q.Question)
		h.consumerSettled(1)
		if got := len(shows.All()); got != 1 {
			t.Errorf("%d show requests, want 1", got)
		}
	})
}

func TestFreshAskedAsksTheRuntimeNothing(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	shows := testenv.FakeShow(h.t, h.nats.Conn, map[string]string{"q-1": bridge.StatePending})
	q := colorQuestion()
	h.publishEvent(asked(q)) // at: now

	h.waitCard(q.Question)
	h.consumerSettled(1)
	if reqs := shows.All(); len(reqs) != 0 {
		t.Errorf("a fresh event made %d show requests: %+v", len(reqs), reqs)
	}
}

// TestStaleRemindersAreNotSent checks a consumer reading old events (a
// first start, a recreated consumer) sends no reminder for a question that
// ended or whose deadline passed, and still sends one that waits.
func TestStaleRemindersAreNotSent(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	testenv.FakeShow(h.t, h.nats.Conn, map[string]string{"q-done": bridge.StateAnswered, "q-wait": bridge.StatePending})
	now := time.Now().UTC()
	remind := func(id, text string, at, deadline time.Time) {
		q := colorQuestion()
		q.JobID, q.QuestionID, q.Question = "job-"+id, id, text
		h.publishEvent(bridge.Event{Type: bridge.EventReminded, Tenant: "acme", JobID: q.JobID, QuestionID: q.QuestionID,
			TaskVersion: q.TaskVersion, Step: bridge.TargetAnswerers, Targets: []string{"discord:" + kevin.ID}, Question: &q,
			At: at, AskedAt: at.Add(-time.Hour), Deadline: deadline})
	}
	remind("q-done", "Which archive did you mean?", now.Add(-5*time.Minute), now.Add(time.Hour))
	remind("q-late", "Which month did you mean?", now.Add(-2*time.Hour), now.Add(-time.Hour))
	remind("q-wait", "Which colour should the cover be?", now.Add(-5*time.Minute), now.Add(time.Hour))
	h.consumerSettled(3)
	var got []string
	for _, r := range h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages") {
		got = append(got, string(r.Body))
	}
	if len(got) != 1 || !strings.Contains(got[0], "Which colour should the cover be?") {
		t.Fatalf("reminder DMs to kevin %q, want one, for the question that waits", got)
	}
}
