package slack

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// TestFailedReminderDMsDoNotStopTheLadder checks a DM Slack refuses (the
// person cannot be messaged) is skipped and one Slack failed for now is
// sent again, while the ladder climbs on to the timeout: a DM failure is
// neither the question's failure nor an answer.
func TestFailedReminderDMsDoNotStopTheLadder(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Clock: clock, Roles: runtime.Roles{Admins: []string{"slack:U0ADM"}},
		Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C0123"}}})
	h := startBot(t, env.NATS, newFakeSlack(t))
	h.fake.fail("conversations.open", http.StatusOK, nil, `{"ok":false,"error":"user_not_found"}`)
	h.fake.fail("conversations.open", http.StatusServiceUnavailable, nil, `{"ok":false,"error":"service_unavailable"}`)
	q := question("job-dm", "q-dm")
	publishQuestion(t, env, q)
	h.posted(t, "q-dm")

	// The answerers' step: kevin cannot be messaged. The owner's step: the
	// first try fails for now. The admins' step: sent at once.
	for i, step := range []struct {
		after time.Duration
		opens int
		sent  []string
	}{
		{time.Hour + time.Second, 1, nil},
		{time.Hour, 3, []string{"D0OWNER"}},
		{time.Hour, 4, []string{"D0OWNER", "D0ADM"}},
	} {
		clock.Advance(step.after)
		testenv.CheckFor(t, wait, tick, func() error {
			opens := len(h.fake.Calls("conversations.open"))
			sent := dmChannels(h.fake)
			if opens != step.opens || !slices.Equal(sent, step.sent) {
				return fmt.Errorf("step %d: %d DM channels opened, DMs sent to %v; want %v", i+1, opens, sent, step.sent)
			}
			return nil
		})
	}
	clock.Advance(time.Hour)
	out := awaitOutcome(t, env, q)
	if out.Outcome != bridge.OutcomeTimedOut || out.Failure != nil {
		t.Fatalf("outcome: %+v", out)
	}
}

// dmChannels is the DM channels messages went to, in order, each once.
func dmChannels(f *fakeSlack) []string {
	var out []string
	for _, c := range f.Calls("chat.postMessage") {
		if ch := c.Str("channel"); strings.HasPrefix(ch, "D") && !slices.Contains(out, ch) {
			out = append(out, ch)
		}
	}
	return out
}

// TestAnswerResumesWhenTheCardUpdateFails checks a click is decided and
// the job resumed though Slack fails the card's update (5xx: retried
// until the card shows the answer).
func TestAnswerResumesWhenTheCardUpdateFails(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	deliveries := collect[bridge.Delivery](t, env.NATS, bridge.PrefixDelivery+".>")
	q := question("job-up", "q-up")
	publishQuestion(t, env, q)
	card := h.posted(t, "q-up")
	d := deliveredTS(t, env.NATS, deliveries, "q-up")
	h.fake.fail("chat.update", http.StatusInternalServerError, nil, `{"ok":false,"error":"internal_error"}`)
	h.fake.fail("chat.update", http.StatusOK, nil, `{"ok":false,"error":"fatal_error"}`)
	resp, body := h.interact(h.fake.click("U0KEV", "kevin", "trig-up", "C0123", d.Message.MessageID, actionsBlock(card), "choice.1", "blue", ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("click: %d %s", resp.StatusCode, body)
	}
	if out := awaitOutcome(t, env, q); out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: blue" {
		t.Fatalf("resume: %+v", out)
	}
	h.updated(t, d.Message.MessageID, "Answered by @kevin: blue")
}
