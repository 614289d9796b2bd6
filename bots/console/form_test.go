package console

import (
	"encoding/json"
	"net/url"
	"reflect"
	"testing"

	"github.com/askbridge/askbridge/bridge"
)

func TestAnswerFromForm(t *testing.T) {
	t.Parallel()
	fields := &bridge.Question{Fields: []bridge.Field{
		{Name: "on", Kind: bridge.FieldDate},
		{Name: "copies", Kind: bridge.FieldNumber, Integer: true},
		{Name: "to", Kind: bridge.FieldMultiChoice, Options: []string{"board", "staff"}},
		{Name: "urgent", Kind: bridge.FieldToggle},
		{Name: "color", Kind: bridge.FieldChoice, Options: []string{"red"}},
		{Name: "notes", Kind: bridge.FieldText, Multiline: true},
		{Name: "title", Kind: bridge.FieldText},
	}}
	cases := []struct {
		name   string
		q      *bridge.Question
		action string
		form   url.Values
		want   string
	}{
		{"typed fields", fields, "answer", url.Values{
			"f.on": {" 2026-10-20 "}, "f.copies": {"2"}, "f.to": {"board", "staff"}, "f.urgent": {"true"},
			"f.color": {""}, "f.notes": {"line one\r\nline two"}, "f.title": {"  Q3  "}, "f.bogus": {"x"}, "answer": {"ignored"},
		}, `{"copies":"2","notes":"line one\nline two","on":"2026-10-20","title":"  Q3  ","to":["board","staff"],"urgent":true}`},
		// Text as typed (the validator, Slack and the CLI keep it so); blank is missing.
		{"blank text", fields, "answer", url.Values{"f.title": {"   "}}, `{"urgent":false}`},
		{"empty typed form", fields, "answer", url.Values{}, `{"urgent":false}`},
		{"choices", &bridge.Question{Choices: []string{"blue"}}, "answer", url.Values{"answer": {"blue"}}, `"blue"`},
		{"free text", &bridge.Question{}, "answer", url.Values{"answer": {"a\r\nb"}}, `"a\nb"`},
		{"blank free text", &bridge.Question{}, "answer", url.Values{"answer": {"  "}}, ``},
		{"decline", fields, "decline", url.Values{"f.on": {"2026-10-20"}}, ``},
		{"approval", &bridge.Question{Kind: bridge.KindApproval}, "answer", url.Values{"answer": {"approve"}}, ``},
	}
	for _, tc := range cases {
		got := answerFromForm(tc.q, tc.action, tc.form)
		if tc.want == "" {
			if got != nil {
				t.Errorf("%s: got %s, want no answer", tc.name, got)
			}
			continue
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: %v (%s)", tc.name, err, got)
		}
		_ = json.Unmarshal([]byte(tc.want), &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

// The form's answer goes through the one validator and comes out as the
// runtime will read it.
func TestFormAnswerChecks(t *testing.T) {
	t.Parallel()
	q := reportQuestion("job-1")
	form := url.Values{"f.on": {"2026-10-20"}, "f.copies": {"2"}}
	ca, ae := bridge.CheckAnswer(&q, "answer", answerFromForm(&q, "answer", form), "")
	if ae != nil {
		t.Fatalf("CheckAnswer: %v", ae)
	}
	if string(ca.Value) != `{"on":"2026-10-20","copies":2}` || ca.Display != "on: 2026-10-20, copies: 2" {
		t.Errorf("checked %s / %q", ca.Value, ca.Display)
	}
	form.Set("f.copies", "2.5")
	_, ae = bridge.CheckAnswer(&q, "answer", answerFromForm(&q, "answer", form), "")
	if ae == nil || problems(ae)["copies"] != "must be a whole number" {
		t.Errorf("2.5 copies: %v", ae)
	}
}

func TestProblemsPlacesMessages(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ae   bridge.AnswerError
		want map[string]string
	}{
		{bridge.AnswerError{Text: "copies: must be at most 9", Fields: map[string]string{"copies": "must be at most 9"}}, map[string]string{"copies": "must be at most 9"}},
		{bridge.AnswerError{Text: "answer: must be one of: a, b"}, map[string]string{"answer": "must be one of: a, b"}},
		{bridge.AnswerError{Text: "comment: must be at most 2000 characters"}, map[string]string{"comment": "must be at most 2000 characters"}},
		{bridge.AnswerError{Text: "This is an approval: approve or deny it, or decline to answer."}, map[string]string{"": "This is an approval: approve or deny it, or decline to answer."}},
	}
	for _, tc := range cases {
		if got := problems(&tc.ae); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %v, want %v", tc.ae.Text, got, tc.want)
		}
	}
}
