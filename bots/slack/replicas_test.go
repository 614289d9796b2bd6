package slack

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// postedBy says which of the replicas remembers posting the card of
// question id of job: the one JetStream gave the job's events.
func postedBy(t *testing.T, job, id string, replicas ...*harness) *harness {
	t.Helper()
	var by *harness
	testenv.CheckFor(t, wait, tick, func() error {
		by = nil
		for _, h := range replicas {
			if c, ok := h.bot.cards.Get(blockkit.Ref{Tenant: "acme", JobID: job, QuestionID: id, Version: 1}); ok && c.Message != nil {
				if by != nil {
					return fmt.Errorf("both replicas posted the card of %s", id)
				}
				by = h
			}
		}
		if by == nil {
			return fmt.Errorf("no replica remembers the card of %s", id)
		}
		return nil
	})
	return by
}

// TestReplicasPostOnceAndTakeClicksAnywhere runs two replicas of the
// adapter on one NATS and the real runtime: each card is posted once, by
// the replica JetStream pinned, a job's cards in one thread; a click that
// reaches the other replica is acknowledged, decided and shown on the
// card; and when the pinned replica stops, the other posts the job's next
// question, once, in the same thread.
func TestReplicasPostOnceAndTakeClicksAnywhere(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C0123"}}})
	fake := newFakeSlack(t)
	replicas := []*harness{startBot(t, env.NATS, fake), startBot(t, env.NATS, fake)}
	deliveries := collect[bridge.Delivery](t, env.NATS, bridge.PrefixDelivery+".>")

	q1 := question("job-1", "q-1")
	publishQuestion(t, env, q1)
	q2 := question("job-1", "q-2")
	publishQuestion(t, env, q2)
	card1 := replicas[0].posted(t, "q-1")
	card2 := replicas[0].posted(t, "q-2")
	if card2.Str("thread_ts") == "" || card2.Str("thread_ts") != card1.Str("thread_ts") {
		t.Fatalf("the job's cards are in threads %q and %q, want one", card1.Str("thread_ts"), card2.Str("thread_ts"))
	}
	pinned := postedBy(t, "job-1", "q-1", replicas...)
	if postedBy(t, "job-1", "q-2", replicas...) != pinned {
		t.Fatalf("the job's two cards were posted by two replicas")
	}
	other := replicas[0]
	if other == pinned {
		other = replicas[1]
	}

	// A click on the card reaches the replica that did not post it.
	attempts := testenv.Published(t, env.NATS.Conn, bridge.AnswerSubject("acme", "job-1"))
	d := deliveredTS(t, env.NATS, deliveries, "q-1")
	resp, body := other.interact(fake.click("U0KEV", "kevin", "trig-r1", "C0123", d.Message.MessageID, actionsBlock(card1), "choice.1", "blue", ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("click on the other replica: %d %s", resp.StatusCode, body)
	}
	out := awaitOutcome(t, env, q1)
	if out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: blue" || out.By != "slack:U0KEV" || out.Via != "slack" {
		t.Fatalf("resume: %+v", out)
	}
	pinned.updated(t, d.Message.MessageID, "Answered by @kevin: blue")

	// A double click whose halves reach the two replicas is one attempt:
	// the second is not sent to be refused as "already answered".
	d2 := deliveredTS(t, env.NATS, deliveries, "q-2")
	for i, h := range []*harness{other, pinned} {
		resp, body := h.interact(fake.click("U0KEV", "kevin", fmt.Sprintf("trig-r2-%d", i), "C0123", d2.Message.MessageID, actionsBlock(card2), "choice.0", "red", ""))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("click %d of a double click: %d %s", i+1, resp.StatusCode, body)
		}
	}
	if n := attempts.Count(t); n != 2 {
		t.Fatalf("%d attempts for a click and a double click across replicas, want 2", n)
	}
	if out := awaitOutcome(t, env, q2); out.Text != "The answer: red" {
		t.Fatalf("resume of q-2: %+v", out)
	}

	// The pinned replica stops; the other takes the job's events over.
	pinned.Stop()
	q3 := question("job-1", "q-3")
	publishQuestion(t, env, q3)
	card3 := other.posted(t, "q-3")
	if card3.Str("thread_ts") != card1.Str("thread_ts") {
		t.Fatalf("the job's next card went to thread %q, want %q", card3.Str("thread_ts"), card1.Str("thread_ts"))
	}
	if postedBy(t, "job-1", "q-3", other) != other {
		t.Fatalf("q-3 not posted by the replica left")
	}
	// A question of another job, and the marker that all is handled:
	// nothing was posted twice.
	q4 := question("job-2", "q-4")
	publishQuestion(t, env, q4)
	other.posted(t, "q-4")
	deliveredTS(t, env.NATS, deliveries, "q-4")
	if posts := fake.Calls("chat.postMessage"); len(posts) != 6 {
		for _, p := range posts {
			t.Logf("posted: thread %q blocks %s text %q", p.Str("thread_ts"), actionsBlock(p), p.Str("text"))
		}
		t.Fatalf("%d messages posted, want 2 thread parents and 4 cards", len(posts))
	}
}
