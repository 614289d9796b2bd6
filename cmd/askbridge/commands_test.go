package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/version"
)

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
