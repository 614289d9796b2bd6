package card

import (
	"fmt"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// Nudge is what a job's thread shows when a ladder round re-surfaces the
// top of the job's queue (docs/contract.md, "The queue and nudges").
type Nudge struct {
	Tenant      string
	JobID       string
	QuestionID  string
	TaskVersion int64
	// Lead opens the message; Title is the question's text. A Hidden
	// (restricted) question shows no text: only that it waits for
	// WaitsFor, which each renderer names in its own mentions.
	Lead     string
	Title    string
	Hidden   bool
	WaitsFor []string
	// More says how many other questions wait ("2 more questions wait
	// for this job"); "" when none does.
	More     string
	Deadline time.Time
}

// NudgeOf is the thread message of a reminded or escalated event whose
// nudge re-surfaces its question; ok is false when it re-surfaces none.
func NudgeOf(ev *bridge.Event) (n Nudge, ok bool) {
	if ev.Nudge == nil || !ev.Nudge.Resurface || ev.Question == nil {
		return Nudge{}, false
	}
	q := ev.Question
	n = Nudge{Tenant: ev.Tenant, JobID: ev.JobID, QuestionID: ev.QuestionID, TaskVersion: ev.TaskVersion,
		Lead: "Still waiting for an answer", Title: q.Question, More: MoreQuestions(ev.Nudge.More()), Deadline: ev.Deadline}
	if q.Restricted() {
		// A thread is read by everyone in its channel.
		n.Hidden, n.Title, n.WaitsFor = true, "", q.WaitsFor()
	}
	return n, true
}

// MoreQuestions is the line summarising the questions that wait besides the
// one shown: "2 more questions wait for this job", "" for none.
func MoreQuestions(more int) string {
	switch {
	case more <= 0:
		return ""
	case more == 1:
		return "1 more question waits for this job"
	}
	return fmt.Sprintf("%d more questions wait for this job", more)
}

// Reminder is the one direct message a person gets about a job in a
// ladder round that reminds them of several of its questions.
type Reminder struct {
	Tenant string
	JobID  string
	Intro  string
	Items  []ReminderItem
}

// ReminderItem is one question of a merged reminder, in queue order.
type ReminderItem struct {
	QuestionID  string
	TaskVersion int64
	Priority    string
	// Text is the question; a Hidden one has none: the reader may know
	// only that a restricted question waits for WaitsFor.
	Text     string
	Hidden   bool
	WaitsFor []string
	Deadline time.Time
}

// ReminderOf is target's merged reminder of ev's round: ok is false when
// the round reminds them of fewer than two questions of the job (the one
// question reminder is drawn as before).
func ReminderOf(ev *bridge.Event, target string) (r Reminder, ok bool) {
	items := ev.Nudge.For(target)
	if len(items) < 2 {
		return Reminder{}, false
	}
	r = Reminder{Tenant: ev.Tenant, JobID: ev.JobID, Intro: reminderIntro(ev.Step, ev.Tenant, ev.JobID, len(items))}
	for _, nq := range items {
		it := ReminderItem{QuestionID: nq.QuestionID, TaskVersion: nq.TaskVersion, Priority: nq.Priority, Deadline: nq.Deadline}
		step := *ev
		step.Step = nq.Step
		switch {
		case nq.Question == nil:
			it.Text = "A question is waiting."
		case bridge.ReminderShowsQuestion(&step, nq.Question, target):
			it.Text = nq.Question.Question
		default:
			it.Hidden, it.WaitsFor = true, nq.Question.WaitsFor()
		}
		r.Items = append(r.Items, it)
	}
	return r, true
}

func reminderIntro(step, tenant, job string, n int) string {
	switch step {
	case bridge.TargetOwner:
		return fmt.Sprintf("Nobody has answered %d questions on your job %s yet.", n, job)
	case bridge.TargetAdmins:
		return fmt.Sprintf("%d questions of job %s in tenant %s are still unanswered; they are escalated to the admins.", n, job, tenant)
	}
	return fmt.Sprintf("Reminder: %d questions of job %s wait for your answer.", n, job)
}
