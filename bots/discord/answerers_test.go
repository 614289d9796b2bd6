package discord

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// olga is an operator by her Discord role.
var olga = person{ID: "3000000000000000007", Name: "olga", Roles: []string{operRole}}

// ephemeralText is the content of an ephemeral interaction response.
func ephemeralText(t *testing.T, resp map[string]any) string {
	t.Helper()
	d, _ := resp["data"].(map[string]any)
	if resp["type"] != float64(4) || d["flags"] != float64(64) {
		t.Fatalf("response = %v, want an ephemeral message", resp)
	}
	s, _ := d["content"].(string)
	return s
}

// TestE2EOperatorAnswersForASlackAnswerer checks answerers add people: a
// question addressed to a Slack user is answered by a Discord operator,
// by a signed button click.
func TestE2EOperatorAnswersForASlackAnswerer(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	q.Answerers = []string{"slack:U0ANA"}
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	h.interact(h.click(olga, findComponent(t, msg, "blue")["custom_id"].(string)))
	if res := await(t, env, q); res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: blue" || res.By != "discord:"+olga.ID {
		t.Fatalf("resume = %+v", res)
	}
	h.fake.settledCard(t, msg["id"].(string), "Answered by <@"+olga.ID+">: blue")
}

// TestE2ERestrictedQuestionOperatorDeclines checks an operator may not open
// the answer form of a restricted question and is told why, does not see
// it through /ask, and may decline it.
func TestE2ERestrictedQuestionOperatorDeclines(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{Admins: []string{"discord:" + ana.ID}})
	q := colorQuestion()
	q.Choices, q.Question = nil, "Which salary band should the offer use?"
	q.Owner = "slack:U0OWNER"
	q.Visibility = bridge.VisibilityRestricted
	ask(t, env, q)
	msg := h.posted(channelA, 1)

	// The answer form, whatever the card offers, is for those who may read it.
	answerID := customID(actAnswer, q.Tenant, q.JobID, q.QuestionID, q.TaskVersion, 0)
	const why = "You can't answer this question: it is restricted to discord:3000000000000000001, slack:U0OWNER and admins; you may decline it without seeing it."
	if s := ephemeralText(t, h.interact(h.click(olga, answerID))); s != why {
		t.Fatalf("operator's Answer click: %q, want %q", s, why)
	}
	if resp := h.interact(h.click(kevin, answerID)); resp["type"] != float64(9) {
		t.Fatalf("answerer's Answer click = %v, want the form", resp)
	}

	// /ask: the operator learns that it waits and for whom, and may decline.
	for _, cmd := range []struct{ sub string }{{"list"}, {"show"}} {
		s := ephemeralText(t, h.interact(h.command(olga, cmd.sub, map[string]string{"question": "q-1", "job": "job-1"})))
		if strings.Contains(s, q.Question) || !strings.Contains(s, "restricted question waits") ||
			!strings.Contains(s, "<@"+kevin.ID+">, slack:U0OWNER and admins") {
			t.Errorf("operator's /ask %s = %q", cmd.sub, s)
		}
	}
	if s := ephemeralText(t, h.interact(h.command(olga, "show", map[string]string{"question": "q-1"}))); !strings.Contains(s, "You may decline it: `/ask decline question:acme/job-1/q-1`.") {
		t.Errorf("operator's /ask show = %q", s)
	}
	resp := h.interact(h.command(ana, "show", map[string]string{"question": "q-1"}))
	if e := resp["data"].(map[string]any)["embeds"].([]any)[0].(map[string]any); e["description"] != q.Question {
		t.Errorf("admin's /ask show embed = %v", e)
	}

	// Decline from the card.
	modal := h.interact(h.click(olga, findComponent(t, msg, "Decline")["custom_id"].(string)))
	if data, _ := json.Marshal(modal); strings.Contains(string(data), q.Question) {
		t.Fatalf("the decline form shows the question: %s", data)
	}
	h.interact(h.submit(olga, modal["data"].(map[string]any)["custom_id"].(string), map[string]string{"reason": "Kevin is on leave"}))
	if res := await(t, env, q); res.Outcome != bridge.OutcomeDeclined || res.Text != "discord:"+olga.ID+" (olga) declined to answer: Kevin is on leave." {
		t.Fatalf("resume = %+v", res)
	}
}

// TestRestrictedReminderDMToOperators checks the DM reminding operators of
// a restricted question that names no answerers says only that it waits
// and for whom.
func TestRestrictedReminderDMToOperators(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := colorQuestion()
	q.Answerers, q.Owner, q.Visibility = nil, "discord:"+ana.ID, bridge.VisibilityRestricted
	ev := asked(q)
	h.publishEvent(ev)
	h.posted(channelA, 1)
	h.publishEvent(bridge.Event{Type: bridge.EventReminded, EventID: "ob-rem-r", Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
		Step: bridge.TargetAnswerers, Targets: []string{"discord:" + kevin.ID}, Question: &q, AskedAt: ev.AskedAt, Deadline: ev.Deadline})
	var dm fakeReq
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		reqs := h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages")
		if len(reqs) != 1 {
			return fmt.Errorf("%d DMs to the operator", len(reqs))
		}
		dm = reqs[0]
		return nil
	})
	body := dm.JSON(t)
	e := body["embeds"].([]any)[0].(map[string]any)
	if strings.Contains(string(dm.Body), q.Question) || strings.Contains(string(dm.Body), q.WhyItMatters) ||
		body["content"] != "A restricted question is waiting; you may decline it." ||
		e["description"] != "A restricted question waits for <@"+ana.ID+"> and admins; only they may read it." {
		t.Fatalf("DM = %s", dm.Body)
	}
}
