package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

func TestCLIAnswerAndDeclineResumeTheAgent(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Operators = []string{"cli:kevin"} })
	ag := agentFor(t, s)
	kevin, out, errOut := testCLI(s, "cli:kevin")

	q := &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 1,
		Question: "Which colour?", Choices: []string{"red", "blue"}}
	ch := askAsync(t, ag, q)
	waitPending(t, kevin, "job-1", "q-1")
	if code := kevin.answer(context.Background(), []string{"job-1", "q-1", "blue"}); code != exitOK {
		t.Fatalf("answer exit %d: %s", code, errOut)
	}
	if got := out.String(); got != "Answered: The answer: blue\n" {
		t.Fatalf("answer printed %q", got)
	}
	if res := waitOutcome(t, ch); res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: blue" || res.By != "cli:kevin" || res.Via != "cli" {
		t.Fatalf("outcome = %+v", res)
	}

	q2 := &bridge.Question{Tenant: "acme", JobID: "job-2", QuestionID: "q-1", TaskVersion: 1,
		Question: "Refund the customer?", Choices: []string{"yes", "no"}}
	ch = askAsync(t, ag, q2)
	waitPending(t, kevin, "job-2", "q-1")
	out.Reset()
	if code := kevin.decline(context.Background(), []string{"job-2", "q-1", "--comment", "ask Ana"}); code != exitOK {
		t.Fatalf("decline exit %d: %s", code, errOut)
	}
	if res := waitOutcome(t, ch); res.Outcome != bridge.OutcomeDeclined || res.Text != "cli:kevin declined to answer: ask Ana." {
		t.Fatalf("outcome = %+v", res)
	}
}

// TestCLICancelSaysWhatHappened checks askbridge cancel waits for the
// runtime's decision: a refusal fails with its reason, an applied cancel
// says how many questions it ended.
func TestCLICancelSaysWhatHappened(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Operators, c.Admins = []string{"cli:kevin"}, []string{"cli:ana"} })
	ag := agentFor(t, s)
	kevin, out, errOut := testCLI(s, "cli:kevin")
	q := &bridge.Question{Tenant: "acme", JobID: "job-c", QuestionID: "q-1", TaskVersion: 1,
		Question: "Which colour?", Choices: []string{"red", "blue"}}
	ch := askAsync(t, ag, q)
	waitPending(t, kevin, "job-c", "q-1")
	if code := kevin.cancel(context.Background(), []string{"--tenant", "acme", "job-c", "--reason", "not needed"}); code != exitError {
		t.Fatalf("operator's cancel exit %d, want %d", code, exitError)
	}
	if got := errOut.String(); got != "askbridge: refused: You can't cancel questions: that needs the admin or owner role.\n" || out.Len() != 0 {
		t.Fatalf("operator's cancel printed %q, %q", out.String(), got)
	}
	ana, out, errOut := testCLI(s, "cli:ana")
	if code := ana.cancel(context.Background(), []string{"--tenant", "acme", "job-c", "--reason", "not needed"}); code != exitOK {
		t.Fatalf("admin's cancel exit %d: %s", code, errOut)
	}
	if got := out.String(); got != "Cancelled: 1 question ended.\n" {
		t.Fatalf("admin's cancel printed %q", got)
	}
	if res := waitOutcome(t, ch); res.Outcome != bridge.OutcomeCanceled || res.Text != "The question was cancelled: not needed." {
		t.Fatalf("outcome = %+v", res)
	}
	out.Reset()
	if code := ana.cancel(context.Background(), []string{"--tenant", "acme", "job-c"}); code != exitOK || out.String() != "Cancelled: no question was waiting.\n" {
		t.Fatalf("second cancel exit %d, printed %q %s", code, out.String(), errOut)
	}
}

