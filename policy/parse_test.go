package policy

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge"
)

// designExample is the policy of DESIGN's safety contract, as an operator
// writes it.
const designExample = `tenants:
  acme:
    actions:
      refund:   {require_approval: true, required_approvals: 2, forbid_self_approval: true, max_amount: 500, currency: USD, approvers: [admin, "slack:U0FIN"]}
      delete_records: {require_approval: true}
`

func TestParseDesignExample(t *testing.T) {
	p, err := Parse("policy.yaml", []byte(designExample))
	if err != nil {
		t.Fatal(err)
	}
	limit := 500.0
	want := &Policy{Tenants: map[string]Tenant{"acme": {Actions: map[string]Rule{
		"refund": {RequireApproval: true, RequiredApprovals: 2, ForbidSelfApproval: true,
			MaxAmount: &limit, Currency: "USD", Approvers: []string{"admin", "slack:U0FIN"}},
		"delete_records": {RequireApproval: true},
	}}}}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("got %+v\nwant %+v", p, want)
	}
	if tenants, actions := p.Count(); tenants != 1 || actions != 2 {
		t.Fatalf("Count = %d, %d; want 1, 2", tenants, actions)
	}
	r, ok := p.Rule("acme", "refund")
	if !ok || r.Approvals() != 2 || *r.MaxAmount != 500 {
		t.Fatalf("Rule(acme, refund) = %+v, %v", r, ok)
	}
	if _, ok := p.Rule("acme", "send_report"); ok {
		t.Fatal("an action the file does not name has a rule")
	}
	if _, ok := p.Rule("globex", "refund"); ok {
		t.Fatal("a tenant the file does not name has a rule")
	}
}

