package bridge

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// FuzzDecodeQuestion: decoding never panics, and a question that validates
// re-encodes to JSON that decodes and validates again, unchanged.
func FuzzDecodeQuestion(f *testing.F) {
	for _, q := range []*Question{validQuestion(), validApproval(), fieldQuestion(fieldsOfJSONSize(2000)...)} {
		raw, _ := json.Marshal(q)
		f.Add(raw)
	}
	for _, s := range []string{
		``, `null`, `[]`, `{}`, `{"tenant":1}`, `{"fields":"x"}`, `{}}`, `{"a":1} x`,
		`{"tenant":"t","job_id":"j","question_id":"q","question":"Why?","timeout":"2d"}`,
		`{"tenant":"t","job_id":"j","question_id":"q","question":"Why?","choices":["a","A"]}`,
		`{"tenant":"t","job_id":"j","question_id":"q","question":"Why?","escalation":{"steps":[{"at":0.5,"to":"owner"}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		q, err := DecodeQuestion(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without words")
			}
			return
		}
		raw, err := json.Marshal(q)
		if err != nil {
			t.Fatalf("re-encoding a valid question: %v", err)
		}
		q2, err := DecodeQuestion(raw)
		if err != nil {
			t.Fatalf("re-encoded question %s is refused: %v", raw, err)
		}
		raw2, _ := json.Marshal(q2)
		if !bytes.Equal(raw, raw2) {
			t.Fatalf("round trip changed the question:\n%s\n%s", raw, raw2)
		}
		_ = q.TimeoutDuration()
		_ = q.Ladder()
	})
}

// fuzzQuestions are the questions FuzzCheckAnswer answers, by index.
func fuzzQuestions() []*Question {
	return []*Question{
		validQuestion(),
		validApproval(),
		{Tenant: "t", JobID: "j", QuestionID: "q", Question: "Which?", Choices: []string{"blue", "Dark Red", "42", "ÉTÉ"}},
		{Tenant: "t", JobID: "j", QuestionID: "q", Question: "What?"},
		fieldQuestion(
			Field{Name: "title", Kind: FieldText, MaxLength: 5},
			Field{Name: "notes", Kind: FieldText, Multiline: true},
			Field{Name: "n", Kind: FieldNumber},
			Field{Name: "ratio", Kind: FieldNumber, Min: ptr(-0.5), Max: ptr(0.5)},
			Field{Name: "color", Kind: FieldChoice, Options: []string{"Red", "Blue", "1"}},
			Field{Name: "tags", Kind: FieldMultiChoice, Options: []string{"urgent", "Billing", "a, b"}},
			Field{Name: "on", Kind: FieldDate},
			Field{Name: "at", Kind: FieldDate, DateTime: true},
			Field{Name: "ok", Kind: FieldToggle},
			Field{Name: "sure", Kind: FieldToggle, Required: true},
		),
	}
}

// FuzzCheckAnswer: checking never panics, and an accepted answer's
// canonical value is valid JSON that is accepted again as itself.
func FuzzCheckAnswer(f *testing.F) {
	seeds := []struct {
		q       uint8
		action  string
		answer  string
		comment string
	}{
		{0, "", `{"on":"2026-10-20","copies":2}`, ""},
		{0, "", `"{\"copies\":\"3\",\"on\":\" 2026-10-20 \"}"`, ""},
		{0, ActionDecline, ``, "ask Ana"},
		{1, ActionApprove, ``, ""},
		{1, "", `" Deny "`, ""},
		{2, "", `"dark red"`, ""},
		{2, "", `42`, ""},
		{3, "", `"anything at all"`, ""},
		{4, "", `{"title":"héllo","n":-0,"ratio":"0.25","color":" blue","tags":"urgent, billing","on":"2028-02-29","at":"2026-10-20T14:03","ok":"on","sure":"no"}`, ""},
		{4, "", `{"at":1792504980,"sure":1,"tags":["Urgent","urgent"],"n":1e21}`, ""},
		{4, "", `{"at":"2026-10-20T14:03:00.5+02:00","sure":true,"n":"1e-7"}`, ""},
	}
	for _, s := range seeds {
		f.Add(s.q, s.action, []byte(s.answer), s.comment)
	}
	questions := fuzzQuestions()
	for _, q := range questions {
		if err := ValidateQuestion(q); err != nil {
			f.Fatalf("fuzz question invalid: %v", err)
		}
	}
	f.Fuzz(func(t *testing.T, qi uint8, action string, answer []byte, comment string) {
		q := questions[int(qi)%len(questions)]
		got, aerr := CheckAnswer(q, action, answer, comment)
		if aerr != nil {
			if got != nil || aerr.Text == "" || (aerr.Reason != RefusedInvalid && aerr.Reason != RefusedWrongKind) {
				t.Fatalf("refusal %+v with %+v", aerr, got)
			}
			return
		}
		if got.Action == ActionDecline {
			if got.Value != nil {
				t.Fatalf("a decline with value %s", got.Value)
			}
			return
		}
		if !json.Valid(got.Value) {
			t.Fatalf("canonical value %q is not JSON", got.Value)
		}
		if q.IsApproval() {
			// Only the approve and deny actions settle an approval.
			if got.Action != ActionApprove && got.Action != ActionDeny {
				t.Fatalf("an approval settled by action %q", got.Action)
			}
			return
		}
		again, aerr := CheckAnswer(q, ActionAnswer, got.Value, "")
		if aerr != nil {
			t.Fatalf("canonical value %s of %q is refused: %v", got.Value, answer, aerr)
		}
		if !bytes.Equal(again.Value, got.Value) || again.Display != got.Display {
			t.Fatalf("not idempotent: %q -> %s (%q) -> %s (%q)", answer, got.Value, got.Display, again.Value, again.Display)
		}
		_ = AnsweredText(got.Value)
	})
}

// FuzzDecodeNotice: decoding never panics; a refusal names a field; a
// notice accepted has a code, a dependency and an operation, is masked (masking it again changes nothing) and
// of the subject's tenant and job.
func FuzzDecodeNotice(f *testing.F) {
	for _, s := range []string{
		validNoticeJSON(), ``, `null`, `[]`, `{}`, `{"code":1}`, `{"retryable":"x"}`, `{}}`,
		`{"code":"ACCESS_DENIED","dependency":"drive","operation":"read"}`,
		`{"code":"INPUT_MISSING","dependency":"d","operation":"o","operator_message":"password=hunter2 https://a:b@h/ xoxp-1-2-3"}`,
		`{"tenant":"globex","code":"ACCESS_DENIED","dependency":"d","operation":"o"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := DecodeNotice(data, "acme", "job-1")
		if err != nil {
			if !strings.Contains(err.Error(), ":") {
				t.Fatalf("a refusal that names no field: %q", err)
			}
			return
		}
		if n.Tenant != "acme" || n.JobID != "job-1" {
			t.Fatalf("accepted a notice of %s/%s", n.Tenant, n.JobID)
		}
		if !slices.Contains(NoticeCodes, n.Code) || strings.TrimSpace(n.Dependency) == "" || strings.TrimSpace(n.Operation) == "" {
			t.Fatalf("accepted a notice without its code, dependency or operation: %+v", n)
		}
		before := *n
		MaskNotice(n)
		if *n != before {
			t.Fatalf("an accepted notice was not masked: %+v", before)
		}
	})
}

// FuzzMaskSecrets: masking never panics, masking masked text changes
// nothing, and no Slack token survives.
func FuzzMaskSecrets(f *testing.F) {
	for _, s := range []string{"", "xoxb-1-2-abc", "Bearer abc.DEF-123", "https://a:b@h/p?token=x&y=1",
		`{"password": "p"}`, "eyJhbGciOi.eyJzdWIiOi.sig", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m := MaskSecrets(s)
		if again := MaskSecrets(m); again != m {
			t.Fatalf("masking %q again changed it to %q", m, again)
		}
		if slackToken.MatchString(m) {
			t.Fatalf("a Slack token survived in %q", m)
		}
	})
}