func TestCLITypedFieldsAndRefusals(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Operators = []string{"cli:kevin"} })
	ag := agentFor(t, s)
	kevin, out, errOut := testCLI(s, "cli:kevin")
	stranger, _, strangerErr := testCLI(s, "cli:mallory")

	one, nine := 1.0, 9.0
	q := &bridge.Question{Tenant: "acme", JobID: "job-t", QuestionID: "q-t", TaskVersion: 3,
		Question: "When should I send the report, and how many copies?",
		Fields:   []bridge.Field{{Name: "on", Kind: "date", Required: true}, {Name: "copies", Kind: "number", Integer: true, Min: &one, Max: &nine}}}
	ch := askAsync(t, ag, q)
	waitPending(t, kevin, "job-t", "q-t")

	if code := kevin.answer(context.Background(), []string{"job-t", "q-t", `{"on":"2026-10-20","copies":12}`}); code != exitError {
		t.Fatalf("answer with copies 12 exit %d", code)
	}
	if got := errOut.String(); got != "askbridge: refused: copies: must be at most 9\n" {
		t.Fatalf("refusal printed %q", got)
	}
	// A stranger cannot even see it, so the CLI cannot propose.
	if code := stranger.answer(context.Background(), []string{"job-t", "q-t", `{"on":"2026-10-20","copies":2}`}); code != exitError {
		t.Fatalf("stranger exit %d", code)
	}
	if got := strangerErr.String(); !strings.Contains(got, "There is no question q-t that you can see.") {
		t.Fatalf("stranger printed %q", got)
	}
	waitPending(t, kevin, "job-t", "q-t")
	if code := kevin.answer(context.Background(), []string{"job-t", "q-t", `{"on":"2026-10-20","copies":2}`}); code != exitOK {
		t.Fatalf("answer exit %d: %s", code, errOut)
	}
	if res := waitOutcome(t, ch); res.Text != `The answer: {"on":"2026-10-20","copies":2}` {
		t.Fatalf("outcome = %+v", res)
	}
	if !strings.Contains(out.String(), "Answered: ") {
		t.Fatalf("answer printed %q", out)
	}
}

