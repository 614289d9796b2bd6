package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/store/record"
)

// cards counts the cards posted for question id.
func (f *fakeSlack) cards(id string) int {
	n := 0
	for _, c := range f.Calls("chat.postMessage") {
		if strings.Contains(actionsBlock(c), "."+id+".") || strings.HasSuffix(actionsBlock(c), "."+id) {
			n++
		}
	}
	return n
}

// shownInSlack waits until the runtime has recorded q's Slack message.
func shownInSlack(t *testing.T, env *testenv.Env, q *bridge.Question) {
	t.Helper()
	ctx := context.Background()
	testenv.CheckFor(t, wait, tick, func() error {
		rec, err := env.Store.Find(ctx, record.Key{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion})
		if err != nil {
			return err
		}
		refs, err := env.Store.Messages(ctx, rec.ID)
		if err != nil {
			return err
		}
		for _, r := range refs {
			if r.Platform == bridge.PlatformSlack {
				return nil
			}
		}
		return fmt.Errorf("%s: no Slack message recorded (%+v)", q.QuestionID, refs)
	})
}

// settledConsumer waits until the runtime has published everything and
// the adapter's consumer has handled every event.
func settledConsumer(t *testing.T, env *testenv.Env) {
	t.Helper()
	ctx := context.Background()
	testenv.CheckFor(t, wait, tick, func() error {
		if n, err := env.Store.OutboxBacklog(ctx); err != nil || n != 0 {
			return fmt.Errorf("outbox backlog %d (%v)", n, err)
		}
		c, err := env.NATS.JS.Consumer(ctx, bridge.StreamEvents, ConsumerName)
		if err != nil {
			return err
		}
		if info := c.CachedInfo(); info.NumPending != 0 || info.NumAckPending != 0 {
			return fmt.Errorf("consumer: %d pending, %d unacknowledged", info.NumPending, info.NumAckPending)
		}
		return nil
	})
}

// TestConsumerMadeAgainShowsWhatItMissedOnce checks a question asked while
// the adapter's consumer was gone, whose asked event no consumer kept, is
// shown once the consumer is made again: the runtime sees the consumer is
// new and asks it again. Neither it nor the question shown before gets a
// second card.
func TestConsumerMadeAgainShowsWhatItMissedOnce(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{HealEvery: 100 * time.Millisecond,
		Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C0123"}}})
	h := startBot(t, env.NATS, newFakeSlack(t))
	shown := question("job-shown", "q-shown")
	publishQuestion(t, env, shown)
	h.posted(t, "q-shown")
	shownInSlack(t, env, shown)
	settledConsumer(t, env)
	h.Stop()

	ctx := context.Background()
	if err := env.NATS.JS.DeleteConsumer(ctx, bridge.StreamEvents, ConsumerName); err != nil {
		t.Fatal(err)
	}
	missed := question("job-missed", "q-missed")
	publishQuestion(t, env, missed)
	testenv.CheckFor(t, wait, tick, func() error {
		rec, err := env.Store.Find(ctx, record.Key{Tenant: "acme", JobID: missed.JobID, QuestionID: missed.QuestionID, TaskVersion: 1})
		if err != nil {
			return err
		}
		if n, err := env.Store.OutboxBacklog(ctx); err != nil || n != 0 {
			return errors.Join(fmt.Errorf("outbox backlog %d", n), err)
		}
		if rec.State != bridge.StatePending {
			return fmt.Errorf("%s is %s", missed.QuestionID, rec.State)
		}
		return nil
	})

	// The runtime makes the consumer again; the adapter comes back.
	testenv.CheckFor(t, wait, tick, func() error {
		_, err := env.NATS.JS.Consumer(ctx, bridge.StreamEvents, ConsumerName)
		return err
	})
	h2 := startBot(t, env.NATS, h.fake)
	h2.posted(t, "q-missed")
	shownInSlack(t, env, missed)
	settledConsumer(t, env)
	if n := h.fake.cards("q-missed"); n != 1 {
		t.Errorf("%d cards of the question asked while the consumer was gone, want 1", n)
	}
	if n := h.fake.cards("q-shown"); n != 1 {
		t.Errorf("%d cards of the question shown before, want 1", n)
	}
}

// TestAskedAgainForAnotherPlatformIsNotPostedAgain checks a question shown
// in Slack, asked again because Discord's consumer is new, gets no second
// Slack card, even from an adapter restarted since (which remembers
// nothing): the event names the Slack message that shows it.
func TestAskedAgainForAnotherPlatformIsNotPostedAgain(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{HealEvery: 100 * time.Millisecond, Platforms: map[string]bridge.Platform{
		bridge.PlatformSlack: {DefaultChannel: "C0123"}, bridge.PlatformDiscord: {DefaultChannel: "42"}}})
	h := startBot(t, env.NATS, newFakeSlack(t))
	q := question("job-other", "q-other")
	publishQuestion(t, env, q)
	h.posted(t, "q-other")
	shownInSlack(t, env, q)
	settledConsumer(t, env) // Discord's consumer alone holds the asked event
	h.Stop()
	h2 := startBot(t, env.NATS, h.fake)

	ctx := context.Background()
	if err := env.NATS.JS.DeleteConsumer(ctx, bridge.StreamEvents, bridge.PlatformDiscord); err != nil {
		t.Fatal(err)
	}
	// Nothing reads Discord's consumer here: once made again it holds
	// the question asked again, which Slack reads too.
	testenv.CheckFor(t, wait, tick, func() error {
		c, err := env.NATS.JS.Consumer(ctx, bridge.StreamEvents, bridge.PlatformDiscord)
		if err != nil {
			return err
		}
		if n := c.CachedInfo().NumPending; n != 1 {
			return fmt.Errorf("Discord's new consumer holds %d events, want the question asked again", n)
		}
		return nil
	})
	settledConsumer(t, env)
	if n := h2.fake.cards("q-other"); n != 1 {
		t.Errorf("%d Slack cards of the question, want 1", n)
	}
}
