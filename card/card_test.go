package card

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

func question() *bridge.Question {
	return &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
		Question: "Which colour?", Choices: []string{"red", "blue"}, Timeout: "4h"}
}

func TestMayAnswerNamesAnswerersOwnerAndOperators(t *testing.T) {
	more := make([]string, 12)
	for i := range more {
		more[i] = "slack:U" + strings.Repeat("A", i+1)
	}
	cases := []struct {
		name       string
		answerers  []string
		owner      string
		restricted bool
		listed     int
		want       string
	}{
		{"nobody named", nil, "", false, 10, "operators"},
		{"an answerer", []string{"slack:U0ANA"}, "", false, 10, "slack:U0ANA and operators"},
		{"the owner", nil, "slack:U0KEV", false, 10, "slack:U0KEV (owner) and operators"},
		{"both", []string{"slack:U0ANA"}, "slack:U0KEV", false, 10, "slack:U0ANA, slack:U0KEV (owner), and operators"},
		{"two and the owner", []string{"slack:U0ANA", "discord:1"}, "slack:U0KEV", false, 10,
			"slack:U0ANA, discord:1, slack:U0KEV (owner), and operators"},
		{"more than listed", more, "", false, 2, "slack:UA, slack:UAA, 10 more, and operators"},
		{"restricted", []string{"slack:U0ANA"}, "slack:U0KEV", true, 10,
			"slack:U0ANA, slack:U0KEV (owner), and admins; operators may decline it"},
		{"restricted, nobody named", nil, "", true, 10, "admins; operators may decline it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := question()
			q.Answerers, q.Owner = tc.answerers, tc.owner
			if tc.restricted {
				q.Visibility = bridge.VisibilityRestricted
			}
			l := New(Input{Question: q}).MayAnswer.Line(tc.listed)
			if l.Label != "Who may answer" || l.Text() != tc.want {
				t.Fatalf("%s: %s, want %q", l.Label, l.Text(), tc.want)
			}
		})
	}
}

func TestOutcomeLines(t *testing.T) {
	at := time.Date(2026, 10, 20, 11, 0, 0, 0, time.UTC)
	approval := question()
	approval.Kind, approval.Choices = bridge.KindApproval, nil
	cases := []struct {
		ev    bridge.Event
		q     *bridge.Question
		want  string
		state string
	}{
		{bridge.Event{Type: bridge.EventAnswered, By: "slack:U0KEV", ByName: "kevin", AnswerText: "blue"}, question(), "Answered by slack:U0KEV (kevin): blue", "Answered"},
		{bridge.Event{Type: bridge.EventAnswered, By: "slack:U0KEV", Answer: json.RawMessage(`{"on":"2026-10-20"}`)}, question(), `Answered by slack:U0KEV: {"on":"2026-10-20"}`, "Answered"},
		{bridge.Event{Type: bridge.EventAnswered, By: "slack:U0KEV", Answer: json.RawMessage(`"approved"`)}, approval, "Approved (not yet executed) by slack:U0KEV", "Approved (not yet executed)"},
		{bridge.Event{Type: bridge.EventAnswered, By: "slack:U0KEV", Answer: json.RawMessage(`"denied"`), Comment: "too much"}, approval, "Denied by slack:U0KEV: too much", "Denied"},
		{bridge.Event{Type: bridge.EventDeclined, By: "cli:bob"}, question(), "Declined by cli:bob", "Declined"},
		{bridge.Event{Type: bridge.EventDeclined, By: "cli:bob", Comment: " ask Ana "}, question(), "Declined by cli:bob: ask Ana", "Declined"},
		{bridge.Event{Type: bridge.EventTimedOut, Text: "Nobody answered within 4:00:00."}, question(), "Nobody answered within 4:00:00", "Timed out"},
		{bridge.Event{Type: bridge.EventTimedOut, Text: "Nobody answered within 1:00:00."}, nil, "Nobody answered within 1:00:00", "Timed out"},
		{bridge.Event{Type: bridge.EventTimedOut}, nil, "Nobody answered in time", "Timed out"},
		{bridge.Event{Type: bridge.EventCancelled, Text: bridge.CancelledText("")}, question(), "Cancelled", "Cancelled"},
		{bridge.Event{Type: bridge.EventCancelled, Text: bridge.CancelledText("done by hand")}, question(), "Cancelled: done by hand", "Cancelled"},
		{bridge.Event{Type: bridge.EventCancelled, Status: bridge.CancelRetired, Text: bridge.RetiredText("the topic changed")}, question(),
			"No longer needed: the topic changed", "Cancelled"},
		{bridge.Event{Type: bridge.EventCancelled, Status: bridge.CancelImplicitlyAnswered, Text: bridge.ImplicitlyAnsweredText("blue, as always")}, question(),
			"Answered in conversation: “blue, as always”", "Cancelled"},
		// A view carries the record's text only, with the agent's reason after the evidence.
		{bridge.Event{Type: bridge.EventCancelled, Text: bridge.ImplicitlyAnsweredText("blue") + " Reason: said in the thread"}, question(),
			"Answered in conversation: “blue”", "Cancelled"},
		{bridge.Event{Type: bridge.EventSuperseded, Text: bridge.SupersededText(4)}, question(), "Superseded by task version 4", "Superseded"},
		{bridge.Event{Type: bridge.EventSuperseded}, question(), "Superseded by a newer version of this task", "Superseded"},
		{bridge.Event{Type: bridge.EventDeliveryFailed, State: bridge.StateFailed}, question(), "Failed: askbridge could not deliver this question", "Failed"},
	}
	for _, tc := range cases {
		tc.ev.At = at
		c := New(Input{Question: tc.q, End: EndingOf(&tc.ev)})
		if got := c.Outcome.Text(); got != tc.want || c.StateLabel != tc.state || !c.Ended.Equal(at) {
			t.Errorf("%s: outcome %q, state %q; want %q, %q", tc.ev.Type, got, c.StateLabel, tc.want, tc.state)
		}
		if !c.Status().IsZero() || !c.DeadlineLine().IsZero() || len(c.Enabled()) != 0 {
			t.Errorf("%s: a settled card has a status, a deadline or live controls", tc.ev.Type)
		}
	}
}

