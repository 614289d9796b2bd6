package discord

import (
	"context"
	"fmt"
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
	t.Parallel()
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
	bucketsMadeAgain(t, env)
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
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	// The bot looks for its buckets every 200 ms (in production every
	// bridge.HealEvery) and makes them again 2 s after it finds them gone;
	// an event that fails while they are gone is tried again 1, 2, 3 and
	// 4 s later: as in production (retries 2, 8, 18 s apart), the buckets
	// are made again before its tries run out.
	h := start(t, harnessOptions{nats: env.NATS, tweak: func(b *Bot) {
		b.healEvery = 200 * time.Millisecond
		b.backoff = func(attempt uint64) time.Duration { return time.Duration(attempt) * time.Second }
	}})
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
	bucketsMadeAgain(t, env)
	h.interact(h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string)))
	if res := await(t, env, q); res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: blue" {
		t.Fatalf("resume = %+v", res)
	}
	h.fake.settledCard(t, msg["id"].(string), "Answered by <@"+kevin.ID+">: blue")
}

// bucketsMadeAgain waits until the bot has made both its buckets again. A
// card posted proves only the card index bucket is back; the bot makes
// them one after the other while it handles events, and a click needs
// the other (SeenBucket, where it is recorded): a click before it is
// answered 503, as a person clicking in the moment before the heal is.
func bucketsMadeAgain(t *testing.T, env *testenv.Env) {
	t.Helper()
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, bucket := range []string{RefsBucket, SeenBucket} {
			if _, err := env.NATS.JS.KeyValue(context.Background(), bucket); err != nil {
				return fmt.Errorf("bucket %s: %w", bucket, err)
			}
		}
		return nil
	})
}
