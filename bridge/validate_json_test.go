package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestDecodeQuestion(t *testing.T) {
	t.Parallel()
	const design = `{"tenant": "acme", "job_id": "job-0a9dc2d1", "question_id": "q-75eaf712",
 "task_version": 3, "kind": "question",
 "question": "When should I send the report, and how many copies?",
 "fields": [{"name": "on", "kind": "date", "label": "Send on", "required": true},
            {"name": "copies", "kind": "number", "integer": true, "min": 1, "max": 9}],
 "missing_field": "send_date", "why_it_matters": "The date decides which records are included.",
 "priority": "blocking", "blocked_tools": ["send_report"],
 "timeout": "4h", "on_timeout": "continue",
 "route": {"slack": {"channel": "C0123", "thread_ts": ""}, "discord": {"channel_id": "1234"}},
 "answerers": ["slack:U0ANA"], "owner": "slack:U0OWNER", "agent": "acme-support"}`
	const head = `{"tenant":"acme","job_id":"j","question_id":"q","question":"Why?"`
	tests := []struct {
		name    string
		in      string
		want    string // the whole error; "" means valid
		partial bool   // a question is returned with the error
	}{
		{name: "design example", in: design},
		{name: "surrounding space", in: "\n " + head + "}\n\t"},
		{name: "empty", in: "", want: "question: is empty: send a JSON object"},
		{name: "only space", in: " \n", want: "question: is empty: send a JSON object"},
		{name: "truncated", in: head, want: "question: is not a JSON object: it ends before the JSON is complete"},
		{name: "syntax error", in: `{"tenant" "acme"}`,
			want: "question: is not a JSON object: invalid character '\"' after object key (at byte 11)"},
		{name: "an array", in: `[]`, want: "question: is not a JSON object: expected an object, not a list"},
		{name: "a string", in: `"why?"`, want: "question: is not a JSON object: expected an object, not text"},
		{name: "trailing object", in: head + `}{}`, want: "question: has trailing data after the JSON object", partial: true},
		{name: "trailing brace", in: head + `}}`, want: "question: has trailing data after the JSON object", partial: true},
		{name: "trailing bracket", in: head + `} ]`, want: "question: has trailing data after the JSON object", partial: true},
		{name: "trailing word", in: head + `} x`, want: "question: has trailing data after the JSON object", partial: true},
		{name: "tenant as a number", in: `{"tenant":1,"job_id":"j","question_id":"q","question":"Why?"}`,
			want: "tenant: must be text, not a number", partial: true},
		{name: "fields as a string", in: head + `,"fields":"on,copies"}`,
			want: "fields: must be a list, not text", partial: true},
		{name: "fields as an object", in: head + `,"fields":{"name":"on"}}`,
			want: "fields: must be a list, not an object", partial: true},
		{name: "min as a string", in: head + `,"fields":[{"name":"n","kind":"number","min":"1"}]}`,
			want: "fields[0].min: must be a number, not text", partial: true},
		{name: "options as numbers", in: head + `,"fields":[{"name":"c","kind":"choice","options":[1,2]}]}`,
			want: "fields[0].options: must be text, not a number", partial: true},
		{name: "required as a string", in: head + `,"fields":[{"name":"c","kind":"text","required":"yes"}]}`,
			want: "fields[0].required: must be true or false, not text", partial: true},
		// Every problem is named, not the first alone; not those that
		// follow from a value left out (its field's kind, the proposal).
		{name: "wrong types and other problems", partial: true,
			in: `{"tenant":"acme","job_id":"j","question_id":"q","question":"","timeout":4,"fields":[{"name":"ok","kind":"text"},{"name":"Copies","kind":"number","min":"1"},{"name":"c","kind":5}],"on_timeout":"later"}`,
			want: `timeout: must be text, not a number; fields[1].min: must be a number, not text; fields[2].kind: must be text, not a number; ` +
				`question: is required: write it for a person who has not seen the conversation; fields[1].name: "Copies" must be 1 to 64 lower-case letters, digits and _; ` +
				`on_timeout: must be continue or fail, not "later"`},
		{name: "an approval's summary of the wrong type", in: head + `,"kind":"approval","proposal":{"id":"p","summary":"x"},"timeout":"banana"}`, partial: true,
			want: `proposal.summary: must be a list of text, not text; timeout: "banana" is not a duration such as 30m, 4h or 2d`},
		{name: "a field that is not an object", in: head + `,"fields":[{"name":"ok","kind":"text"},5]}`, partial: true,
			want: "fields[1]: must be an object, not a number"},
		// docs/contract.md lists a field's settings; a misspelt one would leave
		// the field unchecked.
		{name: "a field setting misspelt", in: head + `,"fields":[{"name":"copies","kind":"number","Integer":true,"maximum":9,"minimum":1}]}`, partial: true,
			want: `fields[0]: "maximum" is not a setting of a field (name, kind, label, description, required, options, min, max, integer, max_length, multiline, date_time); ` +
				`fields[0]: "minimum" is not a setting of a field (name, kind, label, description, required, options, min, max, integer, max_length, multiline, date_time)`},
		{name: "a field setting misspelt beside another problem", in: head + `,"fields":[{"name":"n","kind":"number","maximum":9,"min":"1"}]}`, partial: true,
			want: `fields[0].min: must be a number, not text; fields[0]: "maximum" is not a setting of a field (name, kind, label, description, required, options, min, max, integer, max_length, multiline, date_time)`},
		// A misspelt key of the question would ask another question: one
		// without its choices becomes free text.
		{name: "a question key misspelt", in: head + `,"choises":["red","blue"]}`, partial: true,
			want: `"choises" is not a key of a question: did you mean "choices"?`},
		{name: "a key of no question", in: head + `,"colour_scheme":"dark","Timeout":"4h"}`, partial: true,
			want: `"colour_scheme" is not a key of a question (docs/contract.md lists them)`},
		{name: "a question key misspelt beside a bad value and a misspelt field setting", partial: true,
			in: head + `,"timeout":4,"blocked_tool":["x"],"fields":[{"name":"n","kind":"number","maxx":9}]}`,
			want: `timeout: must be text, not a number; "blocked_tool" is not a key of a question: did you mean "blocked_tools"?; ` +
				`fields[0]: "maxx" is not a setting of a field (name, kind, label, description, required, options, min, max, integer, max_length, multiline, date_time)`},
		{name: "task version fractional", in: head + `,"task_version":1.5}`,
			want: "task_version: must be a whole number, not 1.5", partial: true},
		{name: "task version with a decimal point", in: head + `,"task_version":3.0}`,
			want: "task_version: must be a whole number written without a decimal point or exponent, not 3.0", partial: true},
		{name: "task version with an exponent", in: head + `,"task_version":1e2}`,
			want: "task_version: must be a whole number written without a decimal point or exponent, not 1e2", partial: true},
		{name: "task version huge", in: head + `,"task_version":1e30}`,
			want: "task_version: 1e30 is too large", partial: true},
		{name: "task version as a string", in: head + `,"task_version":"3"}`,
			want: "task_version: must be a whole number, not text", partial: true},
		{name: "choices as a string", in: head + `,"choices":"red"}`,
			want: "choices: must be a list of text, not text", partial: true},
		{name: "proposal as a list", in: head + `,"proposal":[]}`,
			want: "proposal: must be an object, not a list", partial: true},
		{name: "summary as a string", in: head + `,"kind":"approval","proposal":{"id":"p","summary":"x"}}`,
			want: "proposal.summary: must be a list of text, not text", partial: true},
		{name: "escalation off as a string", in: head + `,"escalation":{"off":"true"}}`,
			want: "escalation.off: must be true or false, not text", partial: true},
		// docs/contract.md: a question may reshape the ladder or turn it off (with
		// escalation_reason); the short spellings are read too.
		{name: "escalation false", in: head + `,"escalation":false,"escalation_reason":"the agent retries"}`},
		{name: "escalation off", in: head + `,"escalation":"off","escalation_reason":"the agent retries"}`},
		{name: "escalation as a list of steps", in: head + `,"escalation":[{"at":0.5,"to":"owner"}]}`},
		{name: "escalation true", in: head + `,"escalation":true}`},
		{name: "escalation default", in: head + `,"escalation":"default"}`},
		{name: "escalation not off", in: head + `,"escalation":{"off":false}}`},
		{name: "escalation as steps in an object", in: head + `,"escalation":{"steps":[{"at":0.5,"to":"owner"}]}}`},
		// contract.md lists every form; anything else is refused, not
		// read as the default ladder.
		{name: "escalation as an empty list", in: head + `,"escalation":[]}`, partial: true,
			want: `escalation: names no steps: give steps such as [{"at": 0.5, "to": "owner"}], false with escalation_reason to turn reminders off, or leave it out for the default ladder`},
		{name: "escalation as an empty object", in: head + `,"escalation":{}}`},
		{name: "escalation with no steps in an object", in: head + `,"escalation":{"steps":[]}}`, partial: true,
			want: `escalation: names no steps: give steps such as [{"at": 0.5, "to": "owner"}], false with escalation_reason to turn reminders off, or leave it out for the default ladder`},
		{name: "escalation with an unknown key", in: head + `,"escalation":{"of":true},"escalation_reason":"the agent retries"}`, partial: true,
			want: `escalation: "of" is not a setting of the ladder (off, steps)`},
		{name: "escalation with an unknown key beside off", in: head + `,"escalation":{"off":true,"because":"x"},"escalation_reason":"the agent retries"}`, partial: true,
			want: `escalation: "because" is not a setting of the ladder (off, steps)`},
		{name: "escalation step with an unknown key", in: head + `,"escalation":{"steps":[{"at":0.5,"to":"owner"},{"after":0.75,"to":"admins"}]}}`, partial: true,
			want: `escalation.steps[1]: "after" is not a setting of a step (at, to); escalation.steps[1].at: must be a fraction of the timeout between 0 and 1`},
		{name: "escalation list step with an unknown key", in: head + `,"escalation":[{"at":0.5,"to":"owner","via":"dm"}]}`, partial: true,
			want: `escalation[0]: "via" is not a setting of a step (at, to)`},
		{name: "escalation false without a reason", in: head + `,"escalation":false}`,
			want: "escalation_reason: is required to turn the escalation ladder off", partial: true},
		{name: "escalation as an unknown word", in: head + `,"escalation":"sometimes"}`,
			want: `escalation: must be "off", a list of steps or an object {"off", "steps"}, not text`, partial: true},
		{name: "escalation as a number", in: head + `,"escalation":3}`,
			want: `escalation: must be "off", a list of steps or an object {"off", "steps"}, not a number`, partial: true},
		{name: "escalation steps of the wrong type", in: head + `,"escalation":[{"at":"half","to":"owner"}]}`,
			want: "escalation.at: must be a number, not text", partial: true},
		{name: "invalid question", in: head + `,"timeout":"banana"}`,
			want: `timeout: "banana" is not a duration such as 30m, 4h or 2d`, partial: true},
		{name: "null", in: `null`, partial: true,
			want: "tenant: is required; job_id: is required; question_id: is required; question: is required: write it for a person who has not seen the conversation"},
		{name: "over 64 KiB of JSON", in: head + `,"context":"` + strings.Repeat("x", MaxQuestionBytes) + `"}`, partial: true,
			want: "question: is 65632 bytes as JSON; at most 65536 are accepted"},
		{name: "64 KiB of JSON spaced out", in: head + strings.Repeat(" ", MaxQuestionBytes) + `}`},
		{name: "far too large to read", in: head + strings.Repeat(" ", 8*MaxQuestionBytes) + `}`,
			want: fmt.Sprintf("question: is %d bytes; at most 65536 are accepted", len(head)+8*MaxQuestionBytes+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := DecodeQuestion([]byte(tt.in))
			if tt.want == "" {
				if err != nil || q == nil {
					t.Fatalf("DecodeQuestion = %v, %v; want a valid question", q, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("DecodeQuestion succeeded, want %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q\nwant    %q", err.Error(), tt.want)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("error is %T, want *ValidationError", err)
			}
			for _, goWords := range []string{"bridge.", "[]", "float64", "int64", "Go value", "unmarshal"} {
				if strings.Contains(err.Error(), goWords) {
					t.Errorf("error %q leaks Go words %q", err, goWords)
				}
			}
			if (q != nil) != tt.partial {
				t.Errorf("question returned = %v, want %v", q != nil, tt.partial)
			}
		})
	}
}

// A value of the wrong type, even one encoding/json stops at (the
// escalation's own decoder), leaves the rest of the question decoded, so
// the invalid outcome names the agent's question and version.
func TestDecodeQuestionKeepsWhatFollowsABadValue(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{`"escalation":"sometimes"`, `"escalation":[{"at":"half"}]`, `"timeout":4`, `"fields":"x"`} {
		in := `{"tenant":"acme","job_id":"job-e",` + bad + `,"question_id":"q-1","task_version":2,"question":"Why?"}`
		q, err := DecodeQuestion([]byte(in))
		if err == nil || q == nil {
			t.Fatalf("%s: DecodeQuestion = %v, %v; want a partial question and an error", bad, q, err)
		}
		if q.Tenant != "acme" || q.JobID != "job-e" || q.QuestionID != "q-1" || q.TaskVersion != 2 || q.Question != "Why?" {
			t.Errorf("%s: decoded %+v, want everything but the bad value", bad, q)
		}
	}
}

// A question that validates is re-encoded by encoding/json (which writes
// "<" as "\u003c") when it is stored or sent on; it must still decode.
func TestDecodeQuestionReencodedStaysAcceptable(t *testing.T) {
	t.Parallel()
	q := validQuestion()
	q.Context = strings.Repeat("<&>", (MaxQuestionBytes-1000)/3)
	if err := ValidateQuestion(q); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(q)
	if len(raw) <= MaxQuestionBytes {
		t.Fatalf("test needs an encoding over the limit, got %d bytes", len(raw))
	}
	if _, err := DecodeQuestion(raw); err != nil {
		t.Errorf("re-encoded question refused: %v", err)
	}
	q.Context += strings.Repeat("x", 1000)
	if err := ValidateQuestion(q); err == nil || !strings.Contains(err.Error(), "bytes as JSON; at most 65536 are accepted") {
		t.Errorf("ValidateQuestion of a question over 64 KiB = %v", err)
	}
}

// A refused question still tells the runtime where to send the refusal.
func TestDecodeQuestionKeepsAddressOnTypeError(t *testing.T) {
	t.Parallel()
	q, err := DecodeQuestion([]byte(`{"tenant":"acme","job_id":"job-1","question_id":"q-1","question":"Why?","fields":[{"name":"n","kind":"number","max":"9"}],"timeout":"4h"}`))
	if err == nil {
		t.Fatal("want an error")
	}
	if q.Tenant != "acme" || q.JobID != "job-1" || q.QuestionID != "q-1" || q.Timeout != "4h" {
		t.Errorf("decoded %+v, want tenant, job and question ids kept", q)
	}
}
