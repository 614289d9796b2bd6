package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/internal/testenv/sqliterecord"
	"github.com/askbridge/askbridge/internal/version"
	"github.com/askbridge/askbridge/store"
)

// startTestService runs the whole service in-process on loopback ports in a
// temp dir, configured by set (nil: the defaults; testConfig), and stops it
// when the test ends. Its log is printed if the test fails.
func startTestService(t *testing.T, set func(*config.Config)) (*service, *config.Config) {
	t.Helper()
	cfg := testConfig(t, set)
	if cfg.Store == config.StoreSQLite {
		if err := sqliterecord.Seed(filepath.Join(cfg.DataDir, "askbridge.db")); err != nil {
			t.Fatal(err)
		}
	}
	// A hang detector: a cluster's JetStream may take a while to be ready
	// on a busy machine, and the start waits for it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*testenv.Patience)
	defer cancel()
	s, err := startService(ctx, cfg, testenv.FailureLogger(t))
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { s.stop(context.Background()) })
	return s, cfg
}

// testConfig is the default configuration on loopback ports (port 0) in a
// temp dir, changed by set (when not nil) and validated as the service's
// own is at start. Tests build it, never the process environment, which
// tests running side by side share.
func testConfig(t *testing.T, set func(*config.Config)) *config.Config {
	t.Helper()
	c := config.Defaults()
	c.DataDir, c.HTTPAddr, c.NATSListen = t.TempDir(), "127.0.0.1:0", "127.0.0.1:0"
	if set != nil {
		set(&c)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	return &c
}

func testCLI(s *service, identity string) (*cli, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &cli{stdout: &out, stderr: &errOut, identity: identity, natsURL: s.natsURL(), natsOpts: []nats.Option{s.nats.Admin()}}, &out, &errOut
}

func agentFor(t *testing.T, s *service) *agent.Client {
	t.Helper()
	nc, err := nats.Connect(s.natsURL(), s.nats.Admin())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	a, err := agent.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// asked is what an agent's Ask returned.
type asked struct {
	res *bridge.Resume
	err error
}

// askAsync asks through the Go agent package and returns a channel that
// gets what Ask returned. The ask lives as long as the test, so the test's
// own waits (readiness, waitOutcome) bound it rather than a deadline of
// its own that could end first.
func askAsync(t *testing.T, a *agent.Client, q *bridge.Question) <-chan asked {
	ch := make(chan asked, 1)
	go func() {
		res, err := a.Ask(t.Context(), q)
		ch <- asked{res, err}
	}()
	return ch
}

// waitOutcome waits for the ask to end and fails the test with the agent's
// error if it got no outcome.
func waitOutcome(t *testing.T, ch <-chan asked) *bridge.Resume {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("the agent got no outcome: %v", a.err)
		}
		return a.res
	case <-time.After(testenv.Patience):
		t.Fatal("timed out waiting for the outcome")
	}
	return nil
}

// waitPending waits until the CLI user can see the question pending.
func waitPending(t *testing.T, c *cli, job, question string) {
	t.Helper()
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		nc, _, err := c.connect("")
		if err != nil {
			return err
		}
		defer nc.Close()
		v, _, err := c.lookup(nc, "", job, question)
		if err != nil {
			return err
		}
		if v.State != bridge.StatePending {
			return fmt.Errorf("state %s", v.State)
		}
		return nil
	})
}

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

