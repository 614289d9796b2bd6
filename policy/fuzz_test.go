package policy

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/askbridge/askbridge/bridge"
)

// FuzzParse feeds Parse arbitrary files (seeds in testdata/fuzz/FuzzParse):
// it never panics; a refusal is one line naming the file; an accepted file
// holds only what the checks allow, and written back out it parses to the
// same policy.
func FuzzParse(f *testing.F) {
	f.Add([]byte(designExample))
	f.Add([]byte(designExample + "people:\n  kevin: [slack:U0KEV, \"discord:333333333333333333\"]\n  ana: [slack:U0ANA]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("policy.yaml", data)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.File != "policy.yaml" {
				t.Fatalf("not an *Error naming the file: %#v", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "policy.yaml:") || strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("not one line naming the file: %q", msg)
			}
			return
		}
		checkPolicy(t, p)
		out, err := yaml.Marshal(p)
		if err != nil {
			t.Fatalf("marshal %+v: %v", p, err)
		}
		again, err := Parse("again.yaml", out)
		if err != nil {
			t.Fatalf("written back out, the policy is refused: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(p, again) {
			t.Fatalf("round trip changed the policy:\n%+v\n%+v", p, again)
		}
	})
}

// checkPolicy asserts what Parse promises of an accepted file.
func checkPolicy(t *testing.T, p *Policy) {
	t.Helper()
	if p == nil || p.Tenants == nil {
		t.Fatal("accepted without a tenants mapping")
	}
	if err := p.People.Check(); err != nil || (p.People != nil && len(p.People) == 0) {
		t.Fatalf("people %v accepted: %v", p.People, err)
	}
	for tenant, tn := range p.Tenants {
		if !bridge.ValidToken(tenant) {
			t.Fatalf("tenant %q accepted", tenant)
		}
		for action, r := range tn.Actions {
			if bridge.CheckTool("action", action) != nil {
				t.Fatalf("action %q accepted", action)
			}
			if r.RequiredApprovals < 0 {
				t.Fatalf("%s/%s: required_approvals %d", tenant, action, r.RequiredApprovals)
			}
			if (r.MaxAmount == nil) != (r.Currency == "") {
				t.Fatalf("%s/%s: max_amount %v with currency %q", tenant, action, r.MaxAmount, r.Currency)
			}
			if m := r.MaxAmount; m != nil && (math.IsInf(*m, 0) || math.IsNaN(*m) || *m < 0) {
				t.Fatalf("%s/%s: max_amount %v", tenant, action, *m)
			}
			if r.Approvers != nil && len(r.Approvers) == 0 {
				t.Fatalf("%s/%s: an empty approvers list", tenant, action)
			}
			for _, a := range r.Approvers {
				if !approver(a) {
					t.Fatalf("%s/%s: approver %q", tenant, action, a)
				}
			}
		}
	}
}
