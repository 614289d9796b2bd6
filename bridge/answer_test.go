package bridge

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// checkCase is one attempt against one question. Exactly one of value or
// err is set: value is the canonical JSON wanted, err the refusal text.
type checkCase struct {
	name    string
	action  string
	answer  string // raw JSON; "" sends no answer
	comment string
	value   string
	display string // checked when set
	err     string
	reason  string            // RefusedInvalid when empty and err is set
	fields  map[string]string // the per-field problems, when checked
}

func runCheckCases(t *testing.T, q *Question, tests []checkCase) {
	t.Helper()
	if err := ValidateQuestion(q); err != nil {
		t.Fatalf("test question is invalid: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var raw json.RawMessage
			if tt.answer != "" {
				raw = json.RawMessage(tt.answer)
			}
			got, aerr := CheckAnswer(q, tt.action, raw, tt.comment)
			if tt.err != "" {
				if aerr == nil {
					t.Fatalf("CheckAnswer accepted %s as %s, want %q", tt.answer, got.Value, tt.err)
				}
				if aerr.Text != tt.err || aerr.Error() != tt.err {
					t.Errorf("refusal = %q\nwant      %q", aerr.Text, tt.err)
				}
				reason := tt.reason
				if reason == "" {
					reason = RefusedInvalid
				}
				if aerr.Reason != reason {
					t.Errorf("reason = %q, want %q", aerr.Reason, reason)
				}
				if tt.fields != nil && !sameMap(aerr.Fields, tt.fields) {
					t.Errorf("fields = %q, want %q", aerr.Fields, tt.fields)
				}
				return
			}
			if aerr != nil {
				t.Fatalf("CheckAnswer refused %s: %v", tt.answer, aerr)
			}
			if string(got.Value) != tt.value {
				t.Errorf("value = %s, want %s", got.Value, tt.value)
			}
			if tt.display != "" && got.Display != tt.display {
				t.Errorf("display = %q, want %q", got.Display, tt.display)
			}
			wantAction := tt.action
			if wantAction == "" {
				wantAction = ActionAnswer
			}
			if got.Action != wantAction && !(q.IsApproval() && wantAction == ActionAnswer) {
				t.Errorf("action = %q, want %q", got.Action, wantAction)
			}
		})
	}
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func fieldQuestion(fs ...Field) *Question {
	return &Question{Tenant: "t", JobID: "j", QuestionID: "q", Question: "Tell me.", Fields: fs}
}

func TestCheckAnswerTextField(t *testing.T) {
	t.Parallel()
	q := fieldQuestion(
		Field{Name: "title", Kind: FieldText, MaxLength: 5},
		Field{Name: "notes", Kind: FieldText, Multiline: true},
	)
	runCheckCases(t, q, []checkCase{
		{name: "plain", answer: `{"title":"hello"}`, value: `{"title":"hello"}`, display: "title: hello"},
		{name: "at max_length in characters", answer: `{"title":"héllo"}`, value: `{"title":"héllo"}`},
		{name: "over max_length", answer: `{"title":"hello!"}`, err: "title: must be at most 5 characters",
			fields: map[string]string{"title": "must be at most 5 characters"}},
		{name: "newline in a single-line field", answer: `{"title":"a\nb"}`, err: "title: must be a single line"},
		{name: "carriage return in a single-line field", answer: `{"title":"a\rb"}`, err: "title: must be a single line"},
		{name: "newline in a multiline field", answer: `{"notes":"a\nb"}`, value: `{"notes":"a\nb"}`},
		{name: "a number is its text", answer: `{"title":42}`, value: `{"title":"42"}`},
		{name: "a bool is not text", answer: `{"title":true}`, err: "title: must be text"},
		{name: "a list is not text", answer: `{"title":["a"]}`, err: "title: must be text"},
		{name: "blank optional field is left out", answer: `{"title":"  ","notes":"n"}`, value: `{"notes":"n"}`},
		{name: "null optional field is left out", answer: `{"title":null,"notes":"n"}`, value: `{"notes":"n"}`},
		{name: "nothing given", answer: `{}`, value: `{}`},
	})
}

