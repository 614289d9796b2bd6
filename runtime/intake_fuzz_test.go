package runtime

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge/principal"
)

// FuzzStampBody feeds the intake hostile attempts and API requests: by,
// as, roles, tenants and owners of the body's choosing, duplicated keys,
// values of the wrong type. Whatever comes through says what the
// credential allows and nothing the body claimed.
func FuzzStampBody(f *testing.F) {
	f.Add(true, "answer", "acme.job-1", []byte(`{"by":"slack:U0ADMIN","roles":["admin"],"by_name":"root","action":"approve"}`))
	f.Add(true, "api", "list", []byte(`{"as":"cli:root","roles":["owner"]}`))
	f.Add(true, "api", "show", []byte(`{"as":"cli:root","as":"cli:x","roles":"admin"}`))
	f.Add(false, "api", "show", []byte(`{"tenant":"other","question_id":"q-1","as":"cli:root"}`))
	f.Add(false, "api", "list", []byte(`{}`))
	f.Add(false, "question", "acme.job-1", []byte(`{"owner":"slack:U0OTHER","owner":"slack:U0X"}`))
	f.Add(false, "question", "other.job-1", []byte(`{"tenant":"other"}`))
	f.Add(false, "answer", "acme.job-1", []byte(`{"by":"cli:x"}`))
	f.Add(true, "answer", "acme.job-1", []byte(`[1,2]`))
	f.Add(true, "answer", "acme.job-1", []byte(`{"by":5,"roles":{"a":1}}`))
	person := &principal.Principal{Kind: principal.KindPerson, Name: "cli:alice"}
	agent := &principal.Principal{Kind: principal.KindAgent, Name: "bot", Tenant: "acme", ActsFor: "slack:U0OWNER"}
	f.Fuzz(func(t *testing.T, asPerson bool, what, rest string, body []byte) {
		p := agent
		if asPerson {
			p = person
		}
		out, err := stampBody(p, what, rest, body)
		if err != nil {
			return
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("stamped body is not a JSON object: %q", out)
		}
		str := func(k string) string {
			var s string
			_ = json.Unmarshal(got[k], &s)
			return s
		}
		if _, ok := got["roles"]; ok && (asPerson || what == "api") {
			t.Fatalf("roles survived: %s", out)
		}
		switch {
		case asPerson && what == "answer":
			if str("by") != "cli:alice" || str("via") != "cli" || got["by_name"] != nil {
				t.Fatalf("a person's attempt says %s", out)
			}
		case asPerson && what == "api":
			if str("as") != "cli:alice" {
				t.Fatalf("a person's request says %s", out)
			}
		case asPerson:
			t.Fatalf("a person published %s: %s", what, out)
		case what == "api":
			if str("tenant") != "acme" || got["as"] != nil {
				t.Fatalf("an agent's request says %s", out)
			}
		case what == "question":
			if str("owner") != "slack:U0OWNER" {
				t.Fatalf("an agent's question says %s", out)
			}
		}
		if !asPerson && what != "api" {
			if tenant, _, _ := strings.Cut(rest, "."); tenant != "acme" {
				t.Fatalf("an agent of acme published to %s", rest)
			}
			if what != "gate" && !slices.Contains(principal.AgentPublishes, what) {
				t.Fatalf("an agent published %s", what)
			}
		}
	})
}
