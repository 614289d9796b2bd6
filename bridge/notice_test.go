package bridge

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func validNoticeJSON() string {
	return `{"tenant":"acme","job_id":"job-1","notice_id":"n-1","agent":"acme-support",
	"code":"CAPABILITY_UNAVAILABLE","dependency":"crm","operation":"export_contacts","retryable":true,
	"required_capability":"crm:export","safe_fallback":"I can summarise the contacts I already have.",
	"operator_message":"The CRM refused the export: Bearer abc.DEF-123_ghi has no crm:export scope."}`
}

func TestDecodeNoticeValidIsMasked(t *testing.T) {
	n, err := DecodeNotice([]byte(validNoticeJSON()), "acme", "job-1")
	if err != nil {
		t.Fatal(err)
	}
	if n.Code != CodeCapabilityUnavailable || n.Dependency != "crm" || n.Operation != "export_contacts" || !n.Retryable ||
		n.NoticeID != "n-1" || n.SafeFallback == "" {
		t.Errorf("decoded %+v", n)
	}
	if want := "The CRM refused the export: Bearer [masked] has no crm:export scope."; n.OperatorMessage != want {
		t.Errorf("operator_message %q, want %q", n.OperatorMessage, want)
	}
}

func TestDecodeNoticeTakesSubjectIDs(t *testing.T) {
	n, err := DecodeNotice([]byte(`{"code":"ACCESS_DENIED","dependency":"drive","operation":"read"}`), "acme", "job-9")
	if err != nil {
		t.Fatal(err)
	}
	if n.Tenant != "acme" || n.JobID != "job-9" {
		t.Errorf("ids %s/%s", n.Tenant, n.JobID)
	}
}

func TestDecodeNoticeRefusals(t *testing.T) {
	base := func(edit func(m map[string]any)) string {
		var m map[string]any
		_ = json.Unmarshal([]byte(validNoticeJSON()), &m)
		edit(m)
		raw, _ := json.Marshal(m)
		return string(raw)
	}
	for _, c := range []struct{ name, data, field string }{
		{"empty", ``, "notice: is empty"},
		{"not json", `code=ACCESS_DENIED`, "notice: is not a JSON object"},
		{"array", `[1]`, "notice: is not a JSON object"},
		{"trailing", validNoticeJSON() + ` {}`, "notice: has trailing data"},
		{"too large", `{"operator_message":"` + strings.Repeat("a", MaxNoticeBytes) + `"}`, "notice: is "},
		{"no code", base(func(m map[string]any) { delete(m, "code") }), "code: is required"},
		{"question timed out", base(func(m map[string]any) { m["code"] = CodeQuestionTimedOut }), "code: must be one of"},
		{"unknown code", base(func(m map[string]any) { m["code"] = "OOPS" }), "code: must be one of"},
		{"code of wrong type", base(func(m map[string]any) { m["code"] = 7 }), "code: must be text"},
		{"retryable of wrong type", base(func(m map[string]any) { m["retryable"] = "yes" }), "retryable: must be true or false"},
		{"no dependency", base(func(m map[string]any) { m["dependency"] = " " }), "dependency: is required"},
		{"no operation", base(func(m map[string]any) { delete(m, "operation") }), "operation: is required"},
		{"long dependency", base(func(m map[string]any) { m["dependency"] = strings.Repeat("d", MaxNoticeName+1) }), "dependency: must be at most"},
		{"long message", base(func(m map[string]any) { m["operator_message"] = strings.Repeat("m", MaxNoticeText+1) }), "operator_message: must be at most"},
		{"long capability", base(func(m map[string]any) { m["required_capability"] = strings.Repeat("c", MaxNoticeCapability+1) }), "required_capability: must be at most"},
		{"long fallback", base(func(m map[string]any) { m["safe_fallback"] = strings.Repeat("f", MaxNoticeText+1) }), "safe_fallback: must be at most"},
		{"other tenant", base(func(m map[string]any) { m["tenant"] = "globex" }), "tenant: \"globex\" does not match the subject's \"acme\""},
		{"other job", base(func(m map[string]any) { m["job_id"] = "job-2" }), "job_id: \"job-2\" does not match"},
		{"bad notice id", base(func(m map[string]any) { m["notice_id"] = "a.b" }), "notice_id:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeNotice([]byte(c.data), "acme", "job-1")
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err %v, want a ValidationError", err)
			}
			if !strings.HasPrefix(err.Error(), c.field) && !strings.Contains(err.Error(), "; "+c.field) {
				t.Errorf("err %q does not say %q", err, c.field)
			}
		})
	}
}

func TestDecodeNoticeRefusalEchoesNoSecret(t *testing.T) {
	const tok = "xoxb-1234567890-0987654321-AbCdEfGhIjKl"
	_, err := DecodeNotice([]byte(`{"code":"`+tok+`","dependency":"slack","operation":"post"}`), "acme", "job-1")
	if err == nil || strings.Contains(err.Error(), "xoxb") || !strings.Contains(err.Error(), "code:") {
		t.Errorf("err %v", err)
	}
}
