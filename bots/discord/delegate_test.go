package discord

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

var dana = person{ID: "3000000000000000004", Name: "dana"}

// ephemeralComponents are the components of an ephemeral interaction
// response, flattened.
func ephemeralComponents(t *testing.T, resp map[string]any) []map[string]any {
	t.Helper()
	data, _ := resp["data"].(map[string]any)
	if resp["type"] != float64(4) || data["flags"] != float64(64) {
		t.Fatalf("not an ephemeral reply: %v", resp)
	}
	return components(data)
}

// TestAskSomeoneElseOnDiscord: dana may not answer; kevin picks her in a
// user select; the card says so, she gets a DM, and her answer counts.
func TestAskSomeoneElseOnDiscord(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	id := msg["id"].(string)

	// Before: dana's click is refused, to her alone.
	in := h.click(dana, findComponent(t, msg, "red")["custom_id"].(string))
	h.interact(in)
	f := h.fake.followups(t, in["token"].(string), 1)[0].JSON(t)
	if s, _ := f["content"].(string); !strings.HasPrefix(s, "You can't answer this question: discord:"+dana.ID) {
		t.Fatalf("dana before: %v", f)
	}

	// Kevin: Ask someone else replies with a user select.
	resp := h.interact(h.click(kevin, findComponent(t, msg, "Ask someone else")["custom_id"].(string)))
	picker := ephemeralComponents(t, resp)
	if len(picker) != 1 || picker[0]["type"] != float64(5) {
		t.Fatalf("the picker: %v", picker)
	}
	resp = h.interact(h.interaction(3, kevin, map[string]any{"custom_id": picker[0]["custom_id"], "component_type": 5,
		"values": []string{dana.ID}, "resolved": map[string]any{"users": map[string]any{dana.ID: map[string]any{"id": dana.ID, "username": "dana"}}}}))
	if resp["type"] != float64(7) {
		t.Fatalf("the pick's response: %v", resp)
	}

	// The card says kevin asked dana, and keeps its buttons.
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		m := h.fake.message(id)
		e, _ := m["embeds"].([]any)
		if len(e) == 0 {
			return fmt.Errorf("no embed")
		}
		got := fieldValue(e[0].(map[string]any), "Delegated")
		if got != "<@"+kevin.ID+"> asked <@"+dana.ID+"> to answer" || len(components(m)) != 7 {
			return fmt.Errorf("delegated field %q, %d components", got, len(components(m)))
		}
		return nil
	})
	// Dana got a DM with the question.
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, r := range h.fake.requests("POST", "/channels/77"+dana.ID+"/messages") {
			dm := r.JSON(t)
			if s, _ := dm["content"].(string); s == "<@"+kevin.ID+"> asked you to answer a question." &&
				strings.Contains(fmt.Sprint(dm["embeds"]), q.Question) {
				return nil
			}
		}
		return fmt.Errorf("no DM to dana")
	})

	// After: dana answers, and it counts.
	h.interact(h.click(dana, findComponent(t, msg, "blue")["custom_id"].(string)))
	if out := await(t, env, q); out.Outcome != bridge.OutcomeAnswered || out.By != "discord:"+dana.ID {
		t.Fatalf("outcome = %+v", out)
	}
}

// TestRemindMeLaterOnDiscord: Remind me later offers its lengths; the one
// kevin picks moves his next reminder, and he is told when.
func TestRemindMeLaterOnDiscord(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	q.Timeout = "8h"
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-1")

	resp := h.interact(h.click(kevin, findComponent(t, msg, "Remind me later")["custom_id"].(string)))
	var labels []string
	lengths := ephemeralComponents(t, resp)
	for _, c := range lengths {
		labels = append(labels, c["label"].(string))
	}
	if strings.Join(labels, ",") != "In 1 hour,In 4 hours,Tomorrow at 09:00" {
		t.Fatalf("lengths = %v", labels)
	}
	in := h.click(kevin, lengths[1]["custom_id"].(string))
	if resp := h.interact(in); resp["type"] != float64(7) {
		t.Fatalf("the length's response: %v", resp)
	}
	f := h.fake.followups(t, in["token"].(string), 1)[0].JSON(t)
	if s, _ := f["content"].(string); f["flags"] != float64(64) || !strings.HasPrefix(s, "I'll remind you of this question at ") {
		t.Fatalf("told: %v", f)
	}
	var ev bridge.Event
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, e := range events.Events() {
			if e.Type == bridge.EventSnoozed {
				ev = e
				return nil
			}
		}
		return fmt.Errorf("no snoozed event: %s", events.EventTypes())
	})
	if ev.By != "discord:"+kevin.ID || ev.Until.Sub(ev.At) != 4*time.Hour {
		t.Fatalf("snoozed = %+v", ev)
	}
	// The card is not redrawn for a snooze.
	if n := len(h.fake.requests("PATCH", "/channels/")); n != 0 {
		t.Fatalf("a snooze edited the card (%d edits)", n)
	}
}
