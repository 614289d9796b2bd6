package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/config"
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
	s, logs := startPolicyService(t, func(c *config.Config) { c.Policy, c.PeopleList = path, "kevin=slack:U0KEV" })
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

// TestCLIAsksAPerson: askbridge ask --answerer person:ana asks every
// identity ASK_PEOPLE links to ana; a restricted question is hers to read
// from any of them, and a person nobody links is refused.
func TestCLIAsksAPerson(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Operators, c.PeopleList = []string{"cli:kevin"}, "ana=slack:U0ANA|cli:ana" })
	asker, _, askErr := testCLI(s, "cli:agent")
	if code := asker.ask(context.Background(), []string{"--tenant", "acme", "--job", "job-pp", "--id", "q-pp",
		"--answerer", "person:ana", "--visibility", "restricted", "--no-wait", "Which salary band should the offer use?"}); code != exitOK {
		t.Fatalf("ask exit %d: %s", code, askErr)
	}
	ana, anaOut, _ := testCLI(s, "cli:ana")
	waitPending(t, ana, "job-pp", "q-pp")
	if code := ana.show(context.Background(), []string{"job-pp/q-pp"}); code != exitOK || !strings.Contains(anaOut.String(), "Which salary band") {
		t.Fatalf("ana's show (exit %d):\n%s", code, anaOut)
	}
	kevin, kevinOut, _ := testCLI(s, "cli:kevin")
	if code := kevin.list(context.Background(), []string{"--tenant", "acme"}); code != exitOK ||
		strings.Contains(kevinOut.String(), "salary") || !strings.Contains(kevinOut.String(), "(restricted: for person:ana and admins)") {
		t.Errorf("the operator's list (exit %d):\n%s", code, kevinOut)
	}
	bad, badOut, badErr := testCLI(s, "cli:agent")
	code := bad.ask(context.Background(), []string{"--tenant", "acme", "--job", "job-pq", "--answerer", "person:anna", "Which one?"})
	if said := badOut.String() + badErr.String(); code != exitError ||
		!strings.Contains(said, "answerers[0]: person:anna is not a person: ASK_PEOPLE and the policy file's people: name ana.") {
		t.Errorf("asking an unknown person: exit %d, said %q", code, said)
	}
}

// TestPolicyCheckPeople: askbridge policy check counts the file's people
// and refuses, as serve would, people: that links again what ASK_PEOPLE
// links. It runs alone: it sets the process environment.
func TestPolicyCheckPeople(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, file, "tenants: {}\npeople:\n  kevin: [slack:U0KEV, \"discord:333333333333333333\"]\n  ana: [slack:U0ANA]\n")
	for _, tc := range []struct {
		people, stdout, stderr string
		code                   int
	}{
		{"", file + ": ok (0 tenants, 0 actions, 2 people)\n", "", exitOK},
		{"kev=slack:U0KEV", "", file + ": people: slack:U0KEV is linked to both kev and kevin; an identity belongs to one person\n", exitConfig},
		{"kev=U0KEV", "", `ASK_PEOPLE: kev: "U0KEV" must be slack:<user>, discord:<user>, console:<user> or cli:<user>` + "\n", exitConfig},
	} {
		t.Setenv("ASK_PEOPLE", tc.people)
		var stdout, stderr bytes.Buffer
		code := run([]string{"policy", "check", file}, &stdout, &stderr)
		if code != tc.code || stdout.String() != tc.stdout || stderr.String() != tc.stderr {
			t.Errorf("ASK_PEOPLE=%s: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.people, code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}