func TestEventsThatDoNotEndAQuestion(t *testing.T) {
	for _, ev := range []bridge.Event{{Type: bridge.EventAsked}, {Type: bridge.EventRefused}, {Type: bridge.EventReminded},
		{Type: bridge.EventDeliveryFailed, State: bridge.StatePending}} {
		if EndingOf(&ev) != nil {
			t.Errorf("%s (%s) ends the card", ev.Type, ev.State)
		}
	}
	q := question()
	asked := &bridge.Event{Type: bridge.EventAsked, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
		Deadline: time.Date(2026, 10, 20, 14, 0, 0, 0, time.UTC)}
	c := New(FromEvents(q, false, asked, &bridge.Event{Type: bridge.EventReminded}))
	if !c.Pending() || c.Status().Text() != "Waiting for an answer" || c.DeadlineLine().Text() != "20 Oct 2026, 14:00 UTC" {
		t.Fatalf("pending card: %q, %q", c.Status().Text(), c.DeadlineLine().Text())
	}
	c = New(FromEvents(q, false, asked, &bridge.Event{Type: bridge.EventCancelled}, &bridge.Event{Type: bridge.EventAnswered}))
	if c.State != bridge.StateCancelled {
		t.Fatalf("the first ending does not win: %s", c.State)
	}
}

func TestDelegatedLines(t *testing.T) {
	q := question()
	q.Answerers = []string{"slack:U0KEV", "slack:U0DANA"}
	q.Delegations = []bridge.Delegation{{By: "slack:U0KEV", ByName: "kevin", To: "slack:U0DANA"}}
	c := New(Input{Question: q})
	if len(c.Delegated) != 1 || c.Delegated[0].Text() != "slack:U0KEV (kevin) asked slack:U0DANA to answer" {
		t.Fatalf("delegated lines = %+v", c.Delegated)
	}
	if c = New(Input{Question: q, Hidden: true}); len(c.Delegated) != 0 {
		t.Fatalf("a hidden card names who delegated: %+v", c.Delegated)
	}
}

func TestControls(t *testing.T) {
	labels := func(cs []Control) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Label)
		}
		return out
	}
	text, fields, approval, restricted := question(), question(), question(), question()
	text.Choices = nil
	fields.Choices, fields.Fields = nil, []bridge.Field{{Name: "on", Kind: bridge.FieldDate}}
	approval.Kind, approval.Choices = bridge.KindApproval, nil
	restricted.Visibility = bridge.VisibilityRestricted
	cases := []struct {
		q       *bridge.Question
		console bool
		want    []string
	}{
		{question(), false, []string{"red", "blue", "Decline", "Ask someone else", "Remind me later"}},
		{question(), true, []string{"red", "blue", "Decline", "Ask someone else", "Remind me later", "Open in console"}},
		{text, false, []string{"Answer…", "Decline", "Ask someone else", "Remind me later"}},
		{fields, true, []string{"Answer…", "Decline", "Ask someone else", "Remind me later", "Open in console"}},
		{approval, false, []string{"Approve", "Deny", "Decline", "Ask someone else", "Remind me later"}},
		{restricted, true, []string{"Decline", "Ask someone else", "Remind me later", "Open in console"}},
	}
	for _, tc := range cases {
		c := New(Input{Question: tc.q, Console: tc.console})
		if got := labels(c.Enabled()); !slices.Equal(got, tc.want) {
			t.Errorf("%s: controls %q, want %q", c.Kind, got, tc.want)
		}
	}
	settled := New(Input{Question: question(), Console: true, End: &Ending{Event: bridge.EventCancelled}})
	if got := labels(settled.Enabled()); !slices.Equal(got, []string{"Open in console"}) {
		t.Errorf("settled card: controls %q", got)
	}
}

