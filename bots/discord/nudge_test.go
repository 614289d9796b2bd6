package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// resurfaced are the messages that re-surfaced a question, in order.
func (h *harness) resurfaced(t *testing.T) []map[string]any {
	var out []map[string]any
	for _, r := range h.fake.requests("POST", "/channels/") {
		if strings.HasSuffix(r.Path, "/messages") && strings.Contains(string(r.Body), "Still waiting in job") {
			out = append(out, r.JSON(t))
		}
	}
	return out
}

// Three pending questions of mixed priority on one job: one ladder round
// re-surfaces only the blocking one in the thread, with "2 more questions
// wait", and kevin gets one DM listing the three; /ask queue lists them in
// order; once the blocking one is answered, the next round re-surfaces
// the high one.
func TestE2EOneNudgeOneQuestion(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Clock: clock,
		Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	h := start(t, harnessOptions{nats: env.NATS})
	texts := map[string]string{"q-low": "Should the footer name the team?", "q-high": "How many copies?", "q-block": "Which region should the report cover?"}
	for i, c := range []struct{ id, priority string }{{"q-low", bridge.PriorityLow}, {"q-high", bridge.PriorityHigh}, {"q-block", ""}} {
		q := colorQuestion()
		q.QuestionID, q.Question, q.Priority, q.Timeout = c.id, texts[c.id], c.priority, "4h"
		q.Owner = "discord:" + ana.ID
		ask(t, env, q)
		testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
			if n := len(h.deliveriesNow()); n < i+1 {
				return fmt.Errorf("%d questions shown", n)
			}
			return nil
		})
	}
	resp := h.interact(h.command(kevin, "queue", map[string]string{"job": "acme/job-1"}))
	d, _ := resp["data"].(map[string]any)
	if s, _ := d["content"].(string); d["flags"] != float64(64) || !strings.Contains(s, "Which region should the report cover?") ||
		!inOrder(s, "q-block   blocking", "q-high    high", "q-low     low") {
		t.Fatalf("/ask queue = %v", resp)
	}

	clock.Advance(time.Hour + time.Second) // the answerers' step of all three
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if n := len(h.resurfaced(t)); n != 1 {
			return fmt.Errorf("%d re-surfaced questions", n)
		}
		if n := len(h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages")); n != 1 {
			return fmt.Errorf("%d DMs to kevin", n)
		}
		return nil
	})
	first := h.resurfaced(t)[0]
	e := first["embeds"].([]any)[0].(map[string]any)
	more := e["fields"].([]any)[0].(map[string]any)
	if e["description"] != texts["q-block"] || more["value"] != "2 more questions wait for this job" {
		t.Fatalf("re-surfaced = %v", first)
	}
	// Its console button answers with a job link for whoever clicks.
	btn := findComponent(t, first, "Open job in console")
	reply := h.interact(h.click(ana, btn["custom_id"].(string)))
	rd, _ := reply["data"].(map[string]any)
	var link string
	for _, c := range components(rd) {
		link, _ = c["url"].(string)
	}
	if rd["flags"] != float64(64) || !strings.HasPrefix(link, h.signer.PublicURL+"/console/job/acme/job-1?") {
		t.Fatalf("console click = %v", reply)
	}
	dm := h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages")[0].JSON(t)
	list := dm["embeds"].([]any)[0].(map[string]any)["description"].(string)
	if dm["content"] != "Reminder: 3 questions of job job-1 wait for your answer." ||
		!inOrder(list, "**blocking** Which region", "**high** How many copies?", "**low** Should the footer") {
		t.Fatalf("kevin's DM = %v", dm)
	}

	if err := env.Attempt(context.Background(), bridge.AnswerAttempt{Tenant: "acme", JobID: "job-1", QuestionID: "q-block", TaskVersion: 3,
		AttemptID: "a-block", Action: bridge.ActionAnswer, Answer: json.RawMessage(`"red"`), By: "discord:" + kevin.ID}); err != nil {
		t.Fatal(err)
	}
	await(t, env, bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-block"})
	clock.Advance(time.Hour) // the owner's step: ana
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if n := len(h.resurfaced(t)); n != 2 {
			return fmt.Errorf("%d re-surfaced questions", n)
		}
		if n := len(h.fake.requests("POST", "/channels/77"+ana.ID+"/messages")); n != 1 {
			return fmt.Errorf("%d DMs to ana", n)
		}
		return nil
	})
	e = h.resurfaced(t)[1]["embeds"].([]any)[0].(map[string]any)
	if e["description"] != texts["q-high"] || e["fields"].([]any)[0].(map[string]any)["value"] != "1 more question waits for this job" {
		t.Fatalf("second re-surface = %v", e)
	}
	if dm := h.fake.requests("POST", "/channels/77"+ana.ID+"/messages")[0].JSON(t); dm["content"] != "Nobody has answered 2 questions on your job job-1 yet." {
		t.Fatalf("ana's DM = %v", dm)
	}
	if n := len(h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages")); n != 1 {
		t.Fatalf("kevin got %d DMs; the owner's step reminds only ana", n)
	}
}

// inOrder reports whether s holds each of parts, in that order.
func inOrder(s string, parts ...string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}