func TestCLIAskListShow(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Operators, c.Readers = []string{"cli:kevin"}, []string{"cli:rita"} })
	kevin, out, errOut := testCLI(s, "cli:kevin")

	done := make(chan int, 1)
	asker, askOut, askErr := testCLI(s, "cli:agent")
	go func() {
		done <- asker.ask(context.Background(), []string{"--tenant", "acme", "--job", "job-ask", "--id", "q-cli",
			"--field", "size*:choice:S,M,L", "--field", "copies:number:1..9", "--timeout", "1h", "--answerer", "cli:kevin",
			"--blocks", "send_report", "--allows", "lookup_order", "--allows", "draft_reply", "How many, and what size?"})
	}()
	waitPending(t, kevin, "job-ask", "q-cli")

	if code := kevin.list(context.Background(), []string{"--tenant", "acme"}); code != exitOK {
		t.Fatalf("list exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "TENANT  JOB      QUESTION  VERSION  STATE") ||
		!strings.Contains(lines[1], "job-ask  q-cli") || !strings.HasSuffix(lines[1], "How many, and what size?") {
		t.Fatalf("list printed:\n%s", out)
	}
	// A reader learns that it waits, not what it asks.
	rita, ritaOut, _ := testCLI(s, "cli:rita")
	if code := rita.list(context.Background(), nil); code != exitOK || !strings.Contains(ritaOut.String(), "(you may see only that it waits)") ||
		strings.Contains(ritaOut.String(), "How many") {
		t.Fatalf("reader list (exit %d):\n%s", code, ritaOut)
	}

	out.Reset()
	if code := kevin.show(context.Background(), []string{"job-ask/q-cli"}); code != exitOK {
		t.Fatalf("show exit %d: %s", code, errOut)
	}
	shown := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{"State: pending", "Field size: choice: S, M, L (required)", "You may: answer or decline",
		"Blocks: send_report", "Allows only: lookup_order, draft_reply", "Answerers: cli:kevin", "- -> pending askbridge asked"} {
		if !strings.Contains(shown, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if code := kevin.answer(context.Background(), []string{"job-ask", "q-cli", `{"size":"m","copies":3}`}); code != exitOK {
		t.Fatalf("answer exit %d: %s", code, errOut)
	}
	select {
	case code := <-done:
		if code != exitOK || askOut.String() != "The answer: {\"size\":\"M\",\"copies\":3}\n" {
			t.Fatalf("ask exit %d, printed %q (%s)", code, askOut, askErr)
		}
	case <-time.After(testenv.Patience):
		t.Fatal("ask did not return")
	}
}

// askbridge queue prints a job's pending questions by priority, then age,
// as an aligned table; a reader sees that they wait, not what they ask.
func TestCLIQueue(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Operators, c.Readers = []string{"cli:kevin"}, []string{"cli:rita"} })
	kevin, out, errOut := testCLI(s, "cli:kevin")
	asker, _, askErr := testCLI(s, "cli:agent")
	for _, c := range []struct{ id, priority, text string }{
		{"q-low", "low", "Should the footer name the team?"},
		{"q-block", "", "Which region should the report cover?"},
		{"q-high", "high", "How many copies?"},
	} {
		args := []string{"--tenant", "acme", "--job", "job-q", "--id", c.id, "--no-wait", "--blocks", "send_" + c.id[2:]}
		if c.priority != "" {
			args = append(args, "--priority", c.priority)
		}
		if code := asker.ask(context.Background(), append(args, c.text)); code != exitOK {
			t.Fatalf("ask %s: exit %d: %s", c.id, code, askErr)
		}
		waitPending(t, kevin, "job-q", c.id)
	}
	if code := asker.ask(context.Background(), []string{"--tenant", "acme", "--job", "job-q", "--no-wait", "--priority", "urgent", "Now?"}); code == exitOK {
		t.Fatal("an unknown priority was accepted")
	}
	out.Reset()
	if code := kevin.queue(context.Background(), []string{"job-q"}); code != exitOK {
		t.Fatalf("queue exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"#  QUESTION  PRIORITY  STALENESS  WAITING  BLOCKS      ASKS",
		"1  q-block   blocking  0          ",
		"2  q-high    high      0          ",
		"3  q-low     low       0          ",
	}
	if len(lines) != 4 {
		t.Fatalf("queue printed:\n%s", out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Fatalf("queue line %d = %q, want it to start %q:\n%s", i, lines[i], w, out)
		}
	}
	if !strings.HasSuffix(lines[1], "send_block  Which region should the report cover?") {
		t.Fatalf("top line = %q", lines[1])
	}
	rita, ritaOut, _ := testCLI(s, "cli:rita")
	if code := rita.queue(context.Background(), []string{"acme/job-q"}); code != exitOK || strings.Count(ritaOut.String(), "(you may see only that it waits)") != 3 ||
		strings.Contains(ritaOut.String(), "Which region") {
		t.Fatalf("reader queue (exit %d):\n%s", code, ritaOut)
	}
}

func TestCLIApprovesAndDenies(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Operators = []string{"cli:kevin"} })
	ag := agentFor(t, s)
	kevin, _, errOut := testCLI(s, "cli:kevin")
	for _, c := range []struct{ job, words, want string }{
		{"job-ap", "approve", "The answer: approved"},
		{"job-dn", "deny not on a Friday", "The answer: denied. Reason: not on a Friday."},
	} {
		ch := askAsync(t, ag, &bridge.Question{Tenant: "acme", JobID: c.job, QuestionID: "q-a", TaskVersion: 1, Kind: bridge.KindApproval,
			Question: "May I deploy?", Proposal: &bridge.Proposal{ID: "deploy-7-" + c.job, Action: "deploy", Summary: []string{"Deploy build 7 to production"}}})
		waitPending(t, kevin, c.job, "q-a")
		if code := kevin.answer(context.Background(), append([]string{c.job, "q-a"}, strings.Fields(c.words)...)); code != exitOK {
			t.Fatalf("%s: exit %d: %s", c.words, code, errOut)
		}
		if res := waitOutcome(t, ch); res.Text != c.want {
			t.Fatalf("%s: outcome %+v", c.words, res)
		}
	}
}

