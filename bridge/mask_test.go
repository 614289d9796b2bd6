package bridge

import (
	"strings"
	"testing"
)

func TestMaskSecrets(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		// What must go.
		{"slack bot token", "auth failed for xoxb-1234567890-0987654321-AbCdEfGhIjKl", "auth failed for [masked]"},
		{"slack user token", "token xoxp-11-22-33-abcdef was revoked", "token [masked] was revoked"},
		{"slack app token", "socket mode: xapp-1-A0123-456-abcdef0123", "socket mode: [masked]"},
		{"slack legacy and refresh tokens", "xoxa-2-abcd xoxe.xoxp-1-Mi0yLTEx xoxe-1-abcdEF", "[masked] [masked] [masked]"},
		{"bearer", "Authorization: Bearer abc.DEF-123_ghi", "Authorization: Bearer [masked]"},
		{"bearer lower case", "sent bearer 9f8e7d6c5b4a", "sent bearer [masked]"},
		{"basic", "Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [masked]"},
		{"discord bot token", "Bot MTA5ODc2NTQzMjEwOTg3NjU0Mw.GaBcDe.abcdefghijklmnopqrstuvwxyz0123456789",
			"Bot [masked]"},
		{"jwt", "id_token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
			"id_token [masked]"},
		{"long base64", "key wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY01 leaked", "key [masked] leaked"},
		{"base64 with slashes and padding", "blob aGVsbG8gd29ybGQgaGVsbG8gd29y/bGQgaGVsbG8=", "blob [masked]"},
		{"long hex", "sha 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "sha [masked]"},
		{"url with credentials", "GET https://ana:hunter2@db.example.com:5432/prod failed",
			"GET https://[masked]@db.example.com:5432/prod failed"},
		{"postgres url", "postgres://svc:p%40ss@10.0.0.1/db", "postgres://[masked]@10.0.0.1/db"},
		{"password pair", "login with password=hunter2 refused", "login with password=[masked] refused"},
		{"token query", "https://api.example.com/v1?limit=5&access_token=abc123&x=1",
			"https://api.example.com/v1?limit=5&access_token=[masked]&x=1"},
		{"secret pair", "client_secret = s3cr3t; region=eu", "client_secret = [masked]; region=eu"},
		{"json secret", `{"api_key": "k-123", "name": "crm"}`, `{"api_key": "[masked]", "name": "crm"}`},
		{"upper case key", "PASSWORD=Tr0ub4dor", "PASSWORD=[masked]"},
		// What must stay.
		{"ordinary words", "The CRM refused the export: quota exceeded for today.", "The CRM refused the export: quota exceeded for today."},
		{"short commit id", "deployed 3f2a9c1 and a1b2c3d4e5f6", "deployed 3f2a9c1 and a1b2c3d4e5f6"},
		{"url without credentials", "see https://status.example.com/incidents/42?view=full", "see https://status.example.com/incidents/42?view=full"},
		{"email address", "write to ana@example.com", "write to ana@example.com"},
		{"bearer in prose", "the bearer of bad news", "the bearer of bad news"},
		{"token in prose", "the token: revoked by the admin", "the token: revoked by the admin"},
		{"tokens count", "max_tokens=4096 tokens=12", "max_tokens=4096 tokens=12"},
		{"long path", "/var/lib/askbridge/templates/notice/default.html", "/var/lib/askbridge/templates/notice/default.html"},
		{"long identifier", "export_quarterly_financial_report_to_board", "export_quarterly_financial_report_to_board"},
		{"host names", "api.eu-west-1.amazonaws.com timed out", "api.eu-west-1.amazonaws.com timed out"},
		{"uuid", "order 123e4567-e89b-12d3-a456-426614174000", "order 123e4567-e89b-12d3-a456-426614174000"},
		{"xox word", "the xoxo sign-off", "the xoxo sign-off"},
		{"empty", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := MaskSecrets(c.in)
			if got != c.want {
				t.Errorf("MaskSecrets(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
			if again := MaskSecrets(got); again != got {
				t.Errorf("masking again changed %q to %q", got, again)
			}
		})
	}
}

func TestMaskNoticeMasksEveryText(t *testing.T) {
	const tok = "xoxb-1234567890-0987654321-AbCdEfGhIjKl"
	n := Notice{Tenant: "acme", JobID: "job-1", Agent: "bot " + tok, Failure: Failure{Code: CodeAccessDenied,
		Dependency: "slack " + tok, Operation: "post " + tok, RequiredCapability: "scope " + tok,
		SafeFallback: "email " + tok, OperatorMessage: "Slack said invalid_auth for " + tok}}
	MaskNotice(&n)
	for _, s := range []string{n.Agent, n.Dependency, n.Operation, n.RequiredCapability, n.SafeFallback, n.OperatorMessage} {
		if strings.Contains(s, "xoxb") || !strings.Contains(s, Masked) {
			t.Errorf("not masked: %q", s)
		}
	}
}
