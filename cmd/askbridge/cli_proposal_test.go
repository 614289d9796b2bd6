package main

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

func TestProposalFlagsMakeAnApproval(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		args    []string
		want    string // the proposal as JSON, "" for none
		allows  []string
		problem string
	}{
		{name: "no proposal", args: nil},
		{name: "allowed tools only", args: []string{"--allows", "read_crm", "--allows", "search"}, allows: []string{"read_crm", "search"}},
		{
			name: "a whole proposal",
			args: []string{"--proposal", "pr_8f2a", "--action", "refund", "--summary", "Refund $240 to Jane D.", "--summary", "Reason: damaged item",
				"--arg", "order=4471", "--arg", "customer=Jane D.", "--arg", `note="as is"`, "--amount", "240", "--currency", "USD", "--expires", "2h"},
			want: `{"id":"pr_8f2a","action":"refund","summary":["Refund $240 to Jane D.","Reason: damaged item"],` +
				`"arguments":{"customer":"Jane D.","note":"as is","order":4471},"amount":240,"currency":"USD","expires_at":"2026-12-02T11:00:00Z"}`,
		},
		{name: "an amount of zero is an amount", args: []string{"--proposal", "p1", "--action", "refund", "--summary", "s", "--amount", "0", "--currency", "EUR"},
			want: `{"id":"p1","action":"refund","summary":["s"],"amount":0,"currency":"EUR"}`},
		{name: "an expiry as a time", args: []string{"--proposal", "p1", "--action", "a", "--summary", "s", "--expires", "2026-12-03T08:00:00Z"},
			want: `{"id":"p1","action":"a","summary":["s"],"expires_at":"2026-12-03T08:00:00Z"}`},
		{name: "proposal flags without a proposal", args: []string{"--action", "refund"}, problem: "--action: describes a proposal; give --proposal ID too"},
		{name: "an argument without a value", args: []string{"--proposal", "p1", "--arg", "order"}, problem: `--arg "order": must be key=value`},
		{name: "an expiry that is neither", args: []string{"--proposal", "p1", "--expires", "soon"}, problem: `--expires: "soon" is neither a duration`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("ask", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			p := addProposalFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			var q bridge.Question
			err := p.apply(&q, now)
			if tc.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.problem) {
					t.Fatalf("err = %v, want %q", err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(q.AllowedTools, ","); got != strings.Join(tc.allows, ",") {
				t.Errorf("allowed_tools = %q, want %q", got, strings.Join(tc.allows, ","))
			}
			if tc.want == "" {
				if q.Proposal != nil || q.Kind != "" {
					t.Fatalf("kind %q, proposal %+v, want a plain question", q.Kind, q.Proposal)
				}
				return
			}
			if q.Kind != bridge.KindApproval {
				t.Errorf("kind = %q, want approval", q.Kind)
			}
			if got := mustJSON(q.Proposal); got != tc.want {
				t.Errorf("proposal =\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}