func TestCheckAnswerNumberField(t *testing.T) {
	t.Parallel()
	q := fieldQuestion(
		Field{Name: "copies", Kind: FieldNumber, Integer: true, Min: ptr(1), Max: ptr(9)},
		Field{Name: "ratio", Kind: FieldNumber, Min: ptr(-0.5), Max: ptr(0.5)},
		Field{Name: "any", Kind: FieldNumber},
	)
	runCheckCases(t, q, []checkCase{
		{name: "in range", answer: `{"copies":2}`, value: `{"copies":2}`, display: "copies: 2"},
		{name: "at min", answer: `{"copies":1}`, value: `{"copies":1}`},
		{name: "at max", answer: `{"copies":9}`, value: `{"copies":9}`},
		{name: "over max", answer: `{"copies":10}`, err: "copies: must be at most 9",
			fields: map[string]string{"copies": "must be at most 9"}},
		{name: "under min", answer: `{"copies":0}`, err: "copies: must be at least 1"},
		{name: "fraction on integer", answer: `{"copies":2.5}`, err: "copies: must be a whole number"},
		{name: "2.0 is whole", answer: `{"copies":2.0}`, value: `{"copies":2}`},
		{name: "exponent", answer: `{"copies":3e0}`, value: `{"copies":3}`},
		{name: "numeric string", answer: `{"copies":"3"}`, value: `{"copies":3}`},
		{name: "numeric string with space", answer: `{"copies":" 3 "}`, value: `{"copies":3}`},
		{name: "word", answer: `{"copies":"three"}`, err: "copies: must be a number"},
		{name: "hexadecimal string", answer: `{"any":"0x1p2"}`, err: "any: must be a number"},
		{name: "hexadecimal integer string", answer: `{"any":"0x10"}`, err: "any: must be a number"},
		{name: "digits with underscores", answer: `{"any":"1_0"}`, err: "any: must be a number"},
		{name: "signed numeric string with an exponent", answer: `{"any":"+2.5e1"}`, value: `{"any":25}`},
		{name: "numeric string starting with a point", answer: `{"any":"-.5"}`, value: `{"any":-0.5}`},
		{name: "NaN string", answer: `{"any":"NaN"}`, err: "any: must be a number"},
		{name: "Inf string", answer: `{"any":"Inf"}`, err: "any: must be a number"},
		{name: "too large", answer: `{"any":1e400}`, err: "any: must be a number"},
		{name: "bool", answer: `{"any":true}`, err: "any: must be a number"},
		{name: "fraction bounds", answer: `{"ratio":-0.5}`, value: `{"ratio":-0.5}`},
		{name: "below fraction min", answer: `{"ratio":-0.51}`, err: "ratio: must be at least -0.5"},
		{name: "above fraction max", answer: `{"ratio":"0.75"}`, err: "ratio: must be at most 0.5"},
		{name: "negative zero is zero", answer: `{"any":-0}`, value: `{"any":0}`},
		{name: "no exponent in the canonical form", answer: `{"any":1e21}`, value: `{"any":1000000000000000000000}`},
		{name: "small fraction", answer: `{"any":0.001}`, value: `{"any":0.001}`},
		{name: "a tenth", answer: `{"any":0.1}`, value: `{"any":0.1}`},
		{name: "15 digits", answer: `{"any":123456789012345}`, value: `{"any":123456789012345}`},
		{name: "2^53", answer: `{"any":9007199254740992}`, value: `{"any":9007199254740992}`},
		{name: "more digits than kept", answer: `{"any":12345678901234567890}`,
			err: "any: has more digits than can be kept exactly: at most 15 significant digits"},
		{name: "more digits than kept, as text", answer: `{"any":"9007199254740993"}`,
			err: "any: has more digits than can be kept exactly: at most 15 significant digits"},
		{name: "a long fraction", answer: `{"any":0.12345678901234567891}`,
			err: "any: has more digits than can be kept exactly: at most 15 significant digits"},
		{name: "two problems", answer: `{"copies":10,"ratio":1}`, err: "copies: must be at most 9; ratio: must be at most 0.5",
			fields: map[string]string{"copies": "must be at most 9", "ratio": "must be at most 0.5"}},
	})
}

