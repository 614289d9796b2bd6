package discord

import (
	"context"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// TestEventsStreamDeletedIsMadeAgain checks the adapter goes on showing
// questions, and taking clicks, after its events stream, its consumer and
// its buckets were deleted (as when the NATS server restarted without its
// store): before, its consumer's end stopped it for good without a word.
func TestEventsStreamDeletedIsMadeAgain(t *testing.T) {
	env, h := startE2E(t, runtime.Roles{})
	first := colorQuestion()
	ask(t, env, first)
	h.posted(channelA, 1)

	ctx := context.Background()
	for _, stream := range []string{bridge.StreamEvents, "KV_" + RefsBucket, "KV_" + SeenBucket} {
		if err := env.NATS.JS.DeleteStream(ctx, stream); err != nil {
			t.Fatal(err)
		}
	}
	q := colorQuestion()
	q.JobID = "job-2"
	ask(t, env, q)
	msg := h.posted(channelA, 2)
	h.interact(h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string)))
	if res := await(t, env, q); res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: blue" {
		t.Fatalf("resume = %+v", res)
	}
	h.fake.settledCard(t, msg["id"].(string), "Answered by <@"+kevin.ID+">: blue")
}

// TestBucketsDeletedAreMadeAgain checks the bot makes its buckets again
// when they alone were deleted (its consumer and the events stream still
// there): every event needs them, and none was handled until a restart.
func TestBucketsDeletedAreMadeAgain(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Platforms: map[string]runtime.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	// Events that fail while the buckets are gone are tried again later
	// than in other tests: within the time the bot takes to look for them
	// (bridge.HealEvery), as in production.
	h := start(t, harnessOptions{nats: env.NATS, tweak: func(b *Bot) { b.backoff = func(uint64) time.Duration { return 2 * time.Second } }})
	first := colorQuestion()
	ask(t, env, first)
	h.posted(channelA, 1)

	ctx := context.Background()
	for _, stream := range []string{"KV_" + RefsBucket, "KV_" + SeenBucket} {
		if err := env.NATS.JS.DeleteStream(ctx, stream); err != nil {
			t.Fatal(err)
		}
	}
	q := colorQuestion()
	q.JobID = "job-2"
	ask(t, env, q)
	msg := h.posted(channelA, 2)
	h.interact(h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string)))
	if res := await(t, env, q); res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: blue" {
		t.Fatalf("resume = %+v", res)
	}
	h.fake.settledCard(t, msg["id"].(string), "Answered by <@"+kevin.ID+">: blue")
}
