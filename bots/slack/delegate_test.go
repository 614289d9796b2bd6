package slack

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// c2s is v as JSON.
func c2s(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

// said waits for an ephemeral reply through a response_url that contains want.
func (h *harness) said(t *testing.T, want string) string {
	t.Helper()
	var got []string
	var found string
	testenv.CheckFor(t, wait, tick, func() error {
		got = got[:0]
		for _, c := range h.fake.Calls("response_url") {
			text, _ := c.JSON["text"].(string)
			got = append(got, text)
			if strings.Contains(text, want) {
				found = text
				return nil
			}
		}
		return fmt.Errorf("no ephemeral reply saying %q; saw %q", want, got)
	})
	return found
}

// TestAskSomeoneElse: dana may not answer; kevin picks her in the user
// picker; the card says so, she gets a DM, and her answer counts.
func TestAskSomeoneElse(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	q := question("job-dg", "q-dg")
	publishQuestion(t, env, q)
	card := h.posted(t, "q-dg")
	ts := h.cardTS(t, q)
	block := actionsBlock(card)

	// Before: dana's click is refused.
	h.interact(h.fake.click("U0DANA", "dana", "trig-d1", "C0123", ts, block, "choice.0", "red", ""))
	h.said(t, "You can't answer this question: slack:U0DANA is not one of its answerers")

	// Kevin: Ask someone else opens the user picker at once.
	h.interact(h.fake.click("U0KEV", "kevin", "trig-k1", "C0123", ts, block, blockkit.ActionMore, "", "delegate"))
	var opened apiCall
	testenv.CheckFor(t, wait, tick, func() error {
		for _, c := range h.fake.Calls("views.open") {
			if c.Str("trigger_id") == "trig-k1" {
				opened = c
				return nil
			}
		}
		return fmt.Errorf("no views.open with the click's trigger id")
	})
	if view := c2s(opened.JSON["view"]); !strings.Contains(view, `"users_select"`) || !strings.Contains(view, blockkit.CallbackDelegate) {
		t.Fatalf("the picker: %s", view)
	}
	// Submitting nobody is refused inline.
	resp, body := h.interact(submission("U0KEV", "kevin", opened, "V-dg", "h-0", map[string]map[string]any{
		blockkit.BlockDelegate: {"type": "users_select"}}))
	if resp.StatusCode != 200 || !strings.Contains(body, "Pick the person to ask.") {
		t.Fatalf("empty pick: %d %s", resp.StatusCode, body)
	}
	resp, body = h.interact(submission("U0KEV", "kevin", opened, "V-dg", "h-1", map[string]map[string]any{
		blockkit.BlockDelegate: {"type": "users_select", "selected_user": "U0DANA"}}))
	if resp.StatusCode != 200 || strings.Contains(body, "errors") {
		t.Fatalf("pick: %d %s", resp.StatusCode, body)
	}

	// The card says kevin asked dana, and keeps its controls.
	testenv.CheckFor(t, wait, tick, func() error {
		for _, c := range h.fake.Calls("chat.update") {
			blocks := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(c.Str("blocks"))
			if c.Str("ts") == ts && strings.Contains(blocks, "@kevin asked <@U0DANA> to answer") && actionsBlock(c) != "" {
				return nil
			}
		}
		return fmt.Errorf("no chat.update naming the delegation; %d updates", len(h.fake.Calls("chat.update")))
	})
	// Dana got a DM with the question.
	testenv.CheckFor(t, wait, tick, func() error {
		for _, c := range h.fake.Calls("chat.postMessage") {
			if c.Str("channel") == "D0DANA" && strings.Contains(c.Str("text"), "@kevin asked you to answer a question") &&
				strings.Contains(c.Str("text"), q.Question) {
				return nil
			}
		}
		return fmt.Errorf("no DM to dana")
	})

	// After: dana answers, and it counts.
	h.interact(h.fake.click("U0DANA", "dana", "trig-d2", "C0123", ts, block, "choice.1", "blue", ""))
	if out := awaitOutcome(t, env, q); out.Outcome != bridge.OutcomeAnswered || out.By != "slack:U0DANA" {
		t.Fatalf("outcome = %+v", out)
	}
}

// TestRemindMeLater: kevin's overflow option snoozes his reminders; he is
// told when he is reminded next, and the card does not change.
func TestRemindMeLater(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	q := question("job-sz", "q-sz")
	publishQuestion(t, env, q)
	card := h.posted(t, "q-sz")
	ts := h.cardTS(t, q)
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-sz")
	h.interact(h.fake.click("U0KEV", "kevin", "trig-z1", "C0123", ts, actionsBlock(card), blockkit.ActionMore, "", "snooze.1h"))
	text := h.said(t, "I'll remind you of this question at ")
	var ev bridge.Event
	testenv.CheckFor(t, wait, tick, func() error {
		for _, e := range events.Events() {
			if e.Type == bridge.EventSnoozed {
				ev = e
				return nil
			}
		}
		return fmt.Errorf("no snoozed event: %s", events.EventTypes())
	})
	if ev.By != "slack:U0KEV" || ev.Until.Sub(ev.At) != time.Hour || !strings.Contains(text, ev.Until.UTC().Format("15:04")) {
		t.Fatalf("snoozed %+v, told %q", ev, text)
	}
	if n := len(h.fake.Calls("chat.update")); n != 0 {
		t.Fatalf("a snooze redrew the card %d times", n)
	}
	// A stranger's snooze is refused, privately.
	h.interact(h.fake.click("U0BAD", "mallory", "trig-z2", "C0123", ts, actionsBlock(card), blockkit.ActionMore, "", "snooze.1h"))
	h.said(t, "You can't answer this question: slack:U0BAD")
	raw, _ := json.Marshal(ev)
	if strings.Contains(string(raw), "U0BAD") {
		t.Fatalf("the stranger's snooze was recorded")
	}
}