func TestCheckAnswerChoiceFields(t *testing.T) {
	t.Parallel()
	q := fieldQuestion(
		Field{Name: "color", Kind: FieldChoice, Options: []string{"Red", "Blue", "1"}},
		Field{Name: "tags", Kind: FieldMultiChoice, Options: []string{"urgent", "Billing", "a, b"}},
	)
	runCheckCases(t, q, []checkCase{
		{name: "exact", answer: `{"color":"Red"}`, value: `{"color":"Red"}`},
		{name: "case-insensitive, normalised to the option", answer: `{"color":" blue "}`, value: `{"color":"Blue"}`, display: "color: Blue"},
		{name: "number matching an option", answer: `{"color":1}`, value: `{"color":"1"}`},
		{name: "unknown option", answer: `{"color":"green"}`, err: "color: must be one of: Red, Blue, 1"},
		{name: "list for a single choice", answer: `{"color":["Red"]}`, err: "color: must be one of: Red, Blue, 1"},
		{name: "multi list", answer: `{"tags":["urgent","billing"]}`, value: `{"tags":["urgent","Billing"]}`, display: "tags: urgent, Billing"},
		{name: "multi dedupes", answer: `{"tags":["Urgent","urgent","URGENT"]}`, value: `{"tags":["urgent"]}`},
		{name: "multi keeps the order given", answer: `{"tags":["billing","urgent"]}`, value: `{"tags":["Billing","urgent"]}`},
		{name: "multi single string", answer: `{"tags":"urgent"}`, value: `{"tags":["urgent"]}`},
		{name: "multi comma-separated string", answer: `{"tags":"urgent, billing"}`, value: `{"tags":["urgent","Billing"]}`},
		{name: "multi option containing a comma", answer: `{"tags":"a, b"}`, value: `{"tags":["a, b"]}`},
		{name: "multi unknown", answer: `{"tags":["urgent","spam"]}`, err: `tags: "spam" is not one of: urgent, Billing, a, b`},
		{name: "multi unknown in a comma list", answer: `{"tags":"urgent,spam"}`, err: `tags: "spam" is not one of: urgent, Billing, a, b`},
		{name: "multi empty list is no answer", answer: `{"tags":[]}`, value: `{}`},
		{name: "multi list of numbers", answer: `{"tags":[1]}`, err: "tags: must be a list of: urgent, Billing, a, b"},
		{name: "multi object", answer: `{"tags":{"a":1}}`, err: "tags: must be a list of: urgent, Billing, a, b"},
	})
	req := fieldQuestion(Field{Name: "tags", Kind: FieldMultiChoice, Required: true, Options: []string{"a"}})
	runCheckCases(t, req, []checkCase{
		{name: "required multi empty list", answer: `{"tags":[]}`, err: "tags: is required"},
		{name: "required multi given", answer: `{"tags":["A"]}`, value: `{"tags":["a"]}`},
	})
}

