package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
)

func TestCLICancelStatusRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--status", "retired"}, "reason: a retired question needs a reason: say why it is no longer needed"},
		{[]string{"--status", "implicitly_answered", "--evidence", "blue"},
			"question_id: name the question the person answered: evidence answers one question, not every question of the job"},
		{[]string{"--status", "done"}, `status: must be "retired" or "implicitly_answered", got "done"`},
	} {
		var out, errOut bytes.Buffer
		// No NATS at this address: the cancel is refused before any connection.
		cl := &cli{stdout: &out, stderr: &errOut, identity: "cli:ana", natsURL: "nats://127.0.0.1:1"}
		code := cl.cancel(context.Background(), append([]string{"--tenant", "acme"}, append(c.args, "job-c")...))
		if want := "askbridge: " + c.want + "\n"; code != exitError || errOut.String() != want || out.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %q", c.args, code, out.String(), errOut.String(), want)
		}
	}
}

// An admin tells askbridge a question was answered in conversation: the
// agent reads it, and show's audit keeps the person's words.
func TestCLICancelImplicitlyAnswered(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Admins = []string{"cli:ana"} })
	ag := agentFor(t, s)
	ana, out, errOut := testCLI(s, "cli:ana")
	q := &bridge.Question{Tenant: "acme", JobID: "job-i", QuestionID: "q-1", TaskVersion: 1,
		Question: "Which colour?", Choices: []string{"red", "blue"}}
	ch := askAsync(t, ag, q)
	waitPending(t, ana, "job-i", "q-1")
	if code := ana.cancel(context.Background(), []string{"--tenant", "acme", "--status", "implicitly_answered",
		"--evidence", "blue, as always", "job-i", "q-1"}); code != exitOK || out.String() != "Cancelled: 1 question ended.\n" {
		t.Fatalf("cancel exit %d, printed %q %s", code, out.String(), errOut)
	}
	if res := waitOutcome(t, ch); res.Outcome != bridge.OutcomeCanceled || res.Status != bridge.CancelImplicitlyAnswered ||
		res.Text != "Answered in conversation: “blue, as always”." {
		t.Fatalf("outcome = %+v", res)
	}
	out.Reset()
	if code := ana.show(context.Background(), []string{"--tenant", "acme", "job-i/q-1"}); code != exitOK {
		t.Fatalf("show exit %d: %s", code, errOut)
	}
	if !strings.Contains(out.String(), "pending -> cancelled  cli:ana  Answered in conversation: “blue, as always”.\n") {
		t.Fatalf("show printed:\n%s", out.String())
	}
}
