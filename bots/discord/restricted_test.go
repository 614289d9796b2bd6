package discord

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestE2ERestrictedContentGoesToItsPeopleInADM checks a restricted
// question's content reaches the people it names in a Discord DM, once per
// person, while the channel's card and an operator's /ask list and queue
// hide it.
func TestE2ERestrictedContentGoesToItsPeopleInADM(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{
		// Kevin is on Discord first, and on Slack; the owner on Slack only.
		People:    bridge.People{"kevin": {"discord:" + kevin.ID, "slack:U0KEV"}},
		Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	h := start(t, harnessOptions{nats: env.NATS})
	q := colorQuestion()
	q.Question, q.WhyItMatters = "Which salary band should the offer use?", "The offer goes out today."
	q.Choices = []string{"band-4", "band-5"}
	q.Answerers, q.Owner = []string{"person:kevin", "slack:U0KEV"}, "slack:U0OWNER"
	q.Visibility = bridge.VisibilityRestricted
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	secrets := []string{q.Question, q.WhyItMatters, "band-4", "band-5"}
	hides := func(what, s string) {
		t.Helper()
		for _, secret := range secrets {
			if strings.Contains(s, secret) {
				t.Errorf("%s shows %q: %s", what, secret, s)
			}
		}
	}
	card, _ := json.Marshal(msg)
	hides("the channel card", string(card))

	var dm fakeReq
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		reqs := h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages")
		if len(reqs) != 1 {
			return fmt.Errorf("%d DMs to kevin", len(reqs))
		}
		dm = reqs[0]
		return nil
	})
	body := dm.JSON(t)
	e := body["embeds"].([]any)[0].(map[string]any)
	if body["content"] != "A restricted question for you, in job job-1: only the people it names and admins may read it." ||
		e["description"] != q.Question || !strings.Contains(string(dm.Body), q.WhyItMatters) || !strings.Contains(string(dm.Body), "band-4 · band-5") ||
		!strings.Contains(string(dm.Body), "/ask answer question:acme/job-1/q-1 answer:") {
		t.Fatalf("kevin's DM = %s", dm.Body)
	}

	for _, sub := range []string{"list", "queue"} {
		s := ephemeralText(t, h.interact(h.command(olga, sub, map[string]string{"job": "job-1"})))
		hides("the operator's /ask "+sub, s)
		if !strings.Contains(s, "q-1") {
			t.Errorf("the operator's /ask %s does not say it waits: %q", sub, s)
		}
	}
	if reqs := h.fake.requests("POST", "/channels/77"+olga.ID+"/messages"); len(reqs) != 0 {
		t.Errorf("the operator got %d DMs", len(reqs))
	}
	if reqs := h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages"); len(reqs) != 1 {
		t.Errorf("kevin got %d DMs, want one", len(reqs))
	}
	// Kevin answers as his DM says, and the outcome names him as a person.
	h.interact(h.command(kevin, "answer", map[string]string{"question": "acme/job-1/q-1", "answer": "band-5"}))
	if res := await(t, env, q); res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: band-5" || res.Person != "kevin" {
		t.Fatalf("resume = %+v", res)
	}
}