func TestHTTPHealthReadyMetrics(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) {
		c.SlackBotToken = "xoxb-test"
		c.SlackSigningSecret = "test-signing-secret"
		c.SlackAPIURL = "http://127.0.0.1:1/api/"
	})
	base := "http://" + s.Addr()
	for path, want := range map[string]string{"/healthz": "ok\n", "/readyz": "ready\n"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != want {
			t.Errorf("%s = %d %q", path, resp.StatusCode, body)
		}
	}
	// A forged Slack interaction is refused and counted.
	resp, err := http.Post(base+"/slack/interactions", "application/x-www-form-urlencoded", strings.NewReader("payload=%7B%7D"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unsigned interaction: %d", resp.StatusCode)
	}
	// Before anything happened, every series is there, at 0.
	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	first, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`askbridge_questions{state="pending"} 0`, `askbridge_questions{state="answered"} 0`,
		`askbridge_refusals_total{reason="not_allowed"} 0`, `askbridge_ladder_steps_total{step="admins"} 0`,
		`askbridge_questions_settled_total{state="timed_out"} 0`, `askbridge_answer_attempts_total{via="slack"} 0`} {
		if !bytes.Contains(first, []byte(want)) {
			t.Errorf("metrics at start lack %q", want)
		}
	}
	ag := agentFor(t, s)
	ch := askAsync(t, ag, &bridge.Question{Tenant: "acme", JobID: "job-m", QuestionID: "q-m", Question: "Go?", Timeout: "1s"})
	waitOutcome(t, ch)
	// Whoever may publish on the bus cannot mint series: an attempt from
	// an unknown platform counts as "other".
	nc := s.nats.Conn
	js, _ := jetstream.New(nc)
	for i := range 3 {
		a := bridge.AnswerAttempt{Tenant: "acme", JobID: "job-m", QuestionID: "q-m", AttemptID: fmt.Sprintf("evil-%d", i),
			Answer: json.RawMessage(`"yes"`), By: fmt.Sprintf("evil%d:u", i)}
		if err := bridge.Publish(context.Background(), js, bridge.AnswerSubject("acme", "job-m"), "attempt-"+a.AttemptID, a); err != nil {
			t.Fatal(err)
		}
	}
	// The relay marks rows sent just after the agent may have read them.
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if bytes.Contains(body, []byte(`via="evil`)) {
			return fmt.Errorf("a label from a published identity:\n%s", body)
		}
		for _, want := range []string{`askbridge_questions{state="timed_out"} 1`, `askbridge_ladder_steps_total{step="timeout"} 1`,
			`askbridge_answer_attempts_total{via="other"} 3`, `askbridge_questions{state="pending"} 0`,
			"askbridge_outbox_backlog 0", "askbridge_answer_latency_seconds_bucket",
			`askbridge_http_requests_total{code="200",route="GET /healthz"} 1`,
			`askbridge_http_requests_total{code="401",route="POST /slack/interactions"} 1`} {
			if !bytes.Contains(body, []byte(want)) {
				return fmt.Errorf("metrics lack %q:\n%s", want, body)
			}
		}
		return nil
	})
}

// TestReadyReportsWhatIsBroken checks /readyz says not ready, and why,
// when the store cannot be written or one of the runtime's streams is
// gone and cannot be made again (the runtime would take none of its
// messages).
func TestReadyReportsWhatIsBroken(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		// brk breaks the service, or makes sure it is still broken: it
		// is called before each look at /readyz.
		brk  func(s *service) error
		want string
	}{
		"store closed": {func(s *service) error {
			if s.store.Ping(context.Background()) == nil {
				s.store.Close()
			}
			return nil
		}, "store: write heartbeat"},
		// A stream gone is made again (with its consumer) unless, as
		// here, another stream took its subjects. The runtime heals at
		// once, racing the test's delete and create (and nats-server
		// takes two overlapping streams created at the same moment), so
		// the break is made again while ASK_QUESTIONS is there.
		"stream gone": {func(s *service) error {
			js, err := jetstream.New(s.nats.Conn)
			if err != nil {
				return err
			}
			ctx := context.Background()
			if _, err := js.Stream(ctx, bridge.StreamQuestions); errors.Is(err, jetstream.ErrStreamNotFound) {
				if _, err := js.Stream(ctx, "OTHER"); err == nil {
					return nil
				}
			}
			if err := js.DeleteStream(ctx, bridge.StreamQuestions); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				return err
			}
			_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{bridge.PrefixQuestion + ".>"}})
			if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				return err
			}
			return errors.New("broken just now")
		}, "stream ASK_QUESTIONS"},
	} {
		t.Run(name, func(t *testing.T) {
			s, _ := startTestService(t, nil)
			testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
				if err := c.brk(s); err != nil {
					return fmt.Errorf("break: %w", err)
				}
				resp, err := http.Get("http://" + s.Addr() + "/readyz")
				if err != nil {
					return err
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), c.want) {
					return fmt.Errorf("/readyz = %d %q", resp.StatusCode, body)
				}
				return nil
			})
		})
	}
}

