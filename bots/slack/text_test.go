package slack

import (
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// TestReminderTextByStep checks each ladder step's DM opens with words
// true for whoever gets it: admins own no job.
func TestReminderTextByStep(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	q := &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", Question: "Which colour?"}
	for _, c := range []struct {
		typ, step, want string
	}{
		{bridge.EventReminded, bridge.TargetAnswerers, ":bell: Reminder: a question waits for your answer (job `job-1`)"},
		{bridge.EventEscalated, bridge.TargetOwner, ":rotating_light: A question for one of your jobs is still unanswered (job `job-1`)"},
		{bridge.EventEscalated, bridge.TargetAdmins, ":rotating_light: A question in tenant `acme` is still unanswered (job `job-1`)"},
	} {
		ev := &bridge.Event{Type: c.typ, Step: c.step, Tenant: "acme", JobID: "job-1", QuestionID: "q-1"}
		got := reminderText(ev, q, "", now.Add(-time.Hour), now.Add(time.Hour), now, "")
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s to %s: %q, want it to start %q", c.typ, c.step, got, c.want)
		}
	}
}

// TestListLineOfAHiddenQuestion checks /ask list tells an operator who may
// only decline a question how to, as Discord's /ask list does.
func TestListLineOfAHiddenQuestion(t *testing.T) {
	t.Parallel()
	b := &Bot{}
	v := &bridge.QuestionView{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", Hidden: true}
	if got := b.describe("slack:UREADER", v, false); strings.Contains(got, "decline") {
		t.Errorf("a reader is told %q", got)
	}
	v.CanDecline = true
	want := "`job-1/q-1` (acme) — A question waits here; you may not read what it asks. You may decline it: `/ask decline job-1/q-1 [reason]`."
	if got := b.describe("slack:UOP", v, false); got != want {
		t.Errorf("an operator is told %q, want %q", got, want)
	}
}
