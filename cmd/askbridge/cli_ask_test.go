package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestCLIAskNoWaitWaitsForTheIntake: ask --no-wait returns once the
// runtime has recorded the question (it waits, exit 0, its ids printed)
// or refused it (exit 1 naming why: a person nobody names, an amount
// over the policy's limit), never exit 0 for a question that exists
// nowhere.
func TestCLIAskNoWaitWaitsForTheIntake(t *testing.T) {
	t.Parallel()
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	rule := "tenants:\n  acme:\n    actions:\n      refund: {require_approval: true, max_amount: 500, currency: USD}\n"
	if err := os.WriteFile(policyFile, []byte(rule), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := startTestService(t, func(c *config.Config) {
		c.Operators, c.PeopleList, c.Policy = []string{"cli:kevin"}, "ana=cli:ana", policyFile
	})
	ask := func(args ...string) (int, string, string) {
		t.Helper()
		c, out, errOut := testCLI(s, "cli:agent")
		code := c.ask(context.Background(), append([]string{"--tenant", "acme", "--no-wait"}, args...))
		return code, out.String(), errOut.String()
	}
	kevin, _, _ := testCLI(s, "cli:kevin")
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"recorded", []string{"--job", "job-nw", "--id", "q-ok", "--answerer", "person:ana", "Which band?"}, exitOK, "acme job-nw q-ok\n", ""},
		// The stream drops the copy of a question asked before; the record shows it waiting.
		{"asked again", []string{"--job", "job-nw", "--id", "q-ok", "--answerer", "person:ana", "Which band?"}, exitOK, "acme job-nw q-ok\n", ""},
		{"an unknown person", []string{"--job", "job-nw", "--id", "q-anna", "--answerer", "person:anna", "Which band?"}, exitError, "",
			"askbridge: The question was refused: answerers[0]: person:anna is not a person: ASK_PEOPLE and the policy file's people: name ana.\n"},
		{"over the limit", []string{"--job", "job-nw", "--id", "q-big", "--proposal", "pr-big", "--action", "refund", "--summary", "Refund $900",
			"--amount", "900", "--currency", "USD", "Approve this refund?"}, exitError, "",
			"askbridge: The question was refused: proposal.amount: 900 USD is above the policy's limit for refund: max_amount 500 USD.\n"},
	} {
		code, out, errOut := ask(c.args...)
		if code != c.code || out != c.stdout || errOut != c.stderr {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d, %q, %q", c.name, code, out, errOut, c.code, c.stdout, c.stderr)
		}
	}
	// Recorded means it waits now: no polling needed to see it.
	nc, _, err := kevin.connect("")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if v, _, err := kevin.lookup(nc, "acme", "job-nw", "q-ok"); err != nil || v.State != bridge.StatePending {
		t.Fatalf("after ask --no-wait: %+v, %v", v, err)
	}
	for _, q := range []string{"q-anna", "q-big"} {
		if _, _, err := kevin.lookup(nc, "acme", "job-nw", q); err == nil || err.Error() != bridge.NoQuestionShown(q) {
			t.Errorf("refused %s is recorded: %v", q, err)
		}
	}
}

