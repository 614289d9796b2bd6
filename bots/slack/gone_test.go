package slack

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// TestEventsStreamDeletedIsMadeAgain checks the adapter goes on showing
// questions, and taking clicks, after its events stream, its consumer and
// its bucket were deleted (as when the NATS server restarted without its
// store): before, its consumer's end stopped it for good without a word.
func TestEventsStreamDeletedIsMadeAgain(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	publishQuestion(t, env, question("job-1", "q-1"))
	h.posted(t, "q-1")

	ctx := context.Background()
	for _, stream := range []string{bridge.StreamEvents, "KV_" + KVBucket} {
		if err := env.NATS.JS.DeleteStream(ctx, stream); err != nil {
			t.Fatal(err)
		}
	}
	deliveries := collect[bridge.Delivery](t, env.NATS, bridge.PrefixDelivery+".>")
	q := question("job-2", "q-2")
	publishQuestion(t, env, q)
	card := h.posted(t, "q-2")
	d := deliveredTS(t, env.NATS, deliveries, "q-2")
	resp, body := h.interact(h.fake.click("U0KEV", "kevin", "trig-2", card.Str("channel"), d.Message.MessageID, actionsBlock(card), "choice.1", "blue", ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("click: %d %s", resp.StatusCode, body)
	}
	if out := awaitOutcome(t, env, q); out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: blue" {
		t.Fatalf("resume: %+v", out)
	}
	h.updated(t, d.Message.MessageID, "Answered by @kevin: blue")
}

// TestExternalNATSRestarts checks questions are shown, clicks decided
// (the click acknowledged after the decision, through the decision inbox)
// and cards updated after the operator's NATS server restarted, with its
// store and without it.
func TestExternalNATSRestarts(t *testing.T) {
	t.Parallel()
	for _, wipe := range []bool{false, true} {
		t.Run(fmt.Sprintf("wipe=%v", wipe), func(t *testing.T) {
			t.Parallel()
			ext := testenv.StartExternalNATS(t)
			env := testenv.Start(t, testenv.Options{NATSURL: ext.URL(),
				Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C0123"}}})
			h := startBot(t, env.NATS, newFakeSlack(t), func(o *Options) { o.AckAfterDecision = true })
			type shown struct {
				q    *bridge.Question
				card apiCall
				d    bridge.Delivery
			}
			show := func(job string) shown {
				t.Helper()
				deliveries := collect[bridge.Delivery](t, env.NATS, bridge.PrefixDelivery+".>")
				q := question(job, "q-"+job)
				testenv.CheckFor(t, wait, tick, func() error { // the agent publishes again until NATS takes it
					return env.Agent.Publish(context.Background(), q)
				})
				card := h.posted(t, q.QuestionID)
				return shown{q, card, deliveredTS(t, env.NATS, deliveries, q.QuestionID)}
			}
			click := func(s shown) {
				t.Helper()
				job, q, card, d := s.q.JobID, s.q, s.card, s.d
				resp, body := h.interact(h.fake.click("U0KEV", "kevin", "trig-"+job, "C0123", d.Message.MessageID, actionsBlock(card), "choice.1", "blue", ""))
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("click: %d %s", resp.StatusCode, body)
				}
				if out := awaitOutcome(t, env, q); out.Text != "The answer: blue" {
					t.Fatalf("resume: %+v", out)
				}
				h.updated(t, d.Message.MessageID, "Answered by @kevin: blue")
			}
			round := func(job string) { t.Helper(); click(show(job)) }
			round("job-1")
			across := show("job-across")
			ext.Restart(wipe)
			testenv.CheckFor(t, testenv.Patience, 50*time.Millisecond, func() error {
				if err := bridge.CheckStreams(context.Background(), env.NATS.JS); err != nil {
					return err
				}
				return env.Runtime.Check(context.Background())
			})
			round("job-2")
			click(across) // shown before the restart, answered after
		})
	}
}

// TestBucketDeletedIsMadeAgain checks the adapter makes its bucket again
// when it alone was deleted (its consumer and the events stream still
// there): every event needs it, and none was handled until a restart.
func TestBucketDeletedIsMadeAgain(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	publishQuestion(t, env, question("job-1", "q-1"))
	h.posted(t, "q-1")

	if err := env.NATS.JS.DeleteStream(context.Background(), "KV_"+KVBucket); err != nil {
		t.Fatal(err)
	}
	deliveries := collect[bridge.Delivery](t, env.NATS, bridge.PrefixDelivery+".>")
	q := question("job-2", "q-2")
	publishQuestion(t, env, q)
	card := h.posted(t, "q-2")
	d := deliveredTS(t, env.NATS, deliveries, "q-2")
	resp, body := h.interact(h.fake.click("U0KEV", "kevin", "trig-2", card.Str("channel"), d.Message.MessageID, actionsBlock(card), "choice.1", "blue", ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("click: %d %s", resp.StatusCode, body)
	}
	if out := awaitOutcome(t, env, q); out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: blue" {
		t.Fatalf("resume: %+v", out)
	}
	h.updated(t, d.Message.MessageID, "Answered by @kevin: blue")
}
