package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// TestOutcomeEditedOnceAndRecorded checks a posted card is edited once
// and recorded with its outcome and as edited, and that the same outcome
// delivered again (as after a crash, under a new message id) edits
// nothing.
func TestOutcomeEditedOnceAndRecorded(t *testing.T) {
	h := start(t, harnessOptions{})
	q := colorQuestion()
	q.JobID, q.QuestionID = "job-once", "q-once"
	h.publishEvent(asked(q))
	msg := h.posted(channelA, 1)
	id := msg["id"].(string)
	ev := bridge.Event{Type: bridge.EventAnswered, Tenant: "acme", JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion,
		By: "discord:" + kevin.ID, ByName: "kevin", Via: "discord", Answer: json.RawMessage(`"blue"`), AnswerText: "blue",
		Text: "The answer: blue", At: time.Now().UTC().Truncate(time.Millisecond)}
	h.publishEvent(ev)
	checkFor(t, 10*time.Second, func() error {
		c, err := h.bot.loadCard(context.Background(), "acme", q.JobID, q.QuestionID, q.TaskVersion)
		if err != nil || c == nil || c.Outcome == nil || !c.Edited {
			return fmt.Errorf("card record %+v (%v), want the outcome, edited", c, err)
		}
		if c.Outcome.Type != bridge.EventAnswered || c.Outcome.Answer != "blue" || c.MessageID != id {
			return fmt.Errorf("card record %+v", c)
		}
		return nil
	})
	ev.EventID = ""
	h.publishEvent(ev)
	marker := colorQuestion()
	marker.JobID, marker.QuestionID = "job-once", "q-marker"
	h.publishEvent(asked(marker)) // same job: handled after the repeat
	checkFor(t, 10*time.Second, func() error {
		c, err := h.bot.loadCard(context.Background(), "acme", marker.JobID, marker.QuestionID, marker.TaskVersion)
		if err != nil || c == nil || c.MessageID == "" {
			return fmt.Errorf("marker not posted yet (%v)", err)
		}
		return nil
	})
	if n := len(fake.requests("PATCH", "/channels/"+channelA+"/messages/"+id)); n != 1 {
		t.Fatalf("%d edits of the card, want 1", n)
	}
}
