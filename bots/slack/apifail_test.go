package slack

import (
	"fmt"
	"net/http"
	"testing"

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
	env, h := e2e(t, runtime.Roles{Admins: []string{"slack:U0ADM"}})
	h.fake.fail("conversations.open", http.StatusOK, nil, `{"ok":false,"error":"user_not_found"}`)
	h.fake.fail("conversations.open", http.StatusServiceUnavailable, nil, `{"ok":false,"error":"service_unavailable"}`)
	q := question("job-dm", "q-dm")
	q.Timeout = "6s"
	publishQuestion(t, env, q)
	h.posted(t, "q-dm")
	out := awaitOutcome(t, env, q)
	if out.Outcome != bridge.OutcomeTimedOut || out.Failure != nil {
		t.Fatalf("outcome: %+v", out)
	}
	testenv.CheckFor(t, wait, tick, func() error {
		sent := map[string]bool{}
		for _, c := range h.fake.Calls("chat.postMessage") {
			sent[c.Str("channel")] = true
		}
		if !sent["D0OWNER"] || !sent["D0ADM"] {
			return fmt.Errorf("DMs sent to %v", sent)
		}
		return nil
	})
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
