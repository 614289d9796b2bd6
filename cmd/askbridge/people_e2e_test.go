package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestPeopleAcrossSlackAndDiscord runs the whole service with Slack and
// Discord: kevin, linked on both by ASK_PEOPLE, approves once on Slack and
// again on Discord, and it counts once of the two approvals the policy
// asks; a restricted question for person:kevin then reaches him in one DM,
// on Discord, where he was last active, none on Slack (listed first).
func TestPeopleAcrossSlackAndDiscord(t *testing.T) {
	t.Parallel()
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, pol, "tenants:\n  acme:\n    actions:\n      refund: {require_approval: true, required_approvals: 2}\n")
	r := startRace(t, func(c *config.Config) { c.Policy, c.PeopleList = pol, "kevin=slack:U0KEV|discord:"+raceKevinD })

	amount := 240.0
	q := raceQuestion("job-pe", "q-pe")
	q.Kind, q.Choices, q.Question = bridge.KindApproval, nil, "May I refund order 4471?"
	q.Proposal = &bridge.Proposal{ID: "pr_people", Action: "refund", Summary: []string{"Refund $240 to Jane D."},
		Arguments: json.RawMessage(`{"order":4471,"amount":240}`), Amount: &amount, Currency: "USD"}
	if err := r.ag.Publish(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	block := "ask.acme.job-pe.q-pe.1"
	approveD := "ab:ok:acme:job-pe:q-pe:1"
	var ts string
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		ts = ""
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, c := range r.calls {
			if c.Method == "chat.postMessage" && strings.Contains(c.Form.Get("blocks"), `"block_id":"`+block+`"`) {
				ts = c.TS
			}
		}
		found := false
		for _, m := range r.dmsgs {
			found = found || strings.Contains(fmt.Sprint(m["components"]), approveD)
		}
		if ts == "" || !found {
			return fmt.Errorf("cards: slack %q, discord %v", ts, found)
		}
		return nil
	})

	r.signedSlack(r.slackClick("U0KEV", "trig-kev", ts, block, "approve", "approve"), nil)
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		for _, ev := range r.events.of("job-pe", "q-pe") {
			if ev.Type == bridge.EventApproval {
				if ev.Text != "1 of 2 approvals: kevin" || ev.Person != "kevin" {
					t.Fatalf("approval_recorded: %q, person %q", ev.Text, ev.Person)
				}
				return nil
			}
		}
		return fmt.Errorf("events %s", eventTypes(r.events.of("job-pe", "q-pe")))
	})
	in := r.discordInteraction(3, map[string]any{"custom_id": approveD, "component_type": 2})
	r.signedDiscord(in)
	const again = "kevin has already approved this proposal as slack:U0KEV; it needs 2 approvals from different people (1 of 2 approvals: kevin)."
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		for _, s := range r.followups(in["id"].(string)) {
			if strings.Contains(s, again) {
				return nil
			}
		}
		return fmt.Errorf("kevin on Discord told %q", r.followups(in["id"].(string)))
	})
	r.signedSlack(r.slackClick("U0ADM", "trig-adm", ts, block, "approve", "approve"), nil)
	if out := r.outcome(q, 1); out.Outcome != bridge.OutcomeAnswered || string(out.Answer) != `"approved"` || out.By != "slack:U0ADM" {
		t.Fatalf("outcome %+v", out)
	}

	secret := raceQuestion("job-pr", "q-pr")
	secret.Question, secret.Answerers, secret.Visibility = "Which salary band should the offer use?", []string{"person:kevin"}, bridge.VisibilityRestricted
	if err := r.ag.Publish(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	dmsTo := func() (slack, discord int) {
		for _, c := range r.Calls("chat.postMessage") {
			if c.Form.Get("channel") == "D0KEV" && strings.Contains(c.Form.Get("text"), secret.Question) {
				slack++
			}
		}
		for _, c := range r.Calls("discord.post") {
			if strings.Contains(c.Path, "/channels/77"+raceKevinD+"/") && strings.Contains(fmt.Sprint(c.JSON["embeds"]), secret.Question) {
				discord++
			}
		}
		return slack, discord
	}
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		if _, d := dmsTo(); d == 0 {
			return fmt.Errorf("no Discord DM to kevin yet; events %s", eventTypes(r.events.of("job-pr", "q-pr")))
		}
		return nil
	})
	// The Slack card too: Slack, which DMs after its card, has handled the
	// asked event.
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		for _, c := range r.Calls("chat.postMessage") {
			if strings.Contains(c.Form.Get("blocks"), `"block_id":"ask.acme.job-pr.q-pr.1"`) {
				return nil
			}
		}
		return fmt.Errorf("no Slack card of q-pr")
	})
	if s, d := dmsTo(); s != 0 || d != 1 {
		t.Errorf("kevin got %d Slack and %d Discord DMs, want one on Discord", s, d)
	}
}
