package card

import (
	"strings"

	"github.com/askbridge/askbridge/bridge"
)

// NoticeCase is one notice of the shared table every renderer draws into
// its golden file: the same notice must read the same on every platform.
type NoticeCase struct {
	Name   string
	Notice bridge.Notice
}

// CaseToken is a Slack token a case's operator message holds: no card may
// show it.
const CaseToken = "xoxb-1234567890-0987654321-AbCdEfGhIjKl"

// NoticeCases are notices of every code, with and without the optional
// parts, one holding secrets and one at every length limit.
func NoticeCases() []NoticeCase {
	base := func(code string) bridge.Notice {
		return bridge.Notice{Tenant: "acme", JobID: "job-1", NoticeID: "n-1", Agent: "acme-support", At: CaseAsked,
			Failure: bridge.Failure{Code: code, Dependency: "crm", Operation: "export_contacts"}}
	}
	secret := base(bridge.CodeAccessDenied)
	secret.RequiredCapability = "crm:export"
	secret.SafeFallback = "I can summarise the contacts I already have."
	secret.OperatorMessage = "The CRM answered 403 to " + CaseToken + " (Authorization: Bearer abc.DEF-123_ghi) at https://svc:hunter2@crm.example.com/v2."
	retryable := base(bridge.CodeSourceUnreliable)
	retryable.Retryable = true
	retryable.Dependency, retryable.Operation = "billing-api", "fetch_invoices"
	retryable.SafeFallback = "I can draft the report without this month's invoices."
	retryable.OperatorMessage = "billing-api timed out three times in a row."
	bare := base(bridge.CodeInputMissing)
	bare.Agent = ""
	reference := base(bridge.CodeReferenceUnresolved)
	reference.Dependency, reference.Operation = "drive", "open_file"
	reference.OperatorMessage = "No file named Q3-board.pdf in the shared drive."
	capability := base(bridge.CodeCapabilityUnavailable)
	capability.Dependency, capability.Operation = "slack", "send_dm"
	capability.RequiredCapability = "im:write"
	long := base(bridge.CodeAccessDenied)
	long.Agent = strings.Repeat("agent-", bridge.MaxNoticeName/6)
	long.Dependency = strings.Repeat("d<&>", bridge.MaxNoticeName/4)
	long.Operation = strings.Repeat("op_*x*_", bridge.MaxNoticeName/7)
	long.RequiredCapability = strings.Repeat("scope:`read` ", bridge.MaxNoticeCapability/13)
	long.SafeFallback = strings.Repeat("I can still do a little. ", bridge.MaxNoticeText/25)
	long.OperatorMessage = strings.Repeat("Refused <with> & markup *bold* _it_. ", bridge.MaxNoticeText/37)
	return []NoticeCase{{"access denied, secrets masked", secret}, {"retryable", retryable}, {"bare", bare},
		{"reference unresolved", reference}, {"capability unavailable", capability}, {"long", long}}
}
