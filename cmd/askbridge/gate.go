package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
)

// gate asks the gate whether a job may call a tool now (docs/contract.md,
// "The gate"), for shells: exit 0 allowed, 1 refused (or no decision), 2
// for a usage mistake.
func (c *cli) gate(ctx context.Context, args []string) int {
	fs, url := c.flags("gate")
	tenant := fs.String("tenant", "default", "the job's tenant")
	version := fs.Int64("version", 0, "the task version the job acts on")
	proposal := fs.String("proposal", "", "an approval's proposal id: is it approved for this tool?")
	execute := fs.Bool("execute", false, "with --proposal: take the approved proposal for execution, once (prints its arguments and idempotency key)")
	asJSON := fs.Bool("json", false, "print the gate's reply as JSON")
	if err := parseFlags(fs, args, false); err != nil {
		return flagExit(err)
	}
	usage := func(format string, args ...any) int {
		fmt.Fprintln(c.stderr, printable("askbridge gate: "+fmt.Sprintf(format, args...), true))
		fmt.Fprintln(c.stderr, "usage: askbridge gate JOB TOOL [--tenant T] [--version N] [--proposal ID [--execute]] [--json]")
		return exitConfig
	}
	if fs.NArg() != 2 {
		return usage("takes a job and a tool")
	}
	job, tool := fs.Arg(0), fs.Arg(1)
	if err := checkTokens([]string{*tenant, job}, "tenant", "job"); err != nil {
		return usage("%v", err)
	}
	if err := bridge.CheckTool("tool", tool); err != nil {
		return usage("%v", err)
	}
	if *execute && *proposal == "" {
		return usage("--execute takes an approved proposal: give --proposal ID")
	}
	nc, _, err := c.connect(*url)
	if err != nil {
		return c.fail("%v", err)
	}
	defer nc.Close()
	client, err := agent.New(nc)
	if err != nil {
		return c.fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, agent.GateWait)
	defer cancel()
	var reply bridge.GateReply
	switch {
	case *execute:
		reply, err = client.Execute(ctx, *tenant, job, *version, tool, *proposal)
	case *proposal != "":
		err = bridge.Request(ctx, nc, bridge.GateSubject(*tenant, job),
			bridge.GateRequest{Tenant: *tenant, JobID: job, TaskVersion: *version, Tool: tool, ProposalID: *proposal}, &reply)
	default:
		reply, err = client.Gate(ctx, *tenant, job, *version, tool)
	}
	if errors.Is(err, nats.ErrNoResponders) {
		return c.fail("no decision: no askbridge runtime answered (is 'askbridge serve' running?); do not call %s", tool)
	}
	if err != nil {
		return c.fail("no decision: %v; do not call %s", err, tool)
	}
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(reply)
	} else {
		c.printGate(reply)
	}
	if reply.Allowed {
		return exitOK
	}
	return exitError
}

// printGate prints a decision as a line ("allowed", "refused: code:
// reason"), then what an allowed execute hands over.
func (c *cli) printGate(r bridge.GateReply) {
	line := "refused: " + r.Code
	if r.Allowed {
		line = "allowed"
	}
	if r.Reason != "" {
		line += ": " + r.Reason
	}
	fmt.Fprintln(c.stdout, printable(line, false))
	if len(r.Arguments) > 0 {
		fmt.Fprintln(c.stdout, printable("arguments: "+strings.TrimSpace(string(r.Arguments)), false))
	}
	if r.IdempotencyKey != "" {
		fmt.Fprintln(c.stdout, printable("idempotency key: "+r.IdempotencyKey, false))
	}
	if !r.ExecutedAt.IsZero() {
		fmt.Fprintln(c.stdout, "executed at: "+r.ExecutedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	}
}
