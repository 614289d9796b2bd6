package card

import (
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge"
)

func TestNoticeCardHasTheFivePartsInOrder(t *testing.T) {
	for _, c := range NoticeCases() {
		nc := NewNotice(c.Notice)
		if len(nc.Parts) != len(NoticeLabels) {
			t.Fatalf("%s: %d parts", c.Name, len(nc.Parts))
		}
		for i, p := range nc.Parts {
			if p.Label != NoticeLabels[i] || strings.TrimSpace(p.Text) == "" {
				t.Errorf("%s: part %d is %q %q", c.Name, i, p.Label, p.Text)
			}
			if strings.Contains(p.Text, "xoxb-") || strings.Contains(p.Text, "hunter2") || strings.Contains(p.Text, "abc.DEF") {
				t.Errorf("%s: %s shows a secret: %q", c.Name, p.Label, p.Text)
			}
		}
	}
}

func TestNoticeCardWords(t *testing.T) {
	cases := map[string]NoticeCase{}
	for _, c := range NoticeCases() {
		cases[c.Name] = c
	}
	secret := NewNotice(cases["access denied, secrets masked"].Notice)
	for label, want := range map[string]string{
		LabelFailure:           "Access denied (ACCESS_DENIED)\nThe CRM answered 403 to [masked] (Authorization: Bearer [masked]) at https://[masked]@crm.example.com/v2.",
		LabelAttempted:         "export_contacts on crm",
		LabelMissingCapability: "crm:export",
		LabelCanStillDo:        "I can summarise the contacts I already have.",
		LabelUnblock:           "Someone giving the agent crm:export on crm. " + RetryWontHelp,
	} {
		if got := secret.Part(label); got != want {
			t.Errorf("%s: %q, want %q", label, got, want)
		}
	}
	if secret.Title != "acme-support met a failure in job job-1" {
		t.Errorf("title %q", secret.Title)
	}
	bare := NewNotice(cases["bare"].Notice)
	if bare.Part(LabelMissingCapability) != NoCapabilityNamed || bare.Part(LabelCanStillDo) != NoFallbackNamed ||
		bare.Part(LabelFailure) != "Input missing (INPUT_MISSING)" || bare.Title != "Failure in job job-1" {
		t.Errorf("bare card %+v", bare)
	}
	if got := NewNotice(cases["retryable"].Notice).Part(LabelUnblock); got != RetryMayPass {
		t.Errorf("retryable: %q", got)
	}
	for code, want := range map[string]string{
		bridge.CodeAccessDenied:          "Someone granting the agent access to crm.",
		bridge.CodeInputMissing:          "Someone providing the input crm lacks.",
		bridge.CodeReferenceUnresolved:   "Someone correcting the reference the agent gave crm.",
		bridge.CodeSourceUnreliable:      "crm working reliably again.",
		bridge.CodeCapabilityUnavailable: "Someone making export_contacts available on crm.",
	} {
		n := bridge.Notice{JobID: "job-1", Failure: bridge.Failure{Code: code, Dependency: "crm", Operation: "export_contacts"}}
		if got := NewNotice(n).Part(LabelUnblock); got != want+" "+RetryWontHelp {
			t.Errorf("%s: %q", code, got)
		}
	}
}