func TestCLIAskExitCodes(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Operators = []string{"cli:kevin"} })
	kevin, _, _ := testCLI(s, "cli:kevin")
	asker, askOut, _ := testCLI(s, "cli:agent")

	done := make(chan int, 1)
	go func() {
		done <- asker.ask(context.Background(), []string{"--tenant", "acme", "--job", "job-x", "--id", "q-x", "Anything to add?"})
	}()
	waitPending(t, kevin, "job-x", "q-x")
	kevin.decline(context.Background(), []string{"job-x", "q-x"})
	if code := <-done; code != exitDeclined || askOut.String() != "cli:kevin declined to answer.\n" {
		t.Fatalf("declined: exit %d, %q", code, askOut)
	}

	askOut.Reset()
	if code := asker.ask(context.Background(), []string{"--tenant", "acme", "--job", "job-y", "--timeout", "1s", "Still there?"}); code != exitTimedOut ||
		askOut.String() != "Nobody answered within 0:00:01.\n" {
		t.Fatalf("timed out: exit %d, %q", code, askOut)
	}

	_, _, badErr := testCLI(s, "cli:agent")
	bad := &cli{stdout: io.Discard, stderr: badErr, natsURL: s.natsURL(), natsOpts: []nats.Option{s.nats.Admin()}, identity: "cli:agent"}
	if code := bad.ask(context.Background(), []string{"--job", "job-z", "--choice", "a", "--field", "x:text", "Both?"}); code != exitError ||
		!strings.Contains(badErr.String(), "choices and fields: give one or the other, not both") {
		t.Fatalf("invalid ask: exit %d, %q", code, badErr)
	}
}

func TestParseField(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec string
		want string
		err  string
	}{
		{"copies:number:1..9", `{"name":"copies","kind":"number","min":1,"max":9}`, ""},
		{"on*:date", `{"name":"on","kind":"date","required":true}`, ""},
		{"at:date:time", `{"name":"at","kind":"date","date_time":true}`, ""},
		{"size:choice:S, M,L", `{"name":"size","kind":"choice","options":["S","M","L"]}`, ""},
		{"n:number:..5", `{"name":"n","kind":"number","max":5}`, ""},
		{"nokind", "", `--field "nokind": write name:kind[:options]`},
		{"n:number:1-9", "", "a number's bounds are min..max"},
		{"t:text:x", "", "a text field takes no options"},
		{"copies:int:1..9", `{"name":"copies","kind":"number","min":1,"max":9,"integer":true}`, ""},
		{"copies*:integer", `{"name":"copies","kind":"number","required":true,"integer":true}`, ""},
		{"copies:int:1.5..9", "", `"1.5" is not a whole number: an int field's bounds are whole numbers`},
		{"n:number:x..9", "", `--field "n:number:x..9": "x" is not a number`},
	} {
		f, err := parseField(c.spec)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want %q", c.spec, err, c.err)
			}
			continue
		}
		got, _ := json.Marshal(f)
		if err != nil || string(got) != c.want {
			t.Errorf("%s = %s, %v; want %s", c.spec, got, err, c.want)
		}
	}
}

// TestCLIHidesNATSPasswords checks a NATS URL's password or token never
// reaches the CLI's error text.
func TestCLIHidesNATSPasswords(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"nats://user:s3cretpw@127.0.0.1:1", "nats://s3cretpw@127.0.0.1:1", "nats://127.0.0.1:1,nats://u:s3cretpw@127.0.0.1:2",
		"nats://user:s3cret pw@127.0.0.1:1", "user:s3cretpw@127.0.0.1:1", "s3cretpw@127.0.0.1:1", "nats://127.0.0.1:1, user:s3cretpw@127.0.0.1:2"} {
		var stderr bytes.Buffer
		c := &cli{stdout: io.Discard, stderr: &stderr, identity: "cli:kevin"}
		if code := c.list(context.Background(), []string{"--nats", url}); code != exitError {
			t.Errorf("%s: exit %d", url, code)
		}
		if got := stderr.String(); !strings.Contains(got, "cannot reach NATS at ") || strings.Contains(got, "s3cret") {
			t.Errorf("%s: stderr %q", url, got)
		}
	}
}