// TestHiddenCardsShowNoContent: a restricted question's card, and a card
// for a reader who may not see the question, carry none of its words.
func TestHiddenCardsShowNoContent(t *testing.T) {
	q := question()
	q.Visibility, q.Context, q.WhyItMatters = bridge.VisibilityRestricted, "secret context", "secret why"
	q.Answerers, q.Owner, q.BlockedTools = []string{"slack:U0ANA"}, "slack:U0KEV", []string{"pay"}
	for _, in := range []Input{{Question: q}, {Question: q, Hidden: true}, {Hidden: true}, {}} {
		c := New(in)
		raw, _ := json.Marshal(c)
		for _, secret := range []string{"Which colour", "red", "secret", "pay"} {
			if strings.Contains(string(raw), secret) {
				t.Errorf("hidden card (hidden %v) shows %q: %s", in.Hidden, secret, raw)
			}
		}
		if c.Kind != KindHidden || c.Placeholder == "" || c.Text != "" {
			t.Errorf("hidden card: kind %s, placeholder %q", c.Kind, c.Placeholder)
		}
	}
	if c := New(Input{}); c.Placeholder != PlaceholderUnknown {
		t.Errorf("a card without its question says %q", c.Placeholder)
	}
	answered := New(Input{Question: q, End: &Ending{Event: bridge.EventAnswered, By: "slack:U0ANA", Answer: "red"}})
	if got := answered.Outcome.Text(); got != "Answered by slack:U0ANA" {
		t.Errorf("a restricted question's outcome says its answer: %q", got)
	}
	if c := New(FromView(&bridge.QuestionView{State: bridge.StatePending, Question: q}, false)); c.Text != q.Question {
		t.Errorf("a restricted question is hidden from a reader the runtime let read it: %+v", c)
	}
	c := New(Input{Question: q})
	if c.Placeholder != "A restricted question waits for the people named below: only they and admins may read it." ||
		c.MayAnswer.All().Text() != "slack:U0ANA, slack:U0KEV (owner), and admins; operators may decline it" {
		t.Errorf("restricted card: %q / %q", c.Placeholder, c.MayAnswer.All().Text())
	}
}

// TestFromViewOfARestrictedQuestion: a reader the runtime hides a
// restricted question from learns whom it waits for, as a channel does.
func TestFromViewOfARestrictedQuestion(t *testing.T) {
	v := &bridge.QuestionView{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", State: bridge.StatePending,
		Hidden: true, Restricted: true, WaitsFor: []string{"slack:U0ANA"}}
	c := New(FromView(v, false))
	if c.Kind != KindHidden || c.Placeholder != placeholderNamed ||
		c.MayAnswer.All().Text() != "slack:U0ANA and admins; operators may decline it" {
		t.Fatalf("%s: %q / %q", c.Kind, c.Placeholder, c.MayAnswer.All().Text())
	}
	v.Restricted, v.WaitsFor = false, nil
	if c := New(FromView(v, false)); c.Placeholder != PlaceholderHidden || !c.MayAnswer.IsZero() {
		t.Fatalf("hidden view: %q / %q", c.Placeholder, c.MayAnswer.All().Text())
	}
}

func TestFromViewOfAQuestionFailedOnItsTimeout(t *testing.T) {
	v := &bridge.QuestionView{State: bridge.StateFailed, Text: bridge.TimedOutText(time.Hour), Question: question()}
	if c := New(FromView(v, false)); c.State != bridge.StateTimedOut || c.Outcome.Text() != "Nobody answered within 4:00:00" {
		t.Fatalf("%s: %q", c.State, c.Outcome.Text())
	}
}

func TestCasesCoverEveryEndingAndKind(t *testing.T) {
	seen := map[string]map[string]bool{}
	for _, c := range Cases() {
		if seen[c.Group] == nil {
			seen[c.Group] = map[string]bool{}
		}
		if seen[c.Group][c.Name] {
			t.Errorf("case %s/%s twice", c.Group, c.Name)
		}
		seen[c.Group][c.Name] = true
	}
	for _, g := range []string{"choices", "choices_long", "free_text", "fields", "approval", "restricted", "long"} {
		for _, n := range []string{"pending", "pending, no console", "declined", "timed out", "cancelled", "superseded", "delivery failed"} {
			if !seen[g][n] {
				t.Errorf("no case %s/%s", g, n)
			}
		}
	}
}
