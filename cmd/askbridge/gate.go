package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
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
	tenant := fs.String("tenant", "", "the job's tenant (default: the one tenant that has the job; none or several is a refusal)")
	version := fs.Int64("version", 0, "the task version the job acts on (default: the job's current version)")
	proposal := fs.String("proposal", "", "an approval's proposal id: is it approved for this tool?")
	execute := fs.Bool("execute", false, "with --proposal: take the approved proposal for execution, once (prints its arguments and idempotency key)")
	asJSON := fs.Bool("json", false, "print the gate's reply as JSON")
	if code, ok := c.parse(fs, args, false); !ok {
		return code
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
	if err := checkTokens([]string{job}, "job"); err != nil {
		return usage("%v", err)
	}
	if *tenant != "" {
		if err := checkTokens([]string{*tenant}, "tenant"); err != nil {
			return usage("%v", err)
		}
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
	req := bridge.GateRequest{Tenant: *tenant, JobID: job, TaskVersion: *version, Tool: tool, ProposalID: *proposal, Execute: *execute}
	if err := c.gateJob(nc, &req, isSet(fs, "version")); err != nil {
		return c.fail("no decision: %v; do not call %s", err, tool)
	}
	reply, err := c.askGate(ctx, nc, req)
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

// askGate sends req to the gate and waits for its decision.
func (c *cli) askGate(ctx context.Context, nc *nats.Conn, req bridge.GateRequest) (bridge.GateReply, error) {
	client, err := agent.New(nc)
	if err != nil {
		return bridge.GateReply{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, agent.GateWait)
	defer cancel()
	switch {
	case req.CurrentVersion: // which the agent client does not send
		var reply bridge.GateReply
		err := bridge.Request(ctx, nc, bridge.GateSubject(req.Tenant, req.JobID), req, &reply)
		return reply, err
	case req.Execute:
		return client.Execute(ctx, req.Tenant, req.JobID, req.TaskVersion, req.Tool, req.ProposalID)
	case req.ProposalID != "":
		var reply bridge.GateReply
		err := bridge.Request(ctx, nc, bridge.GateSubject(req.Tenant, req.JobID), req, &reply)
		return reply, err
	}
	return client.Gate(ctx, req.Tenant, req.JobID, req.TaskVersion, req.Tool)
}

// gateJob fills in what the gate request leaves out: the job's tenant,
// the one tenant whose record has the job, and, unless versionSet, asks
// the gate to decide at the job's current version (current_version: the
// gate reads it with the rest, so a cancel that bumped the version
// counts). It reads every tenant, not only those the CLI user may read: a
// question blocks the job's tools whoever looks, so a tenant left out
// could turn a refusal into "allowed". A job in no tenant or in several
// is an error: the gate fails closed rather than guess.
func (c *cli) gateJob(nc *nats.Conn, req *bridge.GateRequest, versionSet bool) error {
	req.CurrentVersion = !versionSet
	if req.Tenant != "" {
		return nil
	}
	tenants, err := c.jobTenants(nc, req.JobID)
	if err != nil {
		return err
	}
	switch len(tenants) {
	case 0:
		return fmt.Errorf("no tenant has a job %s, so the gate cannot tell which job you mean: name its tenant with --tenant", req.JobID)
	case 1:
		req.Tenant = tenants[0]
		return nil
	}
	return fmt.Errorf("job %s is in more than one tenant (%s): name one with --tenant", req.JobID, strings.Join(tenants, ", "))
}

// jobTenants are the tenants that have a question of the job, sorted.
func (c *cli) jobTenants(nc *nats.Conn, job string) ([]string, error) {
	tenants := map[string]bool{}
	req := bridge.ListRequest{JobID: job, State: "all", Limit: 200}
	for range 100 {
		var reply bridge.ListReply
		if err := c.request(nc, bridge.APIList, req, &reply); err != nil {
			return nil, err
		}
		if reply.Error != "" {
			return nil, errors.New(reply.Error)
		}
		for _, v := range reply.Questions {
			tenants[v.Tenant] = true
		}
		if reply.Next == "" {
			return slices.Sorted(maps.Keys(tenants)), nil
		}
		req.After = reply.Next
	}
	return nil, fmt.Errorf("job %s has too many questions to read its tenant: name it with --tenant", job)
}

// isSet reports whether the command line set the flag name.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
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
