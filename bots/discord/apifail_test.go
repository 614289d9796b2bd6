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

// TestAnswerResumesWhenTheCardEditFails checks a click is decided and the
// job resumed though Discord fails the card's edit (5xx: retried until
// the card shows the answer).
func TestAnswerResumesWhenTheCardEditFails(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	h.fake.failOn(failRule{Method: "PATCH", Prefix: "/channels/" + channelA + "/messages/", Status: 502, Times: 2})
	h.interact(h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string)))
	if res := await(t, env, q); res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: blue" {
		t.Fatalf("resume = %+v", res)
	}
	h.fake.settledCard(t, msg["id"].(string), "Answered by <@"+kevin.ID+">: blue")
}

// TestFailedReminderDMsDoNotStopTheLadder checks a DM Discord refuses
// (50007) is skipped and one it failed for now (5xx) is sent again, while
// the ladder climbs on to the timeout.
func TestFailedReminderDMsDoNotStopTheLadder(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Clock: clock,
		Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	h := start(t, harnessOptions{nats: env.NATS})
	const owner = "4242"
	h.fake.blockDMs(kevin.ID)
	h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/77" + owner + "/messages", Status: 503, Times: 1})
	q := colorQuestion()
	q.Timeout, q.Owner = "4h", "discord:"+owner
	ask(t, env, q)
	h.posted(channelA, 1)

	clock.Advance(time.Hour + time.Second) // the answerers' step: kevin takes no DMs
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if n := len(h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages")); n != 1 {
			return fmt.Errorf("%d DM requests to kevin, want the refused one", n)
		}
		return nil
	})
	clock.Advance(time.Hour) // the owner's step: failed once, then sent
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if n := len(h.fake.requests("POST", "/channels/77"+owner+"/messages")); n != 2 {
			return fmt.Errorf("%d DM requests to the owner, want the failed one and its retry", n)
		}
		return nil
	})
	clock.Advance(2 * time.Hour)
	res := await(t, env, q)
	if res.Outcome != bridge.OutcomeTimedOut || res.Failure != nil {
		t.Fatalf("resume = %+v", res)
	}
	if n := len(h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages")); n != 1 {
		t.Errorf("%d DM requests to kevin, want the one refused: a person who takes no DMs is not tried again", n)
	}
}

// TestUnrecordedClickIsNotAcknowledged checks a click whose attempt could
// not be published (no stream takes answers) is answered with an
// ephemeral error, never the deferred update that acknowledges a click
// (docs/discord.md), and the person's next click is recorded.
func TestUnrecordedClickIsNotAcknowledged(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	ctx := context.Background()
	h.attempts.close(t)
	st, err := env.NATS.JS.Stream(ctx, bridge.StreamAnswers)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.Subjects = []string{"elsewhere.>"}
	if _, err := env.NATS.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	blue := findComponent(t, msg, "blue")["custom_id"].(string)
	resp := h.interact(h.click(kevin, blue))
	data, _ := resp["data"].(map[string]any)
	if resp["type"] != float64(4) || data["flags"] != float64(64) ||
		data["content"] != "askbridge could not record your answer right now; please try again." {
		t.Fatalf("response to an unrecorded click = %v, want the ephemeral error", resp)
	}
	if err := bridge.EnsureStreams(ctx, env.NATS.JS, bridge.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	if resp := h.interact(h.click(kevin, blue)); resp["type"] != float64(6) {
		t.Fatalf("response to the click again = %v, want a deferred update (6)", resp)
	}
	if res := await(t, env, q); res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: blue" {
		t.Fatalf("resume = %+v", res)
	}
}
