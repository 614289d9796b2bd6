package bridge

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// approvalJSON is an approval whose proposal is prop (a JSON object).
func approvalJSON(prop string) string {
	return `{"tenant":"acme","job_id":"job-1","question_id":"q-1","kind":"approval","question":"May I refund order 4471?","proposal":` + prop + `}`
}

func TestDecodeProposal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		prop string
		want string // the whole error; "" means valid
	}{
		{name: "design example", prop: `{"id":"pr_8f2a","action":"refund","summary":["Refund $240 to Jane D.","Reason: damaged item"],` +
			`"arguments":{"order":4471,"amount":240},"amount":240,"currency":"USD","expires_at":"2030-01-02T15:04:05Z"}`},
		{name: "no action", prop: `{"id":"pr_1","summary":["s"]}`,
			want: "proposal.action: is required for an approval: name the tool it would run (refund, send_report)"},
		{name: "action not a tool name", prop: `{"id":"pr_1","action":"refund money","summary":["s"]}`,
			want: `proposal.action: "refund money" is not a tool's name: use letters, digits and _ . : / -, starting with a letter or digit`},
		{name: "dotted action", prop: `{"id":"pr_1","action":"stripe.refund","summary":["s"]}`},
		{name: "id with a space inside", prop: `{"id":"pr 1","action":"refund","summary":["s"]}`},
		{name: "id with a surrounding space", prop: `{"id":"pr_1 ","action":"refund","summary":["s"]}`,
			want: `proposal.id: "pr_1 " is not a proposal id: no control characters or surrounding spaces`},
		{name: "id too long", prop: `{"id":"` + strings.Repeat("p", MaxProposalID+1) + `","action":"refund","summary":["s"]}`,
			want: "proposal.id: is 257 bytes; at most 256"},
		{name: "arguments a list", prop: `{"id":"pr_1","action":"refund","summary":["s"],"arguments":[1,2]}`,
			want: "proposal.arguments: must be a JSON object of the action's parameters, not a list"},
		{name: "arguments a number", prop: `{"id":"pr_1","action":"refund","summary":["s"],"arguments":5}`,
			want: "proposal.arguments: must be a JSON object of the action's parameters, not a number"},
		{name: "arguments null", prop: `{"id":"pr_1","action":"refund","summary":["s"],"arguments":null}`},
		{name: "arguments too large", prop: `{"id":"pr_1","action":"refund","summary":["s"],"arguments":{"a":"` + strings.Repeat("x", MaxProposalArguments) + `"}}`,
			want: "proposal.arguments: are 8200 bytes of JSON; at most 8192 (8 KiB)"},
		{name: "negative amount", prop: `{"id":"pr_1","action":"refund","summary":["s"],"amount":-1,"currency":"USD"}`,
			want: "proposal.amount: must not be negative, got -1"},
		{name: "amount as text", prop: `{"id":"pr_1","action":"refund","summary":["s"],"amount":"240","currency":"USD"}`,
			want: "proposal.amount: must be a number, not text"},
		{name: "amount without currency", prop: `{"id":"pr_1","action":"refund","summary":["s"],"amount":240}`,
			want: "proposal.currency: is required with an amount: a three-letter ISO 4217 code such as USD"},
		{name: "zero amount", prop: `{"id":"pr_1","action":"refund","summary":["s"],"amount":0,"currency":"EUR"}`},
		{name: "lower-case currency", prop: `{"id":"pr_1","action":"refund","summary":["s"],"amount":1,"currency":"usd"}`,
			want: `proposal.currency: "usd" must be a three-letter ISO 4217 code in capitals, such as USD or EUR`},
		{name: "expiry not a time", prop: `{"id":"pr_1","action":"refund","summary":["s"],"expires_at":"tomorrow"}`,
			want: `proposal.expires_at: "tomorrow" is not a time such as 2026-12-02T17:00:00Z`},
		{name: "expiry a number", prop: `{"id":"pr_1","action":"refund","summary":["s"],"expires_at":1792504980}`,
			want: `proposal.expires_at: must be a time such as 2026-12-02T17:00:00Z, not a number`},
		{name: "expiry null", prop: `{"id":"pr_1","action":"refund","summary":["s"],"expires_at":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, err := DecodeQuestion([]byte(approvalJSON(tt.prop)))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Fatalf("error = %q\n want    %q", got, tt.want)
			}
			if err != nil && q == nil {
				t.Fatal("no question returned with the refusal: it could not reach the agent")
			}
		})
	}
}

func TestDecodeProposalKeepsItsValues(t *testing.T) {
	t.Parallel()
	q, err := DecodeQuestion([]byte(approvalJSON(`{"id":"pr_8f2a","action":"refund","summary":["Refund $240"],` +
		`"arguments":{ "order": 4471 },"amount":240.5,"currency":"USD","expires_at":"2030-01-02T15:04:05+02:00"}`)))
	if err != nil {
		t.Fatal(err)
	}
	p := q.Proposal
	if p.Action != "refund" || *p.Amount != 240.5 || p.Currency != "USD" || !p.ExpiresAt.Equal(time.Date(2030, 1, 2, 13, 4, 5, 0, time.UTC)) {
		t.Fatalf("proposal = %+v", p)
	}
	raw, _ := json.Marshal(p)
	if want := `{"id":"pr_8f2a","action":"refund","summary":["Refund $240"],"arguments":{"order":4471},"amount":240.5,"currency":"USD","expires_at":"2030-01-02T15:04:05+02:00"}`; string(raw) != want {
		t.Fatalf("re-encoded:\n%s\nwant\n%s", raw, want)
	}
}

func TestCheckProposalAt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	p := &Proposal{ID: "pr_1", ExpiresAt: now}
	err := CheckProposalAt(p, now)
	if err == nil || err.Error() != "proposal.expires_at: 2026-12-02T08:00:00Z has already passed (it is now 2026-12-02T08:00:00Z): nobody could approve it" {
		t.Fatalf("err = %v", err)
	}
	p.ExpiresAt = now.Add(time.Second)
	if err := CheckProposalAt(p, now); err != nil {
		t.Fatal(err)
	}
	if err := CheckProposalAt(&Proposal{ID: "pr_1"}, now); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeExecution(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"tenant":"acme","job_id":"j","proposal_id":"pr_1","result":"succeeded","detail":"Refunded $240 · ref rf_31c9"}`, ""},
		{`{"tenant":"acme","job_id":"j","proposal_id":"pr_1","result":"failed"}`, ""},
		{`{"tenant":"acme","job_id":"j","proposal_id":"pr_1","result":"done"}`, `result: must be succeeded or failed, not "done"`},
		{`{"tenant":"acme","job_id":"j","proposal_id":"pr_1"}`, "result: is required: succeeded or failed"},
		{`{"tenant":"acme","job_id":"j","result":"failed"}`, "proposal_id: is required"},
		{`{"tenant":"acme","job_id":"j","proposal_id":7,"result":"failed"}`, "proposal_id: must be text, not a number"},
		{`{"tenant":"acme","job_id":"j","proposal_id":"pr_1","result":"failed","detail":"` + strings.Repeat("é", MaxExecutionDetail+1) + `"}`,
			"detail: must be at most 2000 characters, got 2001"},
		{`[]`, "execution: is not a JSON object: expected an object, not a list"},
		{`nope`, "execution: is not a JSON object: invalid character 'o' in literal null (expecting 'u') (at byte 2)"},
	}
	for _, tt := range tests {
		_, err := DecodeExecution([]byte(tt.in))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%.60s: error = %q, want %q", tt.in, got, tt.want)
		}
	}
}
