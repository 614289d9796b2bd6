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
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/store"
)

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