func TestReorderKnownFlags(t *testing.T) {
	t.Parallel()
	known := map[string]bool{"tenant": true, "nats": true}
	for _, c := range []struct{ in, want []string }{
		{[]string{"job-1", "q-1", "blue", "--tenant", "acme"}, []string{"--tenant", "acme", "--", "job-1", "q-1", "blue"}},
		{[]string{"job-1", "q-1", "blue", "--tenant=acme"}, []string{"--tenant=acme", "--", "job-1", "q-1", "blue"}},
		{[]string{"-tenant", "acme", "job-1", "q-1", "-5"}, []string{"-tenant", "acme", "--", "job-1", "q-1", "-5"}},
		{[]string{"job-1", "q-1", "--", "--tenant", "acme"}, []string{"--", "job-1", "q-1", "--tenant", "acme"}},
		{[]string{"job-1", "q-1", "--verbose", "yes"}, []string{"--", "job-1", "q-1", "--verbose", "yes"}},
		{[]string{"--tenant", "acme"}, []string{"--tenant", "acme"}},
	} {
		if got := reorder(c.in, known, true); !slices.Equal(got, c.want) {
			t.Errorf("reorder(%q, only valued) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestCLIFlagsAfterArguments checks every tool takes its flags wherever
// they stand: a question followed by its flags is asked with them (not
// with them as part of its text), and show and list read theirs after
// their arguments too; "--" keeps a text that starts with a dash.
func TestCLIFlagsAfterArguments(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Operators = []string{"cli:kevin"} })
	kevin, out, errOut := testCLI(s, "cli:kevin")
	ctx := context.Background()

	if code := kevin.ask(ctx, []string{"Which colour?", "--tenant", "acme", "--job", "job-o", "--id", "q-o",
		"--choice", "red", "--choice=blue", "--no-wait"}); code != exitOK || out.String() != "acme job-o q-o\n" {
		t.Fatalf("ask with flags after the question: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code := kevin.ask(ctx, []string{"--tenant", "acme", "--job", "job-d", "--id", "q-d", "--no-wait", "--", "-5 degrees: go ahead?"}); code != exitOK {
		t.Fatalf("ask after --: exit %d, stderr %q", code, errOut)
	}
	waitPending(t, kevin, "job-o", "q-o")
	waitPending(t, kevin, "job-d", "q-d")

	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"job-o/q-o", "--tenant", "acme"}, []string{"Asks: Which colour?", "Choices: red, blue"}},
		{[]string{"q-d", "--tenant=acme"}, []string{"Asks: -5 degrees: go ahead?"}},
	} {
		out.Reset()
		errOut.Reset()
		if code := kevin.show(ctx, c.args); code != exitOK {
			t.Fatalf("show %q: exit %d, stderr %q", c.args, code, errOut)
		}
		shown := strings.Join(strings.Fields(out.String()), " ")
		for _, want := range c.want {
			if !strings.Contains(shown, want) {
				t.Errorf("show %q lacks %q:\n%s", c.args, want, out)
			}
		}
	}

	out.Reset()
	if code := kevin.list(ctx, []string{"--job", "job-o", "--tenant", "acme"}); code != exitOK || !strings.Contains(out.String(), "q-o") || strings.Contains(out.String(), "q-d") {
		t.Fatalf("list --job: exit %d:\n%s", code, out)
	}
	// A mistyped flag is an error, not words of the question.
	errOut.Reset()
	if code := kevin.ask(ctx, []string{"--tenant", "acme", "--job", "job-t", "Still there?", "--timout", "4h"}); code != exitConfig ||
		!strings.Contains(errOut.String(), "flag provided but not defined: -timout") {
		t.Fatalf("ask with a mistyped flag: exit %d, stderr %q", code, errOut)
	}
	// An argument list does not take is an error, not ignored.
	for _, tool := range []func(context.Context, []string) int{kevin.list, kevin.stats} {
		errOut.Reset()
		if code := tool(ctx, []string{"acme"}); code == exitOK || !strings.Contains(errOut.String(), `takes no arguments, not "acme"`) {
			t.Errorf("a stray argument: exit %d, stderr %q", code, errOut)
		}
	}
}