func TestCheckAnswerDateFields(t *testing.T) {
	t.Parallel()
	q := fieldQuestion(
		Field{Name: "on", Kind: FieldDate},
		Field{Name: "at", Kind: FieldDate, DateTime: true},
	)
	runCheckCases(t, q, []checkCase{
		{name: "date", answer: `{"on":"2026-10-20"}`, value: `{"on":"2026-10-20"}`, display: "on: 2026-10-20"},
		{name: "date with space", answer: `{"on":" 2026-10-20 "}`, value: `{"on":"2026-10-20"}`},
		{name: "leap day", answer: `{"on":"2028-02-29"}`, value: `{"on":"2028-02-29"}`},
		{name: "no such day", answer: `{"on":"2026-02-30"}`, err: "on: must be a date as YYYY-MM-DD"},
		{name: "day first", answer: `{"on":"20-10-2026"}`, err: "on: must be a date as YYYY-MM-DD"},
		{name: "date with a time", answer: `{"on":"2026-10-20T10:00"}`, err: "on: must be a date as YYYY-MM-DD"},
		{name: "date as a number", answer: `{"on":20261020}`, err: "on: must be a date as YYYY-MM-DD"},
		{name: "date as a bool", answer: `{"on":true}`, err: "on: must be a date"},
		{name: "RFC 3339 keeps its offset", answer: `{"at":"2026-10-20T14:03:00+02:00"}`, value: `{"at":"2026-10-20T14:03:00+02:00"}`},
		{name: "RFC 3339 UTC", answer: `{"at":"2026-10-20T14:03:00Z"}`, value: `{"at":"2026-10-20T14:03:00Z"}`},
		{name: "RFC 3339 keeps its fraction", answer: `{"at":"2026-10-20T14:03:00.750Z"}`, value: `{"at":"2026-10-20T14:03:00.75Z"}`},
		{name: "RFC 3339 with a fraction and an offset", answer: `{"at":"2026-10-20T14:03:00.5+02:00"}`, value: `{"at":"2026-10-20T14:03:00.5+02:00"}`},
		{name: "datetime-local with a fraction", answer: `{"at":"2026-10-20T14:03:07.25"}`, value: `{"at":"2026-10-20T14:03:07.25Z"}`},
		{name: "datetime-local", answer: `{"at":"2026-10-20T14:03"}`, value: `{"at":"2026-10-20T14:03:00Z"}`},
		{name: "datetime-local with seconds", answer: `{"at":"2026-10-20T14:03:07"}`, value: `{"at":"2026-10-20T14:03:07Z"}`},
		{name: "date and time with a space", answer: `{"at":"2026-10-20 14:03"}`, value: `{"at":"2026-10-20T14:03:00Z"}`},
		{name: "Unix seconds", answer: `{"at":1792504980}`, value: `{"at":"2026-10-20T14:03:00Z"}`},
		{name: "Unix seconds as text", answer: `{"at":"1792504980"}`, value: `{"at":"2026-10-20T14:03:00Z"}`},
		{name: "Unix zero", answer: `{"at":0}`, value: `{"at":"1970-01-01T00:00:00Z"}`},
		{name: "last Unix second of year 9999", answer: `{"at":253402300799}`, value: `{"at":"9999-12-31T23:59:59Z"}`},
		{name: "Unix seconds past year 9999", answer: `{"at":253402300800}`, err: "at: must be a date and time before the year 10000"},
		{name: "Unix seconds overflowing", answer: `{"at":99999999999999999999}`, err: "at: must be a date and time before the year 10000"},
		{name: "fractional Unix seconds", answer: `{"at":1792504980.5}`, err: "at: must be a date and time as YYYY-MM-DDTHH:MM"},
		{name: "date only on a date_time field", answer: `{"at":"2026-10-20"}`, err: "at: must be a date and time as YYYY-MM-DDTHH:MM"},
		{name: "hour 24", answer: `{"at":"2026-10-20T24:00"}`, err: "at: must be a date and time as YYYY-MM-DDTHH:MM"},
	})
}

func TestCheckAnswerToggleField(t *testing.T) {
	t.Parallel()
	q := fieldQuestion(Field{Name: "ok", Kind: FieldToggle}, Field{Name: "sure", Kind: FieldToggle, Required: true})
	runCheckCases(t, q, []checkCase{
		{name: "true", answer: `{"sure":true}`, value: `{"sure":true}`, display: "sure: yes"},
		{name: "false", answer: `{"sure":false}`, value: `{"sure":false}`, display: "sure: no"},
		{name: "yes", answer: `{"sure":"Yes"}`, value: `{"sure":true}`},
		{name: "no", answer: `{"sure":"no"}`, value: `{"sure":false}`},
		{name: "on/off", answer: `{"ok":"on","sure":"off"}`, value: `{"ok":true,"sure":false}`},
		{name: "1 and 0", answer: `{"ok":1,"sure":"0"}`, value: `{"ok":true,"sure":false}`},
		{name: "maybe", answer: `{"sure":"maybe"}`, err: "sure: must be yes or no"},
		{name: "2", answer: `{"sure":2}`, err: "sure: must be yes or no"},
		{name: "list", answer: `{"sure":[true]}`, err: "sure: must be yes or no"},
		{name: "required false is an answer", answer: `{"ok":false,"sure":false}`, value: `{"ok":false,"sure":false}`},
		{name: "required missing", answer: `{"ok":true}`, err: "sure: is required"},
	})
}

