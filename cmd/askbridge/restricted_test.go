package main

import (
	"context"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/config"
)

// TestCLIRestrictedQuestion checks list and show give a restricted
// question's content to its answerer only: an operator and a reader learn
// that it waits and for whom, and the operator that they may decline it.
func TestCLIRestrictedQuestion(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Operators, c.Readers = []string{"cli:kevin"}, []string{"cli:rita"} })
	asker, _, askErr := testCLI(s, "cli:agent")
	if code := asker.ask(context.Background(), []string{"--tenant", "acme", "--job", "job-rs", "--id", "q-rs",
		"--answerer", "cli:ana", "--visibility", "restricted", "--no-wait", "Which salary band should the offer use?"}); code != exitOK {
		t.Fatalf("ask exit %d: %s", code, askErr)
	}
	ana, anaOut, _ := testCLI(s, "cli:ana")
	waitPending(t, ana, "job-rs", "q-rs")
	if code := ana.show(context.Background(), []string{"job-rs/q-rs"}); code != exitOK || !strings.Contains(anaOut.String(), "Which salary band") {
		t.Fatalf("answerer's show (exit %d):\n%s", code, anaOut)
	}
	for _, c := range []struct{ who, may string }{{"cli:kevin", "You may: decline"}, {"cli:rita", "You may: nothing"}} {
		cl, out, errOut := testCLI(s, c.who)
		if code := cl.list(context.Background(), []string{"--tenant", "acme"}); code != exitOK {
			t.Fatalf("%s list exit %d: %s", c.who, code, errOut)
		}
		if got := out.String(); strings.Contains(got, "salary") || !strings.Contains(got, "(restricted: for cli:ana and admins)") {
			t.Errorf("%s list:\n%s", c.who, got)
		}
		out.Reset()
		if code := cl.show(context.Background(), []string{"job-rs/q-rs"}); code != exitOK {
			t.Fatalf("%s show exit %d: %s", c.who, code, errOut)
		}
		shown := strings.Join(strings.Fields(out.String()), " ")
		if strings.Contains(shown, "salary") || !strings.Contains(shown, "Restricted to: cli:ana and admins") || !strings.Contains(shown, c.may) {
			t.Errorf("%s show:\n%s", c.who, out)
		}
	}
}