// TestCLIAskStoppedSaysHowToWaitAgain: Ctrl-C of a waiting ask says the
// question still waits and prints the await command, which then waits
// for the outcome as ask would have.
func TestCLIAskStoppedSaysHowToWaitAgain(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Operators, c.Admins = []string{"cli:kevin"}, []string{"cli:ana"} })
	kevin, kevinOut, kevinErr := testCLI(s, "cli:kevin")
	asker, _, askErr := testCLI(s, "cli:agent")
	ctx, interrupt := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- asker.ask(ctx, []string{"--tenant", "acme", "--job", "job-i", "--id", "q-i", "--choice", "red", "--choice", "blue", "Which colour?"})
	}()
	waitPending(t, kevin, "job-i", "q-i")
	interrupt()
	select {
	case code := <-done:
		want := "asked acme/job-i/q-i; waiting for an answer...\n\n" +
			"askbridge: stopped waiting; question q-i still waits for an answer until its deadline.\n" +
			"Wait for it again with: askbridge await --tenant acme job-i q-i\n"
		if code != exitError || askErr.String() != want {
			t.Fatalf("interrupted ask: exit %d, stderr %q; want %q", code, askErr.String(), want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ask did not stop")
	}

	// await, without --tenant: it finds the question as answer does.
	waiter, waitOut, _ := testCLI(s, "cli:agent")
	waitErr := &testenv.LockedBuffer{}
	waiter.stderr = waitErr
	done = make(chan int, 1)
	go func() { done <- waiter.await(context.Background(), []string{"job-i", "q-i"}) }()
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		if !strings.Contains(waitErr.String(), "waiting for acme/job-i/q-i...") {
			return errors.New("await has not started waiting")
		}
		return nil
	})
	if code := kevin.answer(context.Background(), []string{"job-i", "q-i", "blue"}); code != exitOK {
		t.Fatalf("answer: exit %d: %s %s", code, kevinOut, kevinErr)
	}
	select {
	case code := <-done:
		if code != exitOK || waitOut.String() != "The answer: blue\n" {
			t.Fatalf("await: exit %d, stdout %q, stderr %q", code, waitOut.String(), waitErr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("await got no outcome")
	}
	// Awaiting a question that does not exist says so at once.
	nobody, _, nobodyErr := testCLI(s, "cli:agent")
	if code := nobody.await(context.Background(), []string{"job-i", "q-none"}); code != exitError ||
		nobodyErr.String() != "askbridge: There is no question q-none that you can see.\n" {
		t.Fatalf("await of no question: exit %d, %q", code, nobodyErr.String())
	}
}

// TestCLIShowTakesJobAndQuestion: show takes JOB QUESTION as answer,
// decline and cancel do (JOB/QUESTION still), and says what each field
// takes: whole numbers, bounds, labels, date and time. cancel finds the
// tenant too.
func TestCLIShowTakesJobAndQuestion(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Operators, c.Admins = []string{"cli:kevin"}, []string{"cli:ana"} })
	one, nine, half := 1.0, 9.0, 0.5
	q := &bridge.Question{Tenant: "acme", JobID: "job-s", QuestionID: "q-s", TaskVersion: 1, Question: "How should I print it?",
		Fields: []bridge.Field{
			{Name: "copies", Kind: bridge.FieldNumber, Integer: true, Min: &one, Max: &nine, Required: true, Label: "Copies to print"},
			{Name: "scale", Kind: bridge.FieldNumber, Min: &half},
			{Name: "at", Kind: bridge.FieldDate, DateTime: true},
			{Name: "note", Kind: bridge.FieldText, MaxLength: 80},
		}}
	ch := askAsync(t, agentFor(t, s), q)
	kevin, out, errOut := testCLI(s, "cli:kevin")
	waitPending(t, kevin, "job-s", "q-s")
	var shown []string
	for _, args := range [][]string{{"job-s", "q-s"}, {"job-s/q-s"}, {"q-s"}, {"--tenant", "acme", "job-s", "q-s"}} {
		out.Reset()
		if code := kevin.show(context.Background(), args); code != exitOK {
			t.Fatalf("show %v: exit %d: %s", args, code, errOut)
		}
		shown = append(shown, out.String())
	}
	for i, want := range []string{
		"Field copies:  whole number from 1 to 9 (required) — Copies to print\n",
		"Field scale:   number of at least 0.5\n",
		"Field at:      date and time\n",
		"Field note:    text of at most 80 characters\n",
	} {
		if !strings.Contains(shown[0], want) {
			t.Errorf("show lacks line %d %q:\n%s", i, want, shown[0])
		}
	}
	for i, s := range shown[1:] {
		if s != shown[0] {
			t.Errorf("show %d printed\n%s\nnot as JOB QUESTION did:\n%s", i+1, s, shown[0])
		}
	}
	ana, anaOut, anaErr := testCLI(s, "cli:ana")
	if code := ana.cancel(context.Background(), []string{"job-s", "q-s", "--reason", "printed by hand"}); code != exitOK ||
		anaOut.String() != "Cancelled: 1 question ended.\n" {
		t.Fatalf("cancel without --tenant: exit %d, %q %q", code, anaOut.String(), anaErr.String())
	}
	if res := waitOutcome(t, ch); res.Outcome != bridge.OutcomeCanceled {
		t.Fatalf("outcome %+v", res)
	}
}

// TestQuestionWithAnUnknownKeyIsRefused: a misspelt key is not dropped
// (the question would become free text): the runtime refuses the
// question, outcome invalid, naming the key and the one meant.
func TestQuestionWithAnUnknownKeyIsRefused(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Operators = []string{"cli:kevin"} })
	body := `{"tenant":"acme","job_id":"job-k","question_id":"q-k","task_version":1,"question":"Which colour?","choises":["red","blue"]}`
	if err := bridge.PublishRaw(context.Background(), s.nats.JS, bridge.QuestionSubject("acme", "job-k"), "q-k", []byte(body)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := agentFor(t, s).AwaitVersion(ctx, "acme", "job-k", "q-k", 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := `The question was refused: "choises" is not a key of a question: did you mean "choices"?`; res.Outcome != bridge.OutcomeInvalid ||
		!strings.HasPrefix(res.Text, want) {
		t.Fatalf("outcome %s %q; want invalid, %q", res.Outcome, res.Text, want)
	}
}