func TestCheckAnswerFieldsObject(t *testing.T) {
	t.Parallel()
	q := fieldQuestion(
		Field{Name: "on", Kind: FieldDate, Label: "Send on", Required: true},
		Field{Name: "copies", Kind: FieldNumber, Integer: true, Min: ptr(1), Max: ptr(9)},
	)
	runCheckCases(t, q, []checkCase{
		{name: "declaration order, whatever the order sent", answer: `{"copies":"2","on":"2026-10-20"}`,
			value: `{"on":"2026-10-20","copies":2}`, display: "on: 2026-10-20, copies: 2"},
		{name: "object sent as a JSON string", answer: `"{\"copies\":2,\"on\":\"2026-10-20\"}"`,
			value: `{"on":"2026-10-20","copies":2}`},
		{name: "whitespace around the object", answer: " \n{ \"on\" : \"2026-10-20\" }\n", value: `{"on":"2026-10-20"}`},
		{name: "required missing", answer: `{"copies":2}`, err: "on: is required",
			fields: map[string]string{"on": "is required"}},
		{name: "required blank", answer: `{"on":" "}`, err: "on: is required"},
		{name: "required null", answer: `{"on":null}`, err: "on: is required"},
		{name: "unknown fields, sorted", answer: `{"on":"2026-10-20","zeta":1,"alpha":2}`,
			err:    "alpha: is not a field of this question; zeta: is not a field of this question",
			fields: map[string]string{"alpha": "is not a field of this question", "zeta": "is not a field of this question"}},
		{name: "field names are exact", answer: `{"On":"2026-10-20"}`, err: "on: is required; On: is not a field of this question"},
		{name: "every problem at once", answer: `{"copies":10,"x":1}`, err: "on: is required; copies: must be at most 9; x: is not a field of this question"},
		{name: "a plain string", answer: `"2026-10-20"`, err: "answer: must be an object with the fields on, copies"},
		{name: "a string holding null", answer: `"null"`, err: "answer: must be an object with the fields on, copies"},
		{name: "a list", answer: `[1,2]`, err: "answer: must be an object with the fields on, copies"},
		{name: "a number", answer: `2`, err: "answer: must be an object with the fields on, copies"},
		{name: "no answer", err: "answer: is required"},
		{name: "null", answer: `null`, err: "answer: is required"},
		{name: "empty string", answer: `""`, err: "answer: is required"},
		{name: "blank string", answer: `" "`, err: "answer: is required"},
	})
}

