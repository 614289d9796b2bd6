// Command askbridge is the one binary: the service (serve, the default)
// and the command-line tools that speak to it over NATS.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"os/user"
	"strings"
	"syscall"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/policy"
)

// Exit codes.
const (
	exitOK       = 0
	exitError    = 1
	exitConfig   = 2
	exitDeclined = 3
	exitTimedOut = 4
)

const usage = `askbridge — ask people questions from agent jobs, and wait durably for the answer.

Usage:
  askbridge [serve]                         run the service (embedded NATS, SQLite, HTTP)
  askbridge ask --job J [--tenant T] [flags] QUESTION
                                            ask and wait; exit 0 answered, 3 declined, 4 timed out, 2 usage, 1 otherwise
                                            (--no-wait: until recorded, exit 0, or refused, exit 1)
  askbridge await [--tenant T] JOB QUESTION wait again for a question asked before; exit codes as ask's
  askbridge list [--tenant T] [--job J] [--state pending|all]
  askbridge show [--tenant T] JOB QUESTION  (show, answer, decline: also JOB/QUESTION, or QUESTION alone)
  askbridge queue [--tenant T] [--json] JOB  a job's pending questions by priority, then age, with staleness
  askbridge answer [--tenant T] JOB QUESTION ANSWER
  askbridge decline [--tenant T] JOB QUESTION [--comment REASON]
  askbridge cancel [--tenant T] JOB [QUESTION] [--reason REASON] [--status retired|implicitly_answered [--evidence WORDS]]
  askbridge executed [--tenant T] JOB PROPOSAL [--result succeeded|failed] [--detail TEXT]
                                            report what became of an approved proposal the job executed
  askbridge link --as IDENTITY [--question TENANT/JOB/QUESTION | --job TENANT/JOB] [--ttl 24h]
  askbridge gate [--tenant T] [--version N] [--proposal ID [--execute]] [--json] JOB TOOL
                                            may the job call TOOL now? exit 0 allowed, 1 refused, 2 usage
  askbridge trace [--tenant T] [--json] [--as IDENTITY] JOB
                                            the job's timeline: questions, gate decisions, answers, refusals, approvals, executions, notices
  askbridge mcp                              serve MCP on stdin/stdout: ask_user, request_approval, check_action,
                                            approve_tool_use (docs/mcp.md); ASK_MCP_TENANT names the tenant
  askbridge stats [--since 7d] [--tenant T]  questions by state; resolution, decline, abandonment, repetition and reopen
                                            rates, time to answer and gate refusals per tenant and agent
  askbridge policy check FILE               check a policy file (ASK_POLICY) without starting anything; exit 0 good, 2 bad
  askbridge bench [--duration 10s] [--rate 0] [--concurrency 32] [--sync always|interval] [--pending N] [--gate] [--cluster [--replicas 3]]
                                            measure the answer path in-process against a fake Slack (--gate: the gate)
  askbridge migrate --to jetstream [--nats URL]
                                            move a stopped single node's SQLite record into JetStream (docs/deploy.md)
  askbridge torture [--duration 60s] [--rate 50] [--kill-every 5s] [--data DIR] [--cluster [--replicas 3]]
                                            kill -9 the service under load and check nothing was lost or doubled
  askbridge creds agent|person|admin|revoke|list|nats-config [flags]
                                            make, revoke and list credentials for askbridge's NATS ('askbridge creds' lists its forms)
  askbridge version                         the version and commit (also --version)
  askbridge help [COMMAND]                  this, or a command's usage and flags (also COMMAND -h)

The tools connect to ASK_NATS_URL, else to the embedded server at ASK_NATS_LISTEN
(default 127.0.0.1:4222); --nats URL overrides both. They act as cli:<your user name>.
Exit codes: 0 done (allowed, answered), 1 refused or failed, 2 a usage mistake (an unknown
command or flag, a missing or extra argument, a malformed id), 3 declined and 4 timed out
(ask, await).
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			fmt.Fprint(stdout, usage)
			return exitOK
		case "-version", "--version":
			args[0] = "version"
		}
	}
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	c := &cli{stdout: stdout, stderr: stderr, identity: cliIdentity()}
	var tools map[string]func(context.Context, []string) int
	tools = map[string]func(context.Context, []string) int{
		"ask": c.ask, "await": c.await, "list": c.list, "show": c.show, "answer": c.answer, "decline": c.decline,
		"cancel": c.cancel, "executed": c.executed, "mcp": c.mcp, "link": c.link, "stats": c.stats, "trace": c.trace,
		"queue": c.queue, "gate": c.gate, "torture": c.torture, "bench": c.bench, "nats-node": c.natsNode,
		"policy": c.policy, "migrate": c.migrate, "version": c.version, "creds": c.credsCmd,
		"serve": func(ctx context.Context, args []string) int {
			if wantsHelp(args) {
				c.printHelp(stdout, "serve", nil)
				return exitOK
			}
			return serve(ctx, args, stderr)
		},
		"help": func(ctx context.Context, args []string) int { return c.help(ctx, args, tools) },
	}
	tool, ok := tools[cmd]
	if !ok {
		fmt.Fprintf(stderr, "askbridge: unknown command %q; 'askbridge help' lists them\n", cmd)
		return exitConfig
	}
	return tool(ctx, args)
}

// cliIdentity is cli:<os user>, the identity the role lists name.
func cliIdentity() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	return "cli:" + name
}

func serve(ctx context.Context, args []string, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "askbridge serve takes no arguments, not %q; it is configured by ASK_ variables (see README.md)\n", args[0])
		return exitConfig
	}
	cfg, ok := loadConfig(stderr, "askbridge: ")
	if !ok {
		return exitConfig
	}
	log := newLogger(stderr, cfg.LogLevel)
	// SIGHUP re-reads the policy (reloadPolicy); caught with or without
	// one, so a hang-up (a closed terminal, a supervisor's reload) never
	// stops the service.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	s, err := startService(ctx, cfg, log)
	if err != nil && ctx.Err() != nil {
		// Asked to stop while starting: a stop, not a failure.
		log.Info("stopped before it was ready")
		return exitOK
	}
	var bad *bridge.SettingError
	if errors.As(err, &bad) {
		fmt.Fprintln(stderr, "askbridge: "+bad.Error())
		return exitConfig
	}
	var badPolicy *policy.Error
	if errors.As(err, &badPolicy) {
		fmt.Fprintln(stderr, "askbridge: "+badPolicy.Error())
		return exitConfig
	}
	if err != nil {
		log.Error("askbridge could not start", "err", err)
		return exitError
	}
	code := waitForStop(ctx, s, hup)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	s.stop(sctx)
	log.Info("stopped")
	return code
}

// waitForStop serves until a stop signal or a component's failure,
// re-reading the policy on each SIGHUP meanwhile, and returns the exit code.
func waitForStop(ctx context.Context, s *service, hup <-chan os.Signal) int {
	for {
		select {
		case <-ctx.Done():
			s.log.Info("shutting down")
			return exitOK
		case err := <-s.Errors():
			s.log.Error("a component stopped", "err", err)
			return exitError
		case <-hup:
			s.reloadPolicy()
		}
	}
}

// loadConfig reads the ASK_ variables, writing each problem on a line of
// its own after prefix; false means the command must exit 2.
func loadConfig(stderr io.Writer, prefix string) (*config.Config, bool) {
	cfg, err := config.Load()
	if err == nil {
		return cfg, true
	}
	var ce *config.Error
	if errors.As(err, &ce) {
		for _, p := range ce.Problems {
			fmt.Fprintln(stderr, prefix+p)
		}
	} else {
		fmt.Fprintln(stderr, prefix+err.Error())
	}
	return nil, false
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}
