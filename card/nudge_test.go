package card

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func golden(t *testing.T, name string, v any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./card -update)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s differs from %s:\n%s", name, path, buf.Bytes())
	}
}

var nudgeAt = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

// nudgeEvent is a round of job-1 reminding ana of three questions, the
// blocking one on top; the low one is restricted to ben.
func nudgeEvent() *bridge.Event {
	q := func(id, prio, text string) bridge.NudgeQuestion {
		return bridge.NudgeQuestion{
			QueueItem: bridge.QueueItem{QuestionID: id, TaskVersion: 1, Priority: prio, Staleness: 1, AskedAt: nudgeAt, Deadline: nudgeAt.Add(time.Hour)},
			Question:  &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: id, TaskVersion: 1, Question: text, Priority: prio, Answerers: []string{"slack:UANA"}},
			Step:      bridge.TargetAnswerers, Targets: []string{"slack:UANA"},
		}
	}
	top := q("q-block", "blocking", "Which region should the report cover?")
	low := q("q-low", "low", "Should the footer name the team?")
	low.Question.Visibility, low.Question.Answerers, low.Question.Owner = bridge.VisibilityRestricted, []string{"slack:UBEN"}, "slack:UOWN"
	low.Targets = []string{"slack:UANA", "slack:UBEN"}
	return &bridge.Event{Type: bridge.EventReminded, Tenant: "acme", JobID: "job-1", QuestionID: "q-block", TaskVersion: 1,
		Question: top.Question, Deadline: nudgeAt.Add(time.Hour), Step: bridge.TargetAnswerers, Targets: []string{"slack:UANA", "slack:UBEN"},
		Nudge: &bridge.Nudge{Resurface: true, Questions: []bridge.NudgeQuestion{top, q("q-high", "high", "How many copies?"), low}}}
}

func TestNudgeTexts(t *testing.T) {
	ev := nudgeEvent()
	n, ok := NudgeOf(ev)
	if !ok || n.More != "2 more questions wait for this job" || n.Title != "Which region should the report cover?" {
		t.Fatalf("nudge = %+v, %v", n, ok)
	}
	golden(t, "nudge_blocking", n)
	r, ok := ReminderOf(ev, "slack:UANA")
	if !ok || len(r.Items) != 3 || r.Intro != "Reminder: 3 questions of job job-1 wait for your answer." {
		t.Fatalf("ana's reminder = %+v, %v", r, ok)
	}
	if !r.Items[2].Hidden || r.Items[2].Text != "" {
		t.Fatalf("ana may not read the restricted question: %+v", r.Items[2])
	}
	golden(t, "reminder_merged", r)
	if _, ok := ReminderOf(ev, "slack:UBEN"); ok {
		t.Fatal("ben is reminded of one question: no merged reminder")
	}

	owner := nudgeEvent()
	owner.Type, owner.Step = bridge.EventEscalated, bridge.TargetOwner
	for i := range owner.Nudge.Questions {
		owner.Nudge.Questions[i].Step, owner.Nudge.Questions[i].Targets = bridge.TargetOwner, []string{"slack:UOWN"}
	}
	r, _ = ReminderOf(owner, "slack:UOWN")
	if r.Intro != "Nobody has answered 3 questions on your job job-1 yet." || r.Items[2].Hidden {
		t.Fatalf("owner's reminder = %+v", r)
	}

	restricted := nudgeEvent()
	restricted.Question = restricted.Nudge.Questions[2].Question
	restricted.Nudge.Questions = restricted.Nudge.Questions[2:]
	n, _ = NudgeOf(restricted)
	if !n.Hidden || n.Title != "" || n.More != "" || len(n.WaitsFor) != 2 {
		t.Fatalf("restricted nudge = %+v", n)
	}
	golden(t, "nudge_restricted", n)

	quiet := nudgeEvent()
	quiet.Nudge.Resurface = false
	if _, ok := NudgeOf(quiet); ok {
		t.Fatal("a round that does not resurface posts nothing in the thread")
	}
	if MoreQuestions(1) != "1 more question waits for this job" {
		t.Fatal(MoreQuestions(1))
	}
}

func TestQueueTable(t *testing.T) {
	items := []bridge.QueueItem{
		{QuestionID: "q-block", Priority: "blocking", Staleness: 2, AskedAt: nudgeAt.Add(-2*time.Hour - 5*time.Minute), BlockedTools: []string{"send_report", "email"}, Text: "Which region should the report cover?"},
		{QuestionID: "q-high", Priority: "high", Staleness: 0, AskedAt: nudgeAt.Add(-40 * time.Second), BlockedTools: []string{}, Text: "How many\ncopies?"},
		{QuestionID: "q-low", Priority: "low", Staleness: 11, AskedAt: nudgeAt.Add(-73 * time.Hour), Hidden: true, Restricted: true, BlockedTools: []string{}},
	}
	got := QueueTable(items, nudgeAt, 30)
	want := strings.Join([]string{
		"#  QUESTION  PRIORITY  STALENESS  WAITING  BLOCKS             ASKS",
		"1  q-block   blocking  2          2h 5m    send_report,email  Which region should the repor…",
		"2  q-high    high      0          40s      -                  How many copies?",
		"3  q-low     low       11         3d 1h    -                  (restricted: you may see only that it waits)",
	}, "\n")
	if got != want {
		t.Fatalf("table:\n%s\nwant:\n%s", got, want)
	}
}
