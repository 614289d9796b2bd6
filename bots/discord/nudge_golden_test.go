package discord

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bridge"
	neutral "github.com/askbridge/askbridge/card"
)

// nudgeRound is a round of job-1: the top question (restricted when asked)
// re-surfaced, two more waiting.
func nudgeRound(restricted bool) *bridge.Event {
	at := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	q := func(id, prio, text string) bridge.NudgeQuestion {
		return bridge.NudgeQuestion{
			QueueItem: bridge.QueueItem{QuestionID: id, TaskVersion: 1, Priority: prio, Staleness: 1, AskedAt: at, Deadline: at.Add(4 * time.Hour)},
			Question: &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: id, TaskVersion: 1, Question: text, Priority: prio,
				Answerers: []string{"discord:" + kevin.ID}},
			Step: bridge.TargetAnswerers, Targets: []string{"discord:" + kevin.ID},
		}
	}
	top := q("q-block", "blocking", "Which region should the report cover?")
	if restricted {
		top.Question.Visibility = bridge.VisibilityRestricted
	}
	return &bridge.Event{Type: bridge.EventReminded, EventID: "round-1", Tenant: "acme", JobID: "job-1", QuestionID: "q-block", TaskVersion: 1,
		Question: top.Question, Deadline: at.Add(4 * time.Hour), Step: bridge.TargetAnswerers, Targets: []string{"discord:" + kevin.ID},
		Nudge: &bridge.Nudge{Resurface: true, Questions: []bridge.NudgeQuestion{top, q("q-high", "high", "How many copies?"), q("q-low", "low", "Should the footer name the team?")}}}
}

// The re-surfaced question says the same on Slack and Discord, in
// card.NudgeOf's words; the drawings are kept as goldens.
func TestNudgeSameWords(t *testing.T) {
	t.Parallel()
	for _, restricted := range []bool{false, true} {
		name := "nudge"
		if restricted {
			name = "nudge_restricted"
		}
		n, ok := neutral.NudgeOf(nudgeRound(restricted))
		if !ok {
			t.Fatal("no nudge")
		}
		blocks, _ := blockkit.Nudge(n, "https://acme.slack.com/archives/C0123/p1", true)
		sj, _ := json.Marshal(blocks)
		slackText := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(string(sj))
		m := nudgeMessage(n, &card{Guild: "900", Channel: channelA, Thread: "5555", MessageID: "6666"}, "round-1", true)
		dj, _ := json.Marshal(m)
		for _, want := range []string{n.Lead, n.More, "job-1"} {
			if !strings.Contains(slackText, want) || !strings.Contains(string(dj), want) {
				t.Errorf("%s: %q missing: slack %s / discord %s", name, want, slackText, dj)
			}
		}
		if restricted {
			for _, s := range []string{slackText, string(dj)} {
				if strings.Contains(s, "Which region") || !strings.Contains(s, "A restricted question waits for") {
					t.Errorf("%s shows the restricted question: %s", name, s)
				}
			}
		} else if !strings.Contains(slackText, n.Title) || !strings.Contains(string(dj), n.Title) {
			t.Errorf("%s: the question is missing", name)
		}
		golden(t, filepath.Join("testdata", "nudge", name+"_slack.golden"), blocks)
		golden(t, filepath.Join("testdata", "nudge", name+"_discord.golden"), m)
	}
	b := &Bot{}
	r, _ := neutral.ReminderOf(nudgeRound(false), "discord:"+kevin.ID)
	golden(t, filepath.Join("testdata", "nudge", "reminder_discord.golden"), b.mergedReminder(nudgeRound(false), r, nil, "discord:"+kevin.ID))
}
