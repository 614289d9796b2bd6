package runtime

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge/principal"
)

// FuzzStampBody feeds the intake hostile attempts, cancels and API
// requests: by, as, roles, reply_to, tenants and owners of the body's
// choosing, keys in any case, duplicated keys, values of the wrong type. Whatever comes through says what the
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
	f.Add(true, "answer", "acme.job-1", []byte(`{"By":"cli:root","Roles":["admin"],"BY_NAME":"root"}`))
	f.Add(true, "api", "list", []byte(`{"roleſ":["owner"],"AS":"cli:root"}`))
	f.Add(false, "api", "show", []byte(`{"Tenant":"other","As":"cli:root","ROLES":["admin"]}`))
	f.Add(false, "question", "acme.job-1", []byte(`{"Owner":"slack:U0X","OWNER":"slack:U0Y"}`))
	f.Add(false, "cancel", "acme.job-1", []byte(`{"by":"slack:U0ADMIN","roles":["admin"],"reply_to":{"slack":"C0VICTIM"}}`))
	f.Add(false, "cancel", "acme.job-1", []byte(`{"BY":"slack:U0ADMIN","Roles":["owner"],"Reply_To":{"slack":"C0X"}}`))
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
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(out, &obj); err != nil && what != "gate" && !slices.Contains(principal.AgentPublishes, what) {
			t.Fatalf("stamped body is not a JSON object: %q", out)
		}
		// Read as the runtime reads it (encoding/json, which matches keys
		// to fields whatever their case); members of the wrong type are
		// left out, as they are refused there.
		var got stamped
		_ = json.Unmarshal(out, &got)
		switch {
		case asPerson && what == "answer":
			if got.By != "cli:alice" || got.Via != "cli" || got.ByName != "" || got.Roles != nil {
				t.Fatalf("a person's attempt says %s", out)
			}
		case asPerson && what == "api":
			if got.As != "cli:alice" || got.Roles != nil {
				t.Fatalf("a person's request says %s", out)
			}
		case asPerson:
			t.Fatalf("a person published %s: %s", what, out)
		case what == "api":
			if got.Tenant != "acme" || got.As != "" || got.Roles != nil {
				t.Fatalf("an agent's request says %s", out)
			}
		case what == "question":
			if got.Owner != "slack:U0OWNER" {
				t.Fatalf("an agent's question says %s", out)
			}
		case what == "cancel":
			if got.By != "" || got.Roles != nil || got.ReplyTo != nil {
				t.Fatalf("an agent's cancel says %s", out)
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

// stamped is what the runtime reads of a stamped body, the fields a
// body's claim could set.
type stamped struct {
	By     string   `json:"by"`
	ByName string   `json:"by_name"`
	Via    string   `json:"via"`
	As     string   `json:"as"`
	Roles  []string `json:"roles"`
	Tenant string   `json:"tenant"`
	Owner  string   `json:"owner"`
	// ReplyTo is where a person's refused cancel is told.
	ReplyTo map[string]string `json:"reply_to"`
}
