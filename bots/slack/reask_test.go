package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
	"github.com/askbridge/askbridge/store"
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
		rec, err := env.Store.Find(ctx, store.Key{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion})
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
	env, h := e2e(t, runtime.Roles{})
	shown := question("job-shown", "q-shown")
	publishQuestion(t, env, shown)
	h.posted(t, "q-shown")
	shownInSlack(t, env, shown)
	h.Stop()

	ctx := context.Background()
	if err := env.NATS.JS.DeleteConsumer(ctx, bridge.StreamEvents, ConsumerName); err != nil {
		t.Fatal(err)
	}
	missed := question("job-missed", "q-missed")
	publishQuestion(t, env, missed)
	testenv.CheckFor(t, wait, tick, func() error {
		rec, err := env.Store.Find(ctx, store.Key{Tenant: "acme", JobID: missed.JobID, QuestionID: missed.QuestionID, TaskVersion: 1})
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

	// The adapter back, its consumer made again (as its heal does).
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
