package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/store/record"
)

// TestSlackSwitchedOnLaterShowsWhatWaits checks the start order with the
// events stream keeping an event only until every adapter has it: a
// question asked while no chat platform was on (its asked event kept by
// no one) is shown in Slack once Slack is switched on, and once only, and
// so is a question asked at that first start.
func TestSlackSwitchedOnLaterShowsWhatWaits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, _ := startTestService(t, func(c *config.Config) { c.DataDir, c.Operators = dir, []string{"cli:kevin"} })
	kevin, _, _ := testCLI(s, "cli:kevin")
	before := &bridge.Question{Tenant: "acme", JobID: "job-before", QuestionID: "q-1", TaskVersion: 1,
		Question: "Which colour?", Choices: []string{"red", "blue"}, Timeout: "1h"}
	askAsync(t, agentFor(t, s), before)
	waitPending(t, kevin, before.JobID, "q-1")
	s.stop(context.Background())

	var mu sync.Mutex
	cards := map[string]int{}
	fake, err := startBenchSlack(benchSlackOptions{onCard: func(job string) { mu.Lock(); cards[job]++; mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.close)
	s, cfg := startTestService(t, func(c *config.Config) {
		c.DataDir = dir
		c.Operators = []string{"cli:kevin"}
		c.SlackBotToken = "xoxb-test"
		c.SlackSigningSecret = "test-signing-secret"
		c.SlackAPIURL = fake.url + "/api/"
		c.SlackChannel = "C0123"
	})
	at := &bridge.Question{Tenant: "acme", JobID: "job-at", QuestionID: "q-1", TaskVersion: 1,
		Question: "Which size?", Choices: []string{"S", "M"}, Timeout: "1h"}
	askAsync(t, agentFor(t, s), at)

	// Both shown in Slack, as the runtime records, and nothing left to
	// publish or to handle.
	st, err := store.Open(context.Background(), cfg.DataDir+"/askbridge.db")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		for _, q := range []*bridge.Question{before, at} {
			rec, err := st.Find(ctx, record.Key{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: 1})
			if err != nil {
				return err
			}
			refs, err := st.Messages(ctx, rec.ID)
			if err != nil || len(refs) != 1 || refs[0].Platform != bridge.PlatformSlack {
				return errors.Join(fmt.Errorf("%s: shown on %+v", q.JobID, refs), err)
			}
		}
		if n, err := st.OutboxBacklog(ctx); err != nil || n != 0 {
			return errors.Join(fmt.Errorf("outbox backlog %d", n), err)
		}
		c, err := s.nats.JS.Consumer(ctx, bridge.StreamEvents, bridge.PlatformSlack)
		if err != nil {
			return err
		}
		if info := c.CachedInfo(); info.NumPending != 0 || info.NumAckPending != 0 {
			return fmt.Errorf("slack's consumer: %d pending, %d unacknowledged", info.NumPending, info.NumAckPending)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if cards[before.JobID] != 1 || cards[at.JobID] != 1 {
		t.Errorf("cards by job %v, want one of each", cards)
	}
}
