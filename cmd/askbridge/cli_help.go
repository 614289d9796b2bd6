package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/askbridge/askbridge/internal/version"
)

// commands are each command's synopsis (its positional arguments) and
// what it does, for 'askbridge help CMD' and 'askbridge CMD -h'.
var commands = map[string]struct{ synopsis, does string }{
	"serve":    {"[serve]", "Run the service: embedded NATS (or ASK_NATS_URL), the store, HTTP. It takes no arguments; ASK_ variables configure it (README.md, Configuration)."},
	"ask":      {"ask --job JOB [--tenant T] [flags] QUESTION", "Ask a question and wait for its outcome: exit 0 answered, 3 declined, 4 timed out, 1 refused or failed, 2 usage.\nWith --no-wait, wait only until the runtime has recorded it (exit 0) or refused it (exit 1)."},
	"await":    {"await [--tenant T] JOB QUESTION", "Wait for the outcome of a question asked before (a stopped ask prints this command); exit codes as ask's."},
	"list":     {"list [--tenant T] [--job J] [--state pending|all]", "List the questions you may see."},
	"show":     {"show [--tenant T] JOB QUESTION", "Show one question: what it asks, its fields, its state and its audit trail. " + questionForms + "."},
	"queue":    {"queue [--tenant T] [--json] JOB", "A job's pending questions by priority, then age, with staleness."},
	"answer":   {"answer [--tenant T] JOB QUESTION ANSWER", "Answer a question (an approval: approve, or deny REASON). A JSON object answers a question's fields.\n" + questionForms + " (then quote an answer of several words)."},
	"decline":  {"decline [--tenant T] JOB QUESTION [--comment REASON]", "Decline to answer a question. " + questionForms + "."},
	"cancel":   {"cancel [--tenant T] JOB [QUESTION] [--reason REASON] [--status retired|implicitly_answered [--evidence WORDS]]", "End a job's waiting questions, or one of them (needs the admin or owner role). JOB/QUESTION is read too.\nWithout --tenant it finds the tenant of the job (or question) among those you may see."},
	"executed": {"executed [--tenant T] JOB PROPOSAL [--result succeeded|failed] [--detail TEXT]", "Report what became of an approved proposal the job executed."},
	"link":     {"link --as IDENTITY [--question TENANT/JOB/QUESTION | --job TENANT/JOB] [--ttl 24h]", "Print a signed console link."},
	"gate":     {"gate [--tenant T] [--version N] [--proposal ID [--execute]] [--json] JOB TOOL", "May the job call TOOL now? Exit 0 allowed, 1 refused (or no decision: do not call it), 2 usage.\nWithout --tenant it uses the one tenant that has the job (none or several: refused); without --version, the job's current version."},
	"trace":    {"trace [--tenant T] [--json] [--as IDENTITY] JOB", "The job's timeline: questions, gate decisions, answers, refusals, approvals, executions, notices."},
	"mcp":      {"mcp [--nats URL]", "Serve MCP on stdin/stdout: ask_user, request_approval, check_action, approve_tool_use (docs/mcp.md); ASK_MCP_TENANT names the tenant."},
	"stats":    {"stats [--since 7d] [--tenant T]", "Questions by state; the clarification measures per tenant and agent."},
	"policy": {"policy check FILE", "Check a policy file (ASK_POLICY, docs/contract.md \"The policy file\") without starting anything:\n" +
		"print \"FILE: ok (N tenants, M actions)\" and exit 0, or its first problem as FILE:LINE: ... and exit 2."},
	"bench":   {"bench [flags]", "Measure the answer path in-process against a fake Slack (--ask, --pending, --gate, --cluster: other paths)."},
	"migrate": {"migrate --to jetstream [--nats URL]", "Move a stopped single node's SQLite record into JetStream (docs/deploy.md)."},
	"torture": {"torture [flags]", "kill -9 the service under load and check nothing was lost or doubled."},
	"version": {"version", "Print askbridge's version and commit."},
	"creds":   {"creds agent|person|admin|revoke|list|nats-config [flags]", "Make, revoke and list credentials for askbridge's NATS (docs/contract.md, \"Principals on the bus\"); 'askbridge creds' alone lists its forms."},
	"help":    {"help [COMMAND]", "Print the commands, or one command's usage and flags."},
}

// wantsHelp reports whether args ask for help (-h, -help, --help) before
// any "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--h", "--help":
			return true
		}
	}
	return false
}

// parse parses args with fs (parseFlags). Asked for help, it prints the
// command's usage and flags on stdout and returns exit 0; a flag that
// does not parse gets the flag package's line, the command's synopsis
// and exit 2. ok is false when the command must return code.
func (c *cli) parse(fs *flag.FlagSet, args []string, onlyKnown bool) (code int, ok bool) {
	name := strings.TrimPrefix(fs.Name(), "askbridge ")
	if wantsHelp(args) {
		c.printHelp(c.stdout, name, fs)
		return exitOK, false
	}
	fs.SetOutput(c.stderr)
	fs.Usage = func() { c.printSynopsis(name) }
	if err := parseFlags(fs, args, onlyKnown); err != nil {
		return exitConfig, false
	}
	return exitOK, true
}

// usageError reports a command line of the wrong shape (a missing or an
// extra argument, a flag value that cannot be read): what is wrong, the
// command's synopsis, exit 2.
func (c *cli) usageError(name, format string, args ...any) int {
	fmt.Fprintln(c.stderr, printable("askbridge "+name+": "+fmt.Sprintf(format, args...), true))
	c.printSynopsis(name)
	return exitConfig
}

func (c *cli) printSynopsis(name string) {
	if cmd, ok := commands[name]; ok {
		fmt.Fprintf(c.stderr, "usage: askbridge %s\nRun 'askbridge help %s' for its flags.\n", cmd.synopsis, name)
	}
}

// printHelp writes a command's usage: its synopsis, what it does, and its
// flags when fs is not nil.
func (c *cli) printHelp(w io.Writer, name string, fs *flag.FlagSet) {
	cmd := commands[name]
	fmt.Fprintf(w, "Usage: askbridge %s\n\n%s\n", cmd.synopsis, cmd.does)
	if fs == nil {
		return
	}
	has := false
	fs.VisitAll(func(*flag.Flag) { has = true })
	if has {
		fmt.Fprint(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(c.stderr)
	}
}

// help prints the commands, or one command's usage: the command run with
// -h, so its flags are listed as it defines them.
func (c *cli) help(ctx context.Context, args []string, tools map[string]func(context.Context, []string) int) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(c.stdout, usage)
		return exitOK
	case len(args) > 1:
		return c.usageError("help", "takes one command, not %d words", len(args))
	}
	if _, ok := commands[args[0]]; ok {
		if tool, ok := tools[args[0]]; ok && args[0] != "help" {
			return tool(ctx, []string{"-h"})
		}
		c.printHelp(c.stdout, args[0], nil)
		return exitOK
	}
	fmt.Fprintf(c.stderr, "askbridge help: unknown command %q; 'askbridge help' lists them\n", args[0])
	return exitConfig
}

// version prints the version and commit.
func (c *cli) version(_ context.Context, args []string) int {
	if wantsHelp(args) {
		c.printHelp(c.stdout, "version", nil)
		return exitOK
	}
	if len(args) > 0 {
		return c.usageError("version", "takes no arguments")
	}
	fmt.Fprintln(c.stdout, version.String())
	return exitOK
}