// TestServeRefusesBadConfigWithExitCode2 checks a bad setting stops the
// service with exit 2 and never shows a secret. It runs alone (no
// t.Parallel): askbridge serve reads the process environment, which
// t.Setenv sets for it.
func TestServeRefusesBadConfigWithExitCode2(t *testing.T) {
	t.Setenv("ASK_DATA_DIR", t.TempDir())
	t.Setenv("ASK_SLACK_BOT_TOKEN", "xoxb-secret-token-value")
	var stderr bytes.Buffer
	code := run([]string{"serve"}, io.Discard, &stderr)
	if code != exitConfig {
		t.Fatalf("exit %d", code)
	}
	if got := stderr.String(); got != "askbridge: ASK_SLACK_SIGNING_SECRET is required when ASK_SLACK_BOT_TOKEN is set\n" {
		t.Fatalf("stderr %q", got)
	}
	if strings.Contains(stderr.String(), "xoxb-secret") {
		t.Fatal("the token leaked")
	}
}

// TestServeReportsAStartFailure checks a service that cannot start (its
// HTTP port taken) says why in one line and exits 1, without a panic.
// It runs alone (no t.Parallel): askbridge serve reads the process
// environment, which t.Setenv sets for it.
func TestServeReportsAStartFailure(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	t.Setenv("ASK_DATA_DIR", t.TempDir())
	t.Setenv("ASK_HTTP_ADDR", taken.Addr().String())
	t.Setenv("ASK_NATS_LISTEN", "127.0.0.1:0")
	var stderr bytes.Buffer
	code := run([]string{"serve"}, io.Discard, &stderr)
	if code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	got := stderr.String()
	if !strings.Contains(got, `msg="askbridge could not start"`) || !strings.Contains(got, taken.Addr().String()) || strings.Contains(got, "panic") {
		t.Fatalf("stderr:\n%s", got)
	}
}

// TestServeRefusesReplicasTheServerHasNot checks ASK_NATS_REPLICAS above
// what a NATS server without a cluster keeps is a bad setting: one line
// naming it, exit 2, as for any other.
// It runs alone (no t.Parallel): askbridge serve reads the process
// environment, which t.Setenv sets for it.
func TestServeRefusesReplicasTheServerHasNot(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(5 * time.Second) {
		t.Fatal("nats not ready")
	}
	t.Setenv("ASK_NATS_URL", ns.ClientURL())
	t.Setenv("ASK_NATS_REPLICAS", "3")
	t.Setenv("ASK_DATA_DIR", t.TempDir())
	t.Setenv("ASK_HTTP_ADDR", "127.0.0.1:0")
	var stderr bytes.Buffer
	code := run([]string{"serve"}, io.Discard, &stderr)
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if code != exitConfig || !strings.HasPrefix(lines[len(lines)-1], "askbridge: ASK_NATS_REPLICAS is 3, but the NATS server at ASK_NATS_URL is not part of a JetStream cluster") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
}

// TestServeSaysWhyTheEmbeddedNATSCannotListen checks an ASK_NATS_LISTEN
// address already taken stops the start at once, naming the variable and
// why, instead of waiting ten seconds to say the server did not listen.
// It runs alone (no t.Parallel): askbridge serve reads the process
// environment, which t.Setenv sets for it.
func TestServeSaysWhyTheEmbeddedNATSCannotListen(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	t.Setenv("ASK_DATA_DIR", t.TempDir())
	t.Setenv("ASK_HTTP_ADDR", "127.0.0.1:0")
	t.Setenv("ASK_NATS_LISTEN", taken.Addr().String())
	var stderr bytes.Buffer
	code := run([]string{"serve"}, io.Discard, &stderr)
	got := stderr.String()
	if code != exitError || !strings.Contains(got, "cannot listen on "+taken.Addr().String()+" (ASK_NATS_LISTEN)") || !strings.Contains(got, "address already in use") {
		t.Fatalf("exit %d, stderr:\n%s", code, got)
	}
}

func TestHelpPrintsUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"-help"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != exitOK || !strings.HasPrefix(stdout.String(), "askbridge — ") || stderr.Len() != 0 {
			t.Errorf("askbridge %s: exit %d, stdout %.40q, stderr %q", args[0], code, stdout.String(), stderr.String())
		}
	}
	// Every command is listed.
	var stdout bytes.Buffer
	run([]string{"help"}, &stdout, io.Discard)
	for name := range commands {
		if first := strings.Fields(commands[name].synopsis)[0]; !strings.Contains(stdout.String(), "\n  askbridge "+first+" ") {
			t.Errorf("askbridge help does not list %s", name)
		}
	}
}

// It runs alone (no t.Parallel): askbridge link reads the process
// environment, which t.Setenv sets for it as for the service.
func TestLinkMintsAConsoleLinkTheServiceAccepts(t *testing.T) {
	s, cfg := startTestService(t, func(c *config.Config) {
		c.ConsoleSecret, c.PublicURL = "0123456789abcdef0123", "http://askbridge.test"
	})
	t.Setenv("ASK_CONSOLE_SECRET", cfg.ConsoleSecret)
	t.Setenv("ASK_PUBLIC_URL", cfg.PublicURL)
	c, out, errOut := testCLI(s, "cli:kevin")
	if code := c.link(context.Background(), []string{"--as", "console:alice"}); code != exitOK {
		t.Fatalf("link exit %d: %s", code, errOut)
	}
	link := strings.TrimSpace(out.String())
	if !strings.HasPrefix(link, cfg.PublicURL+"/console/?") {
		t.Fatalf("link %q", link)
	}
	resp, err := http.Get("http://" + s.Addr() + strings.TrimPrefix(link, cfg.PublicURL))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("console answered %d to a fresh link", resp.StatusCode)
	}
	// The generated secret is kept in the data dir when none is set.
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "console.secret")); err == nil {
		t.Fatal("a secret file was written although ASK_CONSOLE_SECRET is set")
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

// /metrics counts the adapters' calls to their platform: here a Slack API
// that cannot be reached, tried again and then given up.
func TestMetricsCountPlatformCalls(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) {
		c.SlackBotToken = "xoxb-test"
		c.SlackSigningSecret = "test-signing-secret"
		c.SlackAPIURL = "http://127.0.0.1:1/api/"
		c.SlackChannel = "C0123"
	})
	ag := agentFor(t, s)
	askAsync(t, ag, &bridge.Question{Tenant: "acme", JobID: "job-pm", QuestionID: "q-pm", Question: "Go?", Timeout: "1m"})
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		resp, err := http.Get("http://" + s.Addr() + "/metrics")
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`askbridge_platform_api_calls_total\{op="[^"]+",platform="slack",result="error"\} [1-9]`),
			regexp.MustCompile(`askbridge_platform_api_retries_total\{op="[^"]+",platform="slack",reason="transient"\} [1-9]`),
			regexp.MustCompile(`askbridge_platform_api_call_seconds_count\{op="[^"]+",platform="slack"\} [1-9]`),
		} {
			if !want.Match(body) {
				return fmt.Errorf("metrics lack %s", want)
			}
		}
		return nil
	})
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

