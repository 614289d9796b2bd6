package discord

import (
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
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	fake.failOn(failRule{Method: "PATCH", Prefix: "/channels/" + channelA + "/messages/", Status: 502, Times: 2})
	h.interact(h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string)))
	if res := await(t, env, q); res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: blue" {
		t.Fatalf("resume = %+v", res)
	}
	settledCard(t, msg["id"].(string), "**blue**")
}

// TestFailedReminderDMsDoNotStopTheLadder checks a DM Discord refuses
// (50007) is skipped and one it failed for now (5xx) is sent again, while
// the ladder climbs on to the timeout.
func TestFailedReminderDMsDoNotStopTheLadder(t *testing.T) {
	env, h := startE2E(t, runtime.Roles{})
	const owner = "4242"
	fake.blockDMs(kevin.ID)
	fake.failOn(failRule{Method: "POST", Prefix: "/channels/77" + owner + "/messages", Status: 503, Times: 1})
	q := colorQuestion()
	q.Timeout, q.Owner = "4s", "discord:"+owner
	ask(t, env, q)
	h.posted(channelA, 1)
	res := await(t, env, q)
	if res.Outcome != bridge.OutcomeTimedOut || res.Failure != nil {
		t.Fatalf("resume = %+v", res)
	}
	testenv.CheckFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		if n := len(fake.requests("POST", "/channels/77"+owner+"/messages")); n != 2 {
			return fmt.Errorf("%d DM requests to the owner, want the failed one and its retry", n)
		}
		return nil
	})
}