// The agent reads `The answer: {"dept":"R&D",...}`, as any JSON encoder
// would write it, not Go's HTML-safe "R\u0026D" (the canonical JSON value
// may keep those escapes: it decodes the same).
func TestAnsweredTextKeepsMarkupCharacters(t *testing.T) {
	t.Parallel()
	q := fieldQuestion(
		Field{Name: "dept", Kind: FieldChoice, Options: []string{"R&D", "Sales"}},
		Field{Name: "teams", Kind: FieldMultiChoice, Options: []string{"<core>", "A&B"}},
		Field{Name: "note", Kind: FieldText},
	)
	for _, tt := range []struct{ answer, text string }{
		{`{"dept":"r&d","teams":["a&b","<core>"],"note":"x < y & z"}`,
			`The answer: {"dept":"R&D","teams":["A&B","<core>"],"note":"x < y & z"}`},
		{`{"note":"\\u003c stays escaped, \\\u003c is a backslash and <"}`,
			`The answer: {"note":"\\u003c stays escaped, \\< is a backslash and <"}`},
		{`{"note":"é \" \t"}`, `The answer: {"note":"é \" \t"}`},
	} {
		got, aerr := CheckAnswer(q, "", json.RawMessage(tt.answer), "")
		if aerr != nil {
			t.Fatalf("%s: %v", tt.answer, aerr)
		}
		if text := AnsweredText(got.Value); text != tt.text {
			t.Errorf("AnsweredText(%s)\n got  %s\n want %s", got.Value, text, tt.text)
		}
		var back, sent map[string]any
		if json.Unmarshal(got.Value, &back) != nil || json.Unmarshal([]byte(tt.text[len("The answer: "):]), &sent) != nil {
			t.Fatalf("text %s is not the answer's JSON", tt.text)
		}
		if fmt.Sprint(back) != fmt.Sprint(sent) {
			t.Errorf("text decodes to %v, answer to %v", sent, back)
		}
	}
	choices := &Question{Tenant: "t", JobID: "j", QuestionID: "q", Question: "Which team?", Choices: []string{"R&D", "<ops>"}}
	got, aerr := CheckAnswer(choices, "", json.RawMessage(`"r&d"`), "")
	if aerr != nil || AnsweredText(got.Value) != "The answer: R&D" {
		t.Errorf("choice: %v %v", got, aerr)
	}
}

func TestCheckAnswerChoices(t *testing.T) {
	t.Parallel()
	q := &Question{Tenant: "t", JobID: "j", QuestionID: "q", Question: "Which colour?", Choices: []string{"blue", "Dark Red", "42"}}
	runCheckCases(t, q, []checkCase{
		{name: "exact", answer: `"blue"`, value: `"blue"`, display: "blue"},
		{name: "case and space", answer: `"  dark red "`, value: `"Dark Red"`, display: "Dark Red"},
		{name: "number", answer: `42`, value: `"42"`},
		{name: "unknown", answer: `"green"`, err: "answer: must be one of: blue, Dark Red, 42"},
		{name: "object", answer: `{"a":"blue"}`, err: "answer: must be one of: blue, Dark Red, 42"},
		{name: "missing", err: "answer: is required"},
		{name: "empty", answer: `""`, err: "answer: is required"},
		{name: "blank", answer: `"   "`, err: "answer: is required"},
		{name: "explicit answer action", action: ActionAnswer, answer: `"blue"`, value: `"blue"`},
		{name: "approve sent to a question", action: ActionApprove, reason: RefusedWrongKind,
			err: "This is a question, not an approval: answer it instead of approving or denying."},
		{name: "deny sent to a question", action: ActionDeny, reason: RefusedWrongKind,
			err: "This is a question, not an approval: answer it instead of approving or denying."},
		{name: "unknown action", action: "maybe", answer: `"blue"`, reason: RefusedWrongKind,
			err: `action: must be answer, decline, approve or deny, not "maybe"`},
	})
}

func TestCheckAnswerFreeText(t *testing.T) {
	t.Parallel()
	q := &Question{Tenant: "t", JobID: "j", QuestionID: "q", Question: "What should the subject line be?"}
	runCheckCases(t, q, []checkCase{
		{name: "text", answer: `"Quarterly report"`, value: `"Quarterly report"`, display: "Quarterly report"},
		{name: "multi-line", answer: `"a\nb"`, value: `"a\nb"`},
		{name: "number as text", answer: `7`, value: `"7"`},
		{name: "HTML is escaped in JSON only", answer: `"<b>"`, value: `"\u003cb\u003e"`, display: "<b>"},
		{name: "blank", answer: `" "`, err: "answer: is required"},
		{name: "empty", answer: `""`, err: "answer: is required"},
		{name: "object", answer: `{"a":1}`, err: "answer: must be text"},
		{name: "bool", answer: `true`, err: "answer: must be text"},
		{name: "too large", answer: `"` + strings.Repeat("x", MaxAnswerBytes) + `"`, err: "answer: must be at most 65536 bytes"},
	})
}