func TestParsePeople(t *testing.T) {
	p, err := Parse("policy.yaml", []byte(designExample+"people:\n  kevin: [slack:U0KEV, \"discord:333333333333333333\", console:kevin]\n  ana: [slack:U0ANA]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := bridge.People{"kevin": {"slack:U0KEV", "discord:333333333333333333", "console:kevin"}, "ana": {"slack:U0ANA"}}
	if !reflect.DeepEqual(p.People, want) {
		t.Fatalf("people = %v, want %v", p.People, want)
	}
}

func TestParseAccepts(t *testing.T) {
	for _, tc := range []struct {
		name, file       string
		tenants, actions int
	}{
		{"no tenants", "tenants: {}\n", 0, 0},
		{"comments and block style", "# the operator's rules\ntenants:\n  acme:   # the first customer\n    actions:\n      refund:\n        require_approval: true\n        max_amount: 12.50\n        currency: EUR\n", 1, 1},
		{"an empty rule", "tenants:\n  acme:\n    actions:\n      refund: {}\n", 1, 1},
		{"a tenant without actions", "tenants:\n  acme:\n    actions: {}\n", 1, 0},
		{"two tenants", "tenants:\n  a: {actions: {x: {require_approval: true}}}\n  b: {actions: {x: {}, y: {forbid_self_approval: false}}}\n", 2, 3},
		{"max_amount zero", "tenants: {a: {actions: {x: {max_amount: 0, currency: USD}}}}\n", 1, 1},
		{"approvers of every kind", "tenants: {a: {actions: {x: {approvers: [owner, admin, operator, 'discord:123', cli:alice, console:kevin]}}}}\n", 1, 1},
		{"a byte order mark and CRLF", "\uFEFFtenants:\r\n  a:\r\n    actions: {x: {require_approval: true}}\r\n", 1, 1},
		{"tool names as agents give them", "tenants: {a: {actions: {mcp__github__create_issue: {}, fs.write_file: {}, billing:refund: {}, slack/post: {}}}}\n", 1, 4},
		{"an explicit document", "---\ntenants: {}\n...\n", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("policy.yaml", []byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if tenants, actions := p.Count(); tenants != tc.tenants || actions != tc.actions {
				t.Fatalf("Count = %d, %d; want %d, %d", tenants, actions, tc.tenants, tc.actions)
			}
		})
	}
}

// TestParseRefuses holds each refusal's line exactly as the operator reads
// it on stderr or in the log.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"approvals as a word", "tenants:\n  acme:\n    actions:\n      refund:\n        required_approvals: two\n",
			`policy.yaml:5: tenants.acme.actions.refund.required_approvals: must be a whole number of 1 or more, not "two"`},
		{"approvals zero", "tenants: {acme: {actions: {refund: {required_approvals: 0}}}}",
			`policy.yaml:1: tenants.acme.actions.refund.required_approvals: must be a whole number of 1 or more, not "0"`},
		{"approvals a fraction", "tenants:\n acme:\n  actions:\n   refund: {required_approvals: 1.5}\n",
			`policy.yaml:4: tenants.acme.actions.refund.required_approvals: must be a whole number of 1 or more, not "1.5"`},
		{"approvals overflowing", "tenants: {acme: {actions: {refund: {required_approvals: 99999999999999999999}}}}",
			`policy.yaml:1: tenants.acme.actions.refund.required_approvals: must be a whole number of 1 or more, not "99999999999999999999"`},
		{"approvals quoted", "tenants: {acme: {actions: {refund: {required_approvals: \"2\"}}}}",
			`policy.yaml:1: tenants.acme.actions.refund.required_approvals: must be a whole number of 1 or more, not "2"`},
		{"a boolean as yes", "tenants:\n  acme:\n    actions:\n      refund:\n        require_approval: yes\n",
			`policy.yaml:5: tenants.acme.actions.refund.require_approval: must be true or false, not "yes"`},
		{"a boolean left empty", "tenants:\n  acme:\n    actions:\n      refund:\n        forbid_self_approval:\n",
			`policy.yaml:5: tenants.acme.actions.refund.forbid_self_approval: must be true or false, not nothing`},
		{"a misspelt rule key", "tenants:\n  acme:\n    actions:\n      refund:\n        require_approval: true\n        max_amout: 500\n",
			`policy.yaml:6: tenants.acme.actions.refund: unknown key "max_amout"; a rule's keys are require_approval, required_approvals, forbid_self_approval, max_amount, currency, approvers`},
		{"a misspelt tenant key", "tenants:\n  acme:\n    action:\n      refund: {}\n",
			`policy.yaml:3: tenants.acme: unknown key "action"; a tenant holds only actions:`},
		{"a misspelt top key", "tenant:\n  acme: {}\n",
			`policy.yaml:1: unknown key "tenant"; a policy file holds only tenants:, mcp: and people:`},
		{"a second top key", "tenants: {}\nperson: {}\n",
			`policy.yaml:2: unknown key "person"; a policy file holds only tenants:, mcp: and people:`},
		{"people without tenants", "people: {kevin: [slack:U0KEV]}\n",
			`policy.yaml:1: tenants: is missing (write tenants: {} for none)`},
		{"a person as one identity", "tenants: {}\npeople:\n  kevin: slack:U0KEV\n",
			`policy.yaml:3: people.kevin: must be a list of identities such as [slack:U0KEV, discord:333333333333333333], not "slack:U0KEV"`},
		{"a person with no identities", "tenants: {}\npeople:\n  kevin: []\n",
			`policy.yaml:3: people.kevin: must be a list of identities such as [slack:U0KEV, discord:333333333333333333], not a list`},
		{"a person's bad name", "tenants: {}\npeople:\n  kev in: [slack:U0KEV]\n",
			`policy.yaml:3: people: "kev in" is not a person's name: 1 to 64 letters, digits, '-' or '_'`},
		{"a person's bad identity", "tenants: {}\npeople:\n  kevin: [slack:U0KEV, U0KEV2]\n",
			`policy.yaml:3: people.kevin[1]: "U0KEV2" is not an identity such as slack:U0KEV, discord:333333333333333333, console:kevin or cli:kevin`},
		{"an identity of two people", "tenants: {}\npeople:\n  kevin: [slack:U0KEV]\n  kev:\n    - discord:3\n    - slack:U0KEV\n",
			`policy.yaml:6: people.kev[1]: slack:U0KEV is linked to kevin already; an identity belongs to one person`},
		{"an identity listed twice", "tenants: {}\npeople:\n  kevin: [slack:U0KEV, slack:U0KEV]\n",
			`policy.yaml:3: people.kevin[1]: slack:U0KEV is listed twice`},
		{"a person given twice", "tenants: {}\npeople:\n  kevin: [slack:U0KEV]\n  kevin: [discord:3]\n",
			`policy.yaml:4: people: "kevin" is given twice (first at line 3)`},
		{"an mcp key misspelt", "tenants: {}\nmcp:\n  auto_alow: [Read]\n",
			`policy.yaml:3: mcp: unknown key "auto_alow"; mcp: holds only auto_allow:`},
		{"an auto_allow entry not a tool", "tenants: {}\nmcp:\n  auto_allow: [Read, \"Bash(git status\"]\n",
			`policy.yaml:3: mcp.auto_allow[1]: "Bash(git status" is not a tool (Read) or a tool with its input (Bash(git status))`},
		{"max_amount negative", "tenants:\n  acme:\n    actions:\n      refund: {max_amount: -5, currency: USD}\n",
			`policy.yaml:4: tenants.acme.actions.refund.max_amount: must be a number of 0 or more, not "-5"`},
		{"max_amount infinite", "tenants:\n  acme:\n    actions:\n      refund: {max_amount: .inf, currency: USD}\n",
			`policy.yaml:4: tenants.acme.actions.refund.max_amount: must be a finite number of 0 or more, not ".inf"`},
		{"max_amount not a number", "tenants:\n  acme:\n    actions:\n      refund: {max_amount: .nan, currency: USD}\n",
			`policy.yaml:4: tenants.acme.actions.refund.max_amount: must be a finite number of 0 or more, not ".nan"`},
		{"max_amount with a sign", "tenants: {acme: {actions: {refund: {max_amount: 500 USD, currency: USD}}}}",
			`policy.yaml:1: tenants.acme.actions.refund.max_amount: must be a number of 0 or more, not "500 USD"`},
		{"max_amount without currency", "tenants:\n  acme:\n    actions:\n      refund:\n        max_amount: 500\n",
			`policy.yaml:5: tenants.acme.actions.refund: max_amount needs currency, a 3-letter ISO 4217 code such as USD`},
		{"currency without max_amount", "tenants:\n  acme:\n    actions:\n      refund:\n        require_approval: true\n        currency: USD\n",
			`policy.yaml:6: tenants.acme.actions.refund.currency: is the currency of max_amount, which is not set`},
		{"currency in small letters", "tenants:\n  acme:\n    actions:\n      refund: {max_amount: 5, currency: usd}\n",
			`policy.yaml:4: tenants.acme.actions.refund.currency: must be a 3-letter ISO 4217 code in capitals such as USD, not "usd"`},
		{"currency a symbol", "tenants:\n  acme:\n    actions:\n      refund: {max_amount: 5, currency: $}\n",
			`policy.yaml:4: tenants.acme.actions.refund.currency: must be a 3-letter ISO 4217 code in capitals such as USD, not "$"`},
		{"approvers a reader", "tenants:\n  acme:\n    actions:\n      refund:\n        approvers:\n          - admin\n          - reader\n",
			`policy.yaml:7: tenants.acme.actions.refund.approvers[1]: "reader" is neither a role (owner, admin, operator) nor an identity such as slack:U0FIN`},
		{"approvers a bad identity", "tenants: {acme: {actions: {refund: {approvers: ['email:a@b.c']}}}}",
			`policy.yaml:1: tenants.acme.actions.refund.approvers[0]: "email:a@b.c" is neither a role (owner, admin, operator) nor an identity such as slack:U0FIN`},
		{"approvers scoped to a tenant", "tenants: {acme: {actions: {refund: {approvers: ['acme/slack:U0FIN']}}}}",
			`policy.yaml:1: tenants.acme.actions.refund.approvers[0]: "acme/slack:U0FIN" is neither a role (owner, admin, operator) nor an identity such as slack:U0FIN`},
		{"approvers one text", "tenants:\n  acme:\n    actions:\n      refund: {approvers: admin}\n",
			`policy.yaml:4: tenants.acme.actions.refund.approvers: must be a list of roles (owner, admin, operator) or identities (such as slack:U0FIN), not "admin"`},
		{"approvers empty", "tenants:\n  acme:\n    actions:\n      refund: {approvers: []}\n",
			`policy.yaml:4: tenants.acme.actions.refund.approvers: must name at least one role or identity; leave it out to let whoever may answer approve`},
		{"approvers nested", "tenants:\n  acme:\n    actions:\n      refund: {approvers: [[admin]]}\n",
			`policy.yaml:4: tenants.acme.actions.refund.approvers[0]: a list is neither a role (owner, admin, operator) nor an identity such as slack:U0FIN`},
		{"a tenant name with a space", "tenants:\n  \"ac me\": {actions: {}}\n",
			`policy.yaml:2: tenants: "ac me" is not a tenant name: 1 to 64 letters, digits, '-' or '_'`},
		{"an action name with a space", "tenants:\n  acme:\n    actions:\n      \"billing refund\": {}\n",
			`policy.yaml:4: tenants.acme.actions: "billing refund" is not a tool's name: use letters, digits and _ . : / -, starting with a letter or digit`},
		{"a rule given twice", "tenants:\n  acme:\n    actions:\n      refund: {require_approval: true}\n      refund: {}\n",
			`policy.yaml:5: tenants.acme.actions: "refund" is given twice (first at line 4)`},
		{"a tenant given twice", "tenants:\n  acme: {actions: {}}\n  acme: {actions: {}}\n",
			`policy.yaml:3: tenants: "acme" is given twice (first at line 2)`},
		{"a key given twice", "tenants:\n  acme:\n    actions:\n      refund:\n        require_approval: true\n        require_approval: false\n",
			`policy.yaml:6: tenants.acme.actions.refund: "require_approval" is given twice (first at line 5)`},
		{"a rule left empty", "tenants:\n  acme:\n    actions:\n      refund:\n",
			`policy.yaml:4: tenants.acme.actions.refund: must be a mapping such as {require_approval: true}, not nothing`},
		{"a rule as a word", "tenants:\n  acme:\n    actions:\n      refund: gated\n",
			`policy.yaml:4: tenants.acme.actions.refund: must be a mapping such as {require_approval: true}, not "gated"`},
		{"actions as a list", "tenants:\n  acme:\n    actions:\n      - refund\n",
			`policy.yaml:4: tenants.acme.actions: must be a mapping of action names, not a list`},
		{"a tenant left empty", "tenants:\n  acme:\n",
			`policy.yaml:2: tenants.acme: must be a mapping with actions:, not nothing`},
		{"a tenant without actions", "tenants:\n  acme: {}\n",
			`policy.yaml:2: tenants.acme: actions: is missing`},
		{"tenants left empty", "tenants:\n",
			`policy.yaml:1: tenants: must be a mapping of tenant names, not nothing`},
		{"tenants missing", "{}\n",
			`policy.yaml:1: tenants: is missing (write tenants: {} for none)`},
		{"a list at the top", "- tenants\n",
			`policy.yaml:1: must be a mapping with tenants:, not a list`},
		{"an empty file", "",
			`policy.yaml:1: the file is empty; a policy file holds tenants: (write tenants: {} for none)`},
		{"only comments", "# nothing yet\n\n",
			`policy.yaml:1: the file is empty; a policy file holds tenants: (write tenants: {} for none)`},
		{"a second document", "tenants: {}\n---\ntenants: {acme: {actions: {}}}\n",
			`policy.yaml:2: a second YAML document (after ---); a policy file is one document`},
		// The YAML library names the line of the block the problem is in
		// (acme:, line 2), not the line of the problem (5).
		{"bad indentation", "tenants:\n  acme:\n    actions:\n      refund: {require_approval: true}\n     delete: {}\n",
			`policy.yaml:2: not valid YAML: did not find expected key`},
		{"a tab for indentation", "tenants:\n\tacme: {}\n",
			`policy.yaml:2: not valid YAML: found character that cannot start any token`},
		{"an alias", "tenants:\n  acme:\n    actions:\n      refund: &strict {require_approval: true}\n      delete: *strict\n",
			`policy.yaml:5: tenants.acme.actions.delete: aliases (*strict) are not allowed in a policy file: write each rule out`},
		{"an unknown alias", "tenants:\n  acme:\n    actions:\n      delete: *strict\n",
			`policy.yaml:4: not valid YAML: unknown anchor 'strict' referenced`},
		{"not UTF-8", "tenants:\n  acme: {actions: {}}\n  \xff: {}\n",
			`policy.yaml:3: the file is not UTF-8 text`},
		{"a control character", "tenants:\n  acme: {actions: {}}\x00\n",
			`policy.yaml:2: control character U+0000; a policy file is text`},
		{"a key that is a list", "tenants:\n  ? [a, b]\n  : {}\n",
			`policy.yaml:2: tenants: a key must be a name, not a list`},
		{"a long value cut", "tenants: {acme: {actions: {refund: {require_approval: " + strings.Repeat("x", 100) + "}}}}",
			`policy.yaml:1: tenants.acme.actions.refund.require_approval: must be true or false, not "` + strings.Repeat("x", 39) + `…"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("policy.yaml", []byte(tc.file))
			if err == nil {
				t.Fatalf("accepted: %+v", p)
			}
			if got := err.Error(); got != tc.want {
				t.Fatalf("error\n got: %s\nwant: %s", got, tc.want)
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.File != "policy.yaml" || pe.Line < 1 {
				t.Fatalf("not an *Error naming the file and a line: %#v", err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(good, []byte(designExample), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Rule("acme", "delete_records"); !ok {
		t.Fatal("the loaded policy lacks delete_records")
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("tenants:\n  acme:\n    actions:\n      refund: {required_approvals: two}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad)
	want := bad + `:4: tenants.acme.actions.refund.required_approvals: must be a whole number of 1 or more, not "two"`
	if err == nil || err.Error() != want {
		t.Fatalf("Load(bad) = %v; want %s", err, want)
	}

	missing := filepath.Join(dir, "missing.yaml")
	_, err = Load(missing)
	if want := missing + ": cannot read: no such file or directory"; err == nil || err.Error() != want {
		t.Fatalf("Load(missing) = %v; want %s", err, want)
	}

	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("tenants: {}\n"+strings.Repeat("#", MaxFileSize)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(big)
	if want := big + ": the file is larger than 1048576 bytes; a policy file is a few lines per action"; err == nil || err.Error() != want {
		t.Fatalf("Load(big) = %v; want %s", err, want)
	}
}

func TestHolderSwapsWhole(t *testing.T) {
	var h Holder
	if h.Load() != nil {
		t.Fatal("a new Holder holds a policy")
	}
	if _, ok := h.Load().Rule("acme", "refund"); ok {
		t.Fatal("no policy gates refund")
	}
	first, _ := Parse("a.yaml", []byte(designExample))
	h.Store(first)
	second, _ := Parse("b.yaml", []byte("tenants: {globex: {actions: {wire: {require_approval: true}}}}"))
	h.Store(second)
	if _, ok := h.Load().Rule("acme", "refund"); ok {
		t.Fatal("the replaced policy's rule is still in force")
	}
	if _, ok := h.Load().Rule("globex", "wire"); !ok {
		t.Fatal("the new policy's rule is not in force")
	}
}

func TestParseMCPAutoAllow(t *testing.T) {
	p, err := Parse("policy.yaml", []byte("tenants: {}\nmcp:\n  auto_allow: [Read, Grep, \"Bash(git status)\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.MCPAutoAllow(); !reflect.DeepEqual(got, []string{"Read", "Grep", "Bash(git status)"}) {
		t.Errorf("MCPAutoAllow = %q", got)
	}
	var none *Policy
	if none.MCPAutoAllow() != nil {
		t.Error("a nil policy allows tools")
	}
}