// TestCLICancelRefusesABadQuestionID checks a question id no question can
// have is named as wrong, not sent and reported as "no question was
// waiting" (which reads as if the job had nothing pending).
func TestCLICancelRefusesABadQuestionID(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	// No NATS at this address: the id is refused before any connection.
	c := &cli{stdout: &out, stderr: &errOut, identity: "cli:ana", natsURL: "nats://127.0.0.1:1"}
	code := c.cancel(context.Background(), []string{"--tenant", "acme", "job-c", "q 1"})
	if want := "askbridge cancel: question: \"q 1\" must be 1 to 64 letters, digits, '-' or '_'\nusage: askbridge cancel "; code != exitConfig || !strings.HasPrefix(errOut.String(), want) || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q; want %q", code, out.String(), errOut.String(), want)
	}
}

// TestCLIShowsAgentTextWithoutTerminalControls checks list, show and a
// refusal print what an agent wrote without passing its control characters
// to the terminal (an escape sequence could clear the screen, retitle the
// window or write the clipboard; a bidi override reorder the text), and
// show keeps a text's lines as rows.
func TestCLIShowsAgentTextWithoutTerminalControls(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Operators = []string{"cli:kevin"} })
	kevin, out, errOut := testCLI(s, "cli:kevin")
	ctx := context.Background()
	evil := "\x1b]52;c;cm0gLXJmIH4=\x07Approve\x1b[2J the \u202eresolution\u202c?"
	q := &bridge.Question{Tenant: "acme", JobID: "job-e", QuestionID: "q-e", Question: evil,
		WhyItMatters: "First line.\nSecond\x1b[31m line.", Choices: []string{"yes\x1b[8m", "no"}}
	askAsync(t, agentFor(t, s), q)
	waitPending(t, kevin, "job-e", "q-e")

	bad := regexp.MustCompile("[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f\u202a-\u202e\u2066-\u2069]")
	if code := kevin.list(ctx, []string{"--job", "job-e"}); code != exitOK || bad.MatchString(out.String()) ||
		!strings.Contains(out.String(), `\x1b]52;c;cm0gLXJmIH4=\aApprove\x1b[2J the \u202eresolution\u202c?`) {
		t.Errorf("list: exit %d, printed %q", code, out)
	}
	out.Reset()
	if code := kevin.show(ctx, []string{"job-e/q-e"}); code != exitOK || bad.MatchString(out.String()) {
		t.Errorf("show: exit %d, printed %q", code, out)
	}
	shown := out.String()
	for _, want := range []string{"Why it matters:  First line.\n", "                 Second\\x1b[31m line.\n", `Choices:         yes\x1b[8m, no`} {
		if !strings.Contains(shown, want) {
			t.Errorf("show lacks %q:\n%s", want, shown)
		}
	}
	if code := kevin.answer(ctx, []string{"job-e", "q-e", "maybe"}); code != exitError || bad.MatchString(errOut.String()) ||
		!strings.Contains(errOut.String(), `must be one of: yes\x1b[8m, no`) {
		t.Errorf("refusal: exit %d, printed %q", code, errOut)
	}
}

func TestPrintable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in        string
		keepLines bool
		want      string
	}{
		{"plain café ✓", false, "plain café ✓"},
		{"a\tb\r\nc", false, "a b  c"},
		{"a\nb", true, "a\nb"},
		{"\x1b[0m\x07\x00\u0085\u202e\u2067", true, `\x1b[0m\a\x00\u0085\u202e\u2067`},
		{"bad \xff byte", false, `bad \ufffd byte`},
	} {
		if got := printable(c.in, c.keepLines); got != c.want {
			t.Errorf("printable(%q, %v) = %q, want %q", c.in, c.keepLines, got, c.want)
		}
	}
}

// TestCLIAskTimedOutWithOnTimeoutFail checks ask exits 4 ("timed out", as
// the usage says) when nobody answered a question asked with --on-timeout
// fail, not 1, which a script cannot tell from askbridge being unreachable.
func TestCLIAskTimedOutWithOnTimeoutFail(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, nil)
	asker, out, errOut := testCLI(s, "cli:agent")
	code := asker.ask(context.Background(), []string{"--tenant", "acme", "--job", "job-f", "--timeout", "1s", "--on-timeout", "fail", "Still there?"})
	if code != exitTimedOut || out.String() != "Nobody answered within 0:00:01.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