func TestCheckAnswerDecline(t *testing.T) {
	t.Parallel()
	q := validQuestion()
	runCheckCases(t, q, []checkCase{
		{name: "decline with a reason", action: ActionDecline, comment: "ask Ana", value: ""},
		{name: "decline without a reason", action: ActionDecline, value: ""},
		{name: "decline with null answer", action: ActionDecline, answer: `null`, value: ""},
		{name: "decline with an empty string answer", action: ActionDecline, answer: `""`, value: ""},
		{name: "decline carrying an answer", action: ActionDecline, answer: `{"on":"2026-10-20"}`, reason: RefusedWrongKind,
			err: "A decline can't carry an answer: send the answer, or decline with a reason."},
		{name: "comment at the limit", action: ActionDecline, comment: strings.Repeat("é", MaxCommentText), value: ""},
		{name: "comment too long", action: ActionDecline, comment: strings.Repeat("é", MaxCommentText+1),
			err: "comment: must be at most 2000 characters"},
		{name: "comment too long on an answer", answer: `{"on":"2026-10-20"}`, comment: strings.Repeat("x", MaxCommentText+1),
			err: "comment: must be at most 2000 characters"},
	})
	got, err := CheckAnswer(q, ActionDecline, nil, "ask Ana")
	if err != nil || got.Action != ActionDecline || got.Value != nil || got.Display != "" {
		t.Errorf("decline = %+v, %v; want action decline with no value", got, err)
	}
}

func TestCheckAnswerApproval(t *testing.T) {
	t.Parallel()
	q := validApproval()
	runCheckCases(t, q, []checkCase{
		{name: "approve action", action: ActionApprove, value: `"approved"`, display: "approved"},
		{name: "deny action", action: ActionDeny, comment: "too much", value: `"denied"`, display: "denied"},
		{name: "the word approve sent as an answer", answer: `"approve"`, reason: RefusedWrongKind,
			err: "This is an approval: approve or deny it, or decline to answer."},
		{name: "the word deny sent as an answer", action: ActionAnswer, answer: `"deny"`, reason: RefusedWrongKind,
			err: "This is an approval: approve or deny it, or decline to answer."},
		{name: "decline", action: ActionDecline, comment: "not mine", value: ""},
		{name: "an answer sent to an approval", answer: `"blue"`, reason: RefusedWrongKind,
			err: "This is an approval: approve or deny it, or decline to answer."},
		{name: "an object sent to an approval", answer: `{"ok":true}`, reason: RefusedWrongKind,
			err: "This is an approval: approve or deny it, or decline to answer."},
		{name: "nothing sent to an approval", reason: RefusedWrongKind,
			err: "This is an approval: approve or deny it, or decline to answer."},
		{name: "decline with an answer", action: ActionDecline, answer: `"approve"`, reason: RefusedWrongKind,
			err: "A decline can't carry an answer: send the answer, or decline with a reason."},
	})
}

func TestApprovalAction(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ text, action, comment string }{
		{"approve", ActionApprove, ""},
		{" Approved ", ActionApprove, ""},
		{"yes", ActionApprove, ""},
		{"deny too risky for a Friday", ActionDeny, "too risky for a Friday"},
		{"NO", ActionDeny, ""},
		// Typed in Slack: a line break, a tab or a no-break space after the word.
		{"deny\ntoo risky\nfor a Friday", ActionDeny, "too risky\nfor a Friday"},
		{"deny\ttoo risky", ActionDeny, "too risky"},
		{"deny\u00a0too risky", ActionDeny, "too risky"},
		{"approve\n", ActionApprove, ""},
		{"blue", "", ""},
		{"", "", ""},
	} {
		action, comment, ok := ApprovalAction(c.text)
		if action != c.action || comment != c.comment || ok != (c.action != "") {
			t.Errorf("ApprovalAction(%q) = %q, %q, %v", c.text, action, comment, ok)
		}
	}
}