// TestConsoleSecretFile checks the generated console secret is made in a
// data dir that does not exist yet, kept across starts, and a secret an
// operator wrote there is used as is, or refused when too short, never
// replaced (that would void every link given).
func TestConsoleSecretFile(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{CLI: config.CLI{DataDir: filepath.Join(t.TempDir(), "new", "data")}}
	first, err := consoleSecret(cfg)
	if err != nil || len(first) != 64 {
		t.Fatalf("generated secret %q, %v", first, err)
	}
	again, err := consoleSecret(cfg)
	if err != nil || string(again) != string(first) {
		t.Fatalf("second start read %q, %v; want the first secret", again, err)
	}
	path := filepath.Join(cfg.DataDir, "console.secret")
	const own = "operators-own-secret-21"
	if err := os.WriteFile(path, []byte(own+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := consoleSecret(cfg); err != nil || string(got) != own {
		t.Fatalf("operator's secret read as %q, %v", got, err)
	}
	if err := os.WriteFile(path, []byte("short-one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = consoleSecret(cfg)
	if err == nil || !strings.Contains(err.Error(), "holds 9 characters; it needs at least 16") || strings.Contains(err.Error(), "short-one") {
		t.Fatalf("short secret: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "short-one\n" {
		t.Fatalf("the operator's file was replaced: %q", b)
	}
}

// TestSignalWhileStartingIsAStop checks SIGTERM during start-up stops the
// service with exit 0 and no error, as SIGTERM after it would.
func TestSignalWhileStartingIsAStop(t *testing.T) {
	t.Parallel()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, delay := range []time.Duration{20 * time.Millisecond, 60 * time.Millisecond, 150 * time.Millisecond} {
		cmd := exec.Command(bin, "serve")
		cmd.Env = append(os.Environ(), "ASKBRIDGE_TEST_AS_MAIN=1", "ASK_DATA_DIR="+t.TempDir(),
			"ASK_HTTP_ADDR=127.0.0.1:0", "ASK_NATS_LISTEN=127.0.0.1:0")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == -1 {
			// Killed before Go set up its signal handling: not ours to judge.
			t.Logf("SIGTERM after %v came before the handlers: %v", delay, err)
			continue
		}
		if err != nil || strings.Contains(stderr.String(), "level=ERROR") {
			t.Errorf("SIGTERM after %v: %v\n%s", delay, err, stderr.String())
		}
	}
}

// TestCleanStopLeavesNothingToPublishAgain checks a service stopped right
// after answering a question leaves no outbox row unsent: with the
// embedded server stopped and its files synced, the rows that waited out
// the sync interval are marked, so a start more than JetStream's duplicate
// window later does not show the job its resume a second time.
func TestCleanStopLeavesNothingToPublishAgain(t *testing.T) {
	t.Parallel()
	s, cfg := startTestService(t, func(c *config.Config) { c.Operators = []string{"cli:kevin"} })
	ag := agentFor(t, s)
	kevin, _, errOut := testCLI(s, "cli:kevin")
	q := &bridge.Question{Tenant: "acme", JobID: "job-stop", QuestionID: "q-1", TaskVersion: 1, Question: "Which colour?", Choices: []string{"red", "blue"}}
	ch := askAsync(t, ag, q)
	waitPending(t, kevin, "job-stop", "q-1")
	if code := kevin.answer(context.Background(), []string{"job-stop", "q-1", "blue"}); code != exitOK {
		t.Fatalf("answer: %s", errOut)
	}
	waitOutcome(t, ch)
	s.stop(context.Background()) // within the 3 s the rows wait
	st, err := store.Open(context.Background(), filepath.Join(cfg.DataDir, "askbridge.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.Unsent(context.Background(), 0, 100, time.Time{})
	if err != nil || len(rows) != 0 {
		t.Fatalf("%d outbox rows unsent after a clean stop (%v): %+v", len(rows), err, rows)
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

// TestLinkNeedsTheServicesSecret checks askbridge link, run where the
// service's secret is not (another directory, no ASK_CONSOLE_SECRET), says
// so instead of making a secret of its own and printing a link the service
// refuses.
// It runs alone (no t.Parallel): askbridge link reads the process
// environment, which t.Setenv sets for it.
func TestLinkNeedsTheServicesSecret(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	t.Setenv("ASK_DATA_DIR", dir)
	t.Setenv("ASK_CONSOLE_SECRET", "")
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut, identity: "cli:kevin"}
	code := c.link(context.Background(), []string{"--as", "console:alice"})
	if code != exitError || out.Len() != 0 ||
		!strings.Contains(errOut.String(), "no console secret: ASK_CONSOLE_SECRET is not set and "+filepath.Join(dir, "console.secret")+" does not exist") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("link made the data dir or a secret in it: %v", err)
	}
	// Once the service has made its secret, link signs with it.
	cfg := &config.Config{CLI: config.CLI{DataDir: dir}}
	secret, err := consoleSecret(cfg)
	if err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	if code := c.link(context.Background(), []string{"--as", "console:alice"}); code != exitOK {
		t.Fatalf("link after the service started: exit %d, %s", code, errOut.String())
	}
	u, err := url.Parse(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	exp, _ := strconv.ParseInt(u.Query().Get("exp"), 10, 64)
	l := console.Link{Identity: "console:alice", Scope: console.ScopeList, Expires: time.Unix(exp, 0)}
	if err := (console.Signer{Secret: secret}).Verify(l, u.Query().Get("sig"), time.Now()); err != nil || u.Path != "/console/" {
		t.Fatalf("link %s does not open with the service's secret: %v", u, err)
	}
}

// TestLinkRefusesIdsTheConsoleRefuses checks askbridge link names a bad
// tenant, job or question id instead of printing a link the console
// answers with "This link is not valid".
// It runs alone (no t.Parallel): askbridge link reads the process
// environment, which t.Setenv sets for it.
func TestLinkRefusesIdsTheConsoleRefuses(t *testing.T) {
	t.Setenv("ASK_DATA_DIR", t.TempDir())
	t.Setenv("ASK_CONSOLE_SECRET", "0123456789abcdef0123")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--question", "acme/job 1/q-1"}, `askbridge link: --question: job: "job 1" must be 1 to 64 letters, digits, '-' or '_'`},
		{[]string{"--question", "acme//q-1"}, "askbridge link: --question: job: is required"},
		{[]string{"--question", "acme/job-1/q.1"}, `askbridge link: --question: question: "q.1" must be 1 to 64 letters, digits, '-' or '_'`},
		{[]string{"--job", "ac me/job-1"}, `askbridge link: --job: tenant: "ac me" must be 1 to 64 letters, digits, '-' or '_'`},
	} {
		var out, errOut bytes.Buffer
		c := &cli{stdout: &out, stderr: &errOut, identity: "cli:kevin"}
		code := c.link(context.Background(), append([]string{"--as", "console:alice"}, tc.args...))
		if code != exitConfig || out.Len() != 0 || !strings.HasPrefix(errOut.String(), tc.want+"\nusage: askbridge link ") {
			t.Errorf("link %q: exit %d, stdout %q, stderr %q; want %q", tc.args, code, out.String(), errOut.String(), tc.want)
		}
	}
}

// TestRootRedirectsUnderThePublicPath checks / sends the browser to the
// console under ASK_PUBLIC_URL's path, where a proxy serving askbridge
// under a prefix reaches it, not to the site's own /console/.
func TestRootRedirectsUnderThePublicPath(t *testing.T) {
	t.Parallel()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for publicURL, want := range map[string]string{"": "/console/", "https://example.com/askbridge/": "/askbridge/console/"} {
		s, _ := startTestService(t, func(c *config.Config) { c.PublicURL = publicURL })
		resp, err := client.Get("http://" + s.Addr() + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Errorf("ASK_PUBLIC_URL=%q: GET / = %d to %q, want 303 to %q", publicURL, resp.StatusCode, resp.Header.Get("Location"), want)
		}
		// And /console without its slash.
		resp, err = client.Get("http://" + s.Addr() + "/console?x=1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != want+"?x=1" {
			t.Errorf("ASK_PUBLIC_URL=%q: GET /console = %d to %q, want 307 to %q", publicURL, resp.StatusCode, resp.Header.Get("Location"), want+"?x=1")
		}
	}
}

// TestServeRefusesAChannelNameWithExitCode2 checks a channel given by name
// stops the service at start like any bad setting: one line naming the
// variable and exit 2, not a start failure (exit 1) after NATS and the
// runtime came up.
// It runs alone (no t.Parallel): askbridge serve reads the process
// environment, which t.Setenv sets for it.
func TestServeRefusesAChannelNameWithExitCode2(t *testing.T) {
	t.Setenv("ASK_DATA_DIR", t.TempDir())
	t.Setenv("ASK_HTTP_ADDR", "127.0.0.1:0")
	t.Setenv("ASK_NATS_LISTEN", "127.0.0.1:0")
	t.Setenv("ASK_SLACK_BOT_TOKEN", "xoxb-secret-token-value")
	t.Setenv("ASK_SLACK_SIGNING_SECRET", "test-signing-secret")
	t.Setenv("ASK_SLACK_API_URL", "http://127.0.0.1:1/api/")
	t.Setenv("ASK_SLACK_CHANNEL", "general")
	var stderr bytes.Buffer
	code := run([]string{"serve"}, io.Discard, &stderr)
	if want := "askbridge: ASK_SLACK_CHANNEL must be a channel id such as C0123 (not its name), not \"general\"\n"; code != exitConfig || stderr.String() != want {
		t.Fatalf("exit %d, stderr %q; want exit %d, %q", code, stderr.String(), exitConfig, want)
	}
}

// TestCommandHelpExitsZero checks "askbridge COMMAND -h", which the usage
// tells people to run, prints the command's flags and exits 0, as
// "askbridge -h" does; an unknown flag still exits 2.
func TestCommandHelpExitsZero(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"serve", "ask", "await", "list", "show", "answer", "decline", "cancel", "executed", "link", "gate",
		"stats", "trace", "queue", "bench", "torture", "mcp", "migrate", "policy", "version", "creds"} {
		synopsis := "Usage: askbridge " + commands[cmd].synopsis + "\n\n"
		want := "flag provided but not defined: -no-such-flag\nusage: askbridge " + commands[cmd].synopsis + "\n"
		if cmd == "creds" { // creds prints its forms, one a line (creds.go)
			synopsis, want = "askbridge creds — ", "askbridge: creds: unknown command \"--no-such-flag\""
		}
		for _, args := range [][]string{{cmd, "-h"}, {cmd, "--help"}, {"help", cmd}} {
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != exitOK || !strings.HasPrefix(stdout.String(), synopsis) || stderr.Len() != 0 {
				t.Errorf("askbridge %s: exit %d, stdout %q, stderr %q; want exit 0 and %q", strings.Join(args, " "), code, stdout.String(), stderr.String(), synopsis)
			}
		}
		if cmd == "answer" || cmd == "executed" || cmd == "serve" || cmd == "version" || cmd == "policy" {
			continue // anything but answer's and executed's own flags is an argument ("-5"); the others take none
		}
		var stderr bytes.Buffer
		if code := run([]string{cmd, "--no-such-flag"}, io.Discard, &stderr); code != exitConfig || !strings.HasPrefix(stderr.String(), want) {
			t.Errorf("askbridge %s --no-such-flag: exit %d, stderr %q; want exit 2 and %q", cmd, code, stderr.String(), want)
		}
	}
	// The synopsis names the positional arguments.
	var stdout bytes.Buffer
	if code := run([]string{"help", "gate"}, &stdout, io.Discard); code != exitOK || !strings.Contains(stdout.String(), "JOB TOOL\n") ||
		!strings.Contains(stdout.String(), "-version int") {
		t.Errorf("askbridge help gate: exit %d, %q", code, stdout.String())
	}
	var stderr bytes.Buffer
	if code := run([]string{"help", "nosuch"}, io.Discard, &stderr); code != exitConfig || !strings.Contains(stderr.String(), `unknown command "nosuch"`) {
		t.Errorf("askbridge help nosuch: exit %d, %q", code, stderr.String())
	}
}

// TestVersionPrintsTheBuild: askbridge version and --version print the
// build's version, not "serve takes no arguments".
func TestVersionPrintsTheBuild(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != exitOK || stdout.String() != version.String()+"\n" || stderr.Len() != 0 {
			t.Errorf("askbridge %s: exit %d, stdout %q, stderr %q", args[0], code, stdout.String(), stderr.String())
		}
	}
	var stderr bytes.Buffer
	if code := run([]string{"version", "extra"}, io.Discard, &stderr); code != exitConfig {
		t.Errorf("askbridge version extra: exit %d, %q", code, stderr.String())
	}
}

// TestMissingArgumentsExit2: a command line of the wrong shape is a usage
// mistake in every command, exit 2 with the command's synopsis, before
// anything is sent.
func TestMissingArgumentsExit2(t *testing.T) {
	t.Parallel()
	// (answer job-1 q-1 and decline job-1 name question job-1 alone.)
	for _, args := range [][]string{{"answer", "job-1/q-1"}, {"answer", "q-1"}, {"decline", "job-1", "q-1", "x"}, {"decline", "job-1/"},
		{"cancel", "job-1/q-1", "q-2"}, {"show"}, {"show", "a", "b", "c"},
		{"cancel"}, {"await", "job-1"}, {"queue"}, {"trace"}, {"executed", "job-1"}, {"gate", "job-1"}, {"list", "x"},
		{"stats", "x"}, {"link", "x"}, {"serve", "x"}, {"migrate", "x"}, {"ask", "Which one?"}, {"ask", "--job", "job-1"},
		{"ask", "--job", "job-1", "--field", "copies:int:1.5..9", "How many?"}, {"answer", "job 1", "q-1", "yes"}, {"show", "job-1", "q.1"}} {
		var stdout, stderr bytes.Buffer
		// No NATS here: nothing may be sent.
		c := &cli{stdout: &stdout, stderr: &stderr, identity: "cli:ana", natsURL: "nats://127.0.0.1:1"}
		var code int
		if args[0] == "serve" {
			code = run(args, &stdout, &stderr)
		} else {
			code = map[string]func(context.Context, []string) int{"answer": c.answer, "decline": c.decline, "show": c.show,
				"cancel": c.cancel, "await": c.await, "queue": c.queue, "trace": c.trace, "executed": c.executed, "gate": c.gate,
				"list": c.list, "stats": c.stats, "link": c.link, "migrate": c.migrate, "ask": c.ask}[args[0]](context.Background(), args[1:])
		}
		if code != exitConfig || !strings.Contains(stderr.String(), args[0]) {
			t.Errorf("askbridge %s: exit %d, stderr %q; want exit 2 naming the command", strings.Join(args, " "), code, stderr.String())
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

// TestWarnsWhenChatLinksPointAtLoopback checks the service says so when
// Slack or Discord is on and ASK_PUBLIC_URL is not set: the console links
// it puts in chat would point at this machine's loopback.
func TestWarnsWhenChatLinksPointAtLoopback(t *testing.T) {
	t.Parallel()
	const warning = "ASK_PUBLIC_URL is not set: console links in chat point at http://127.0.0.1:"
	for _, c := range []struct {
		name string
		set  func(*config.Config)
		warn bool
	}{
		{"slack without a public URL", func(c *config.Config) { c.DiscordOperatorRoles = []string{"ops"} }, true},
		{"slack with a public URL", func(c *config.Config) { c.PublicURL = "https://ask.example.com/" }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t, func(cfg *config.Config) {
				cfg.SlackBotToken, cfg.SlackSigningSecret, cfg.SlackAPIURL = "xoxb-test", "test-signing-secret", "http://127.0.0.1:1/api/"
				c.set(cfg)
			})
			var logs bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := startService(ctx, cfg, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			s.stop(context.Background())
			if got := strings.Contains(logs.String(), warning); got != c.warn {
				t.Fatalf("warned %v, want %v; logs:\n%s", got, c.warn, logs.String())
			}
			// ASK_HTTP_ADDR asked for port 0: the links name the port taken.
			if c.warn && !strings.Contains(logs.String(), "console links in chat point at http://"+s.Addr()+",") {
				t.Fatalf("the warning does not name the listener's address %s; logs:\n%s", s.Addr(), logs.String())
			}
			// The settings' own warnings (config.Warnings) are logged too.
			if got := strings.Contains(logs.String(), `ASK_DISCORD_OPERATOR_ROLES: \"ops\" should be a role id`); got != c.warn {
				t.Fatalf("role warning %v, want %v; logs:\n%s", got, c.warn, logs.String())
			}
		})
	}
}

// TestGoRunNamesAPartOnce checks a part's failure is named once, whether
// or not its error already starts with its name.
func TestGoRunNamesAPartOnce(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"runtime: nats: key-value bucket ASK_RUNTIME: memory storage": "runtime: nats: key-value bucket ASK_RUNTIME: memory storage",
		"nats: key-value bucket ASK_RUNTIME: memory storage":          "runtime: nats: key-value bucket ASK_RUNTIME: memory storage",
	} {
		s := &service{errs: make(chan error, 1)}
		s.goRun("runtime", func(context.Context) error { return errors.New(in) }, context.Background())
		s.wg.Wait()
		if got := (<-s.errs).Error(); got != want {
			t.Errorf("%q became %q, want %q", in, got, want)
		}
	}
}
