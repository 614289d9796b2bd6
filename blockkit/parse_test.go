package blockkit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/bridge"
)

// Reading what Slack sends back: block ids, clicks, modal metadata and a
// modal's state, and where a modal's errors land.

func TestRefRoundTripAndStrictness(t *testing.T) {
	r := Ref{Tenant: "acme", JobID: "job-1", QuestionID: "q_1", Version: 42}
	got, err := ParseRef(r.String())
	if err != nil || got != r {
		t.Fatalf("round trip: %v %v", got, err)
	}
	for _, bad := range []string{"", "acme.job.q", "acme.job.q.3.4", "acme.job.q.-1", "acme.job.q.03", "acme.jo b.q.3",
		"acme..q.3", "acme.job.q.x", "acme.job.q.+3", strings.Repeat("a", 65) + ".j.q.1"} {
		if _, err := ParseRef(bad); err == nil {
			t.Errorf("ParseRef(%q) accepted", bad)
		}
	}
}

func TestParseClick(t *testing.T) {
	r := Ref{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", Version: 3}
	bid := ActionsBlockID(r)
	cases := []struct {
		block, action, value, selected string
		want                           Click
		ok                             bool
	}{
		{bid, "choice.1", "blue", "", Click{Ref: r, Action: Choose, Index: 1, Choice: "blue"}, true},
		{bid, "select", "", "7", Click{Ref: r, Action: Choose, Index: 7}, true},
		{bid, "answer", "answer", "", Click{Ref: r, Action: ActionAnswer}, true},
		{bid, "decline", "", "", Click{Ref: r, Action: ActionDecline}, true},
		{bid, "approve", "", "", Click{Ref: r, Action: ActionApprove}, true},
		{bid, "deny", "", "", Click{Ref: r, Action: ActionDeny}, true},
		{bid, "console", "console", "", Click{Ref: r, Action: ActionConsole}, true},
		{bid, "console.job", "console.job", "", Click{Ref: r, Action: ActionConsoleJob}, true},
		{bid, "console.", "", "", Click{}, false},
		{bid, "console.q", "", "", Click{}, false},
		{bid, "Console", "", "", Click{}, false},
		{"job.acme.job-1", "console.job", "", "", Click{}, false},
		{"ask.acme.job-1.q-1", "console", "", "", Click{}, false},
		{bid, "choice.01", "blue", "", Click{}, false},
		{bid, "choice.1", "", "", Click{}, false},
		{bid, "choice.-1", "x", "", Click{}, false},
		{bid, "select", "", "abc", Click{}, false},
		{bid, "delete", "", "", Click{}, false},
		{"other.acme.job-1.q-1.3", "answer", "", "", Click{}, false},
		{"ask.acme.job-1.q-1", "answer", "", "", Click{}, false},
	}
	for _, c := range cases {
		got, err := ParseClick(c.block, c.action, c.value, c.selected)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("ParseClick(%q,%q,%q,%q) = %+v, %v", c.block, c.action, c.value, c.selected, got, err)
		}
	}
}

func TestModalMeta(t *testing.T) {
	m := ModalMeta{Ref: Ref{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", Version: 3}, Channel: "C0123", MessageTS: "1700000000.000100"}
	got, err := ParseModalMeta(m.String())
	if err != nil || got != m {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for _, bad := range []string{"", "acme.job-1.q-1.3", "acme.job-1.q-1.3|c0123|1.2", "acme.job-1.q-1.3|C1|1.2|x", "acme.job-1.q-1.3|C1|abc", "x|C1|1.2"} {
		if _, err := ParseModalMeta(bad); err == nil {
			t.Errorf("ParseModalMeta(%q) accepted", bad)
		}
	}
}

func state(values map[string]slack.BlockAction) *slack.ViewState {
	s := &slack.ViewState{Values: map[string]map[string]slack.BlockAction{}}
	for block, a := range values {
		s.Values[block] = map[string]slack.BlockAction{InputAction: a}
	}
	return s
}

func TestAnswerFromStateAllKinds(t *testing.T) {
	q := baseQ()
	q.Fields = allFields()
	st := state(map[string]slack.BlockAction{
		"f.title":  {Value: "Q3"},
		"f.notes":  {Value: "line 1\nline 2"},
		"f.copies": {Value: "2"},
		"f.budget": {Value: "10.5"},
		"f.colour": {SelectedOption: slack.OptionBlockObject{Value: "1"}},
		"f.font":   {SelectedOption: slack.OptionBlockObject{Value: "11"}},
		"f.parts":  {SelectedOptions: []slack.OptionBlockObject{{Value: "0"}, {Value: "2"}}},
		"f.tags":   {SelectedOptions: []slack.OptionBlockObject{}},
		"f.on":     {SelectedDate: "2026-10-20"},
		"f.at":     {SelectedDateTime: 1792490400},
		"f.urgent": {SelectedOptions: []slack.OptionBlockObject{{Value: "true"}}},
	})
	raw := AnswerFromState(q, st)
	checked, aerr := bridge.CheckAnswer(q, bridge.ActionAnswer, raw, "")
	if aerr != nil {
		t.Fatalf("valid modal refused: %v (%s)", aerr, raw)
	}
	want := `{"title":"Q3","notes":"line 1\nline 2","copies":2,"budget":10.5,"colour":"blue","font":"l","parts":["summary","appendix"],"on":"2026-10-20","at":"2026-10-20T10:00:00Z","urgent":true}`
	if string(checked.Value) != want {
		t.Fatalf("answer\n got %s\nwant %s", checked.Value, want)
	}
}

func TestModalErrorsLandOnTheFieldBlock(t *testing.T) {
	q := baseQ()
	q.Fields = allFields()
	st := state(map[string]slack.BlockAction{
		"f.title":  {Value: "Q3"},
		"f.copies": {Value: "12"},
		"f.colour": {SelectedOption: slack.OptionBlockObject{Value: "9"}},
		"f.on":     {SelectedDate: "2026-10-20"},
	})
	_, aerr := bridge.CheckAnswer(q, bridge.ActionAnswer, AnswerFromState(q, st), "")
	if aerr == nil {
		t.Fatal("invalid answer accepted")
	}
	got := ModalErrors(q, CallbackAnswer, aerr)
	want := map[string]string{"f.copies": "must be at most 9", "f.colour": "must be one of: red, blue"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("errors = %v, want %v", got, want)
	}
	free := baseQ()
	_, aerr = bridge.CheckAnswer(free, bridge.ActionAnswer, AnswerFromState(free, state(map[string]slack.BlockAction{"answer": {Value: "  "}})), "")
	if aerr == nil {
		t.Fatal("blank free text accepted")
	}
	if got := ModalErrors(free, CallbackAnswer, aerr); got[BlockFreeText] != "is required" || len(got) != 1 {
		t.Fatalf("free-text errors = %v", got)
	}
}
