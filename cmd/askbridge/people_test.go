package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestServeRefusesBadPeopleWithExitCode2: ASK_PEOPLE is checked at start
// in the user's words, and so is a policy file whose people: links again
// what ASK_PEOPLE links.
func TestServeRefusesBadPeopleWithExitCode2(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	writeFile(t, pol, "tenants: {}\npeople:\n  kev: [slack:U0KEV]\n")
	t.Setenv("ASK_DATA_DIR", filepath.Join(dir, "data"))
	t.Setenv("ASK_HTTP_ADDR", "127.0.0.1:0")
	t.Setenv("ASK_NATS_LISTEN", "127.0.0.1:0")
	for _, tc := range []struct{ people, policy, want string }{
		{"kevin=slack:U0KEV|U0KEV2", "",
			`askbridge: ASK_PEOPLE: kevin: "U0KEV2" must be slack:<user>, discord:<user>, console:<user> or cli:<user>` + "\n"},
		{"kevin=slack:U0KEV|discord:333333333333333333", pol,
			"askbridge: " + pol + ": people: slack:U0KEV is linked to both kev and kevin; an identity belongs to one person\n"},
	} {
		t.Setenv("ASK_PEOPLE", tc.people)
		t.Setenv("ASK_POLICY", tc.policy)
		var stderr bytes.Buffer
		code := run([]string{"serve"}, io.Discard, &stderr)
		if code != exitConfig || stderr.String() != tc.want {
			t.Errorf("exit %d, stderr %q; want exit %d, %q", code, stderr.String(), exitConfig, tc.want)
		}
	}
}

// TestPeopleReload: the policy file's people: is re-read on SIGHUP with
// the rest of it; one that conflicts with ASK_PEOPLE is logged and the
// policy in force kept.
func TestPeopleReload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, "tenants: {}\npeople:\n  ana: [slack:U0ANA]\n")
	s, logs := startPolicyService(t, map[string]string{"ASK_POLICY": path, "ASK_PEOPLE": "kevin=slack:U0KEV"})
	if got := s.policy.Load().People["ana"]; !slices.Equal(got, []string{"slack:U0ANA"}) {
		t.Fatalf("ana at start: %v", got)
	}
	writeFile(t, path, "tenants: {}\npeople:\n  ana: [slack:U0ANA, \"discord:555555555555555555\"]\n")
	s.reloadPolicy()
	inForce := s.policy.Load()
	if got := inForce.People["ana"]; !slices.Equal(got, []string{"slack:U0ANA", "discord:555555555555555555"}) {
		t.Fatalf("ana after the reload: %v", got)
	}
	writeFile(t, path, "tenants: {}\npeople:\n  kevin: [discord:3]\n")
	s.reloadPolicy()
	want := fmt.Sprintf(`level=ERROR msg="policy not reloaded; the policy in force is kept" path=%s line=0 err="%s: people: person kevin is given both in ASK_PEOPLE and in the policy file's people:; keep one"`, path, path)
	if !strings.Contains(logs.String(), want) {
		t.Errorf("the conflict is not logged as\n%s\nlogs:\n%s", want, logs)
	}
	if s.policy.Load() != inForce {
		t.Error("a conflicting file replaced the policy in force")
	}
}
