package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/store/record"
)

// held is an event in the events stream, with its message id.
type held struct {
	seq   uint64
	msgID string
	ev    bridge.Event
}

// eventsAfter reads the events the stream holds after sequence after.
func eventsAfter(t *testing.T, env *testenv.Env, after uint64) []held {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := env.NATS.JS.Stream(ctx, bridge.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []held
	for seq := max(info.State.FirstSeq, after+1); seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		h := held{seq: seq, msgID: m.Header.Get(jetstream.MsgIDHeader)}
		if err := json.Unmarshal(m.Data, &h.ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
	}
	return out
}

// waitHolding waits until the consumer durable holds want events.
func waitHolding(t *testing.T, env *testenv.Env, durable string, want uint64) {
	t.Helper()
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		c, err := env.NATS.JS.Consumer(context.Background(), bridge.StreamEvents, durable)
		if err != nil {
			return err
		}
		if n := c.CachedInfo().NumPending; n != want {
			return fmt.Errorf("consumer %s holds %d events, want %d", durable, n, want)
		}
		return nil
	})
}

// TestAdapterConsumersAreMadeBeforeTheFirstPublish checks the runtime
// makes the consumers of the platforms switched on before its relay
// publishes: an event waiting in the outbox at the first start with
// Slack and Discord reaches both. The question it announces was asked
// before the consumers existed, so it is asked again on each, under a
// new message id, with the same question.
func TestAdapterConsumersAreMadeBeforeTheFirstPublish(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles,
		BeforePublish: func(record.OutboxRow) error { return errors.New("the relay is held") }})
	q := choiceQuestion("job-first")
	ask(t, env, q)
	waitState(t, env, q, bridge.StatePending)
	rows, err := env.Store.Unsent(context.Background(), 0, 10, time.Now().Add(-time.Hour))
	if err != nil || len(rows) != 1 {
		t.Fatalf("unsent rows %+v, %v; want the asked event", rows, err)
	}
	original := rows[0].MsgID()
	dir := env.Dir
	env.Stop()

	env = testenv.Start(t, testenv.Options{Dir: dir, Roles: roles, Platforms: map[string]bridge.Platform{
		bridge.PlatformSlack: {DefaultChannel: "C1"}, bridge.PlatformDiscord: {DefaultChannel: "42"}}})
	// Nothing acknowledges here: each consumer holds both asked events.
	for _, durable := range []string{bridge.PlatformSlack, bridge.PlatformDiscord} {
		waitHolding(t, env, durable, 2)
	}
	evs := eventsAfter(t, env, 0)
	{
		var ids []string
		for _, h := range evs {
			if h.ev.Type != bridge.EventAsked || h.ev.QuestionID != q.QuestionID || h.ev.Question == nil || h.ev.Question.Question != q.Question {
				t.Errorf("the stream holds %+v, want the asked event of %s", h.ev, q.QuestionID)
			}
			ids = append(ids, h.msgID)
		}
		if len(ids) != 2 || ids[0] != original || ids[1] == original {
			t.Errorf("the stream holds events %v, want the first start's %s, then the one asked again under another id", ids, original)
		}
	}
}

// TestConsumerMadeAgainAsksWhatItDoesNotShow checks a consumer deleted
// while the runtime runs is made again, and the pending questions its
// platform is to show and has no message of are asked again on it; not
// those it shows, those of another platform, nor ended ones.
func TestConsumerMadeAgainAsksWhatItDoesNotShow(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles, HealEvery: 100 * time.Millisecond, Platforms: map[string]bridge.Platform{
		bridge.PlatformSlack: {}, bridge.PlatformDiscord: {}}})
	routed := func(job string, slack bool) *bridge.Question {
		q := choiceQuestion(job)
		if slack {
			q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C1"}}
		} else {
			q.Route = &bridge.Route{Discord: &bridge.DiscordRoute{ChannelID: "42"}}
		}
		ask(t, env, q)
		waitState(t, env, q, bridge.StatePending)
		return q
	}
	shown, missed, ended := routed("job-shown", true), routed("job-missed", true), routed("job-ended", true)
	routed("job-else", false) // only Discord is to show it
	report(t, env, shown, bridge.Delivery{Platform: bridge.PlatformSlack, OK: true,
		Message: &bridge.MessageRef{Platform: bridge.PlatformSlack, Channel: "C1", MessageID: "1700000000.000100"}})
	attempt(t, env, bridge.AnswerAttempt{JobID: ended.JobID, QuestionID: "q-1", AttemptID: "end", Answer: []byte(`"red"`), By: "slack:UOP"})
	waitState(t, env, ended, bridge.StateAnswered)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if len(show(t, env, "slack:UADMIN", shown.JobID, "q-1").Question.Messages) == 0 {
			return errors.New("the delivery report is not recorded yet")
		}
		if n, err := env.Store.OutboxBacklog(context.Background()); err != nil || n != 0 {
			return fmt.Errorf("outbox backlog %d (%v)", n, err)
		}
		return nil
	})

	// Discord's consumer, which nothing here acknowledges, holds every
	// event: what comes after them is what the new consumer missed.
	before := eventsAfter(t, env, 0)
	last := before[len(before)-1].seq
	var askedFirst string
	for _, h := range before {
		if h.ev.Type == bridge.EventAsked && h.ev.JobID == missed.JobID {
			askedFirst = h.msgID
		}
	}
	if err := env.NATS.JS.DeleteConsumer(context.Background(), bridge.StreamEvents, bridge.PlatformSlack); err != nil {
		t.Fatal(err)
	}
	// The new consumer reads the stream from its start: the events Discord
	// has not acknowledged, then the one asked again.
	waitHolding(t, env, bridge.PlatformSlack, uint64(len(before))+1)
	again := eventsAfter(t, env, last)
	if len(again) != 1 || again[0].ev.Type != bridge.EventAsked || again[0].ev.JobID != missed.JobID ||
		again[0].ev.Question == nil || again[0].msgID == askedFirst {
		var got []string
		for _, h := range again {
			got = append(got, h.ev.Type+" "+h.ev.JobID+" "+h.msgID)
		}
		t.Fatalf("after the consumer was made again: %v; want %s asked again under a new id (not %s)", got, missed.JobID, askedFirst)
	}
}
