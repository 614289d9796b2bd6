package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// proposalFlags are ask's flags that make the question an approval of a
// proposal, or close the job's tools while it waits.
type proposalFlags struct {
	id, action, currency, expires string
	amount                        float64
	summary, args, allows         multiFlag
	fs                            *flag.FlagSet
}

func addProposalFlags(fs *flag.FlagSet) *proposalFlags {
	p := &proposalFlags{fs: fs}
	fs.StringVar(&p.id, "proposal", "", "ask to approve the proposal with this id (an approval: approve or deny)")
	fs.StringVar(&p.action, "action", "", "the proposal's action, the tool it lets the job run, e.g. refund")
	fs.Var(&p.summary, "summary", "a line of the proposal's summary (repeat)")
	fs.Var(&p.args, "arg", "an argument of the action as key=value, the value JSON or text (repeat)")
	fs.Float64Var(&p.amount, "amount", 0, "the proposal's amount")
	fs.StringVar(&p.currency, "currency", "", "the amount's currency, e.g. USD")
	fs.StringVar(&p.expires, "expires", "", "when the proposal expires: a duration from now (2h) or a time (RFC 3339)")
	fs.Var(&p.allows, "allows", "a tool the job may still call while the question waits; every other is blocked (repeat)")
	return p
}

// apply sets what the flags say on q.
func (p *proposalFlags) apply(q *bridge.Question, now time.Time) error {
	q.AllowedTools = p.allows
	if p.id == "" {
		for _, name := range []string{"action", "summary", "arg", "amount", "currency", "expires"} {
			if p.set(name) {
				return fmt.Errorf("--%s: describes a proposal; give --proposal ID too", name)
			}
		}
		return nil
	}
	pr := &bridge.Proposal{ID: p.id, Action: p.action, Summary: p.summary, Currency: p.currency}
	if p.set("amount") {
		pr.Amount = &p.amount
	}
	if len(p.args) > 0 {
		args := map[string]json.RawMessage{}
		for _, kv := range p.args {
			key, value, ok := strings.Cut(kv, "=")
			if !ok || key == "" {
				return fmt.Errorf("--arg %q: must be key=value", kv)
			}
			if !json.Valid([]byte(value)) {
				value = mustJSON(value)
			}
			args[key] = json.RawMessage(value)
		}
		pr.Arguments = json.RawMessage(mustJSON(args))
	}
	if p.expires != "" {
		at, err := parseWhen(p.expires, now)
		if err != nil {
			return fmt.Errorf("--expires: %w", err)
		}
		pr.ExpiresAt = at
	}
	q.Kind, q.Proposal = bridge.KindApproval, pr
	return nil
}

func (p *proposalFlags) set(name string) bool {
	found := false
	p.fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// parseWhen reads a time as a duration from now or an RFC 3339 time.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if d, err := bridge.ParseTimeout(s); err == nil {
		return now.Add(d), nil
	}
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (2h, 3d) nor a time (2026-12-02T15:00:00Z)", s)
	}
	return at, nil
}

// executed reports what became of an executed proposal.
func (c *cli) executed(ctx context.Context, args []string) int {
	fs, url := c.flags("executed")
	e := bridge.Execution{}
	fs.StringVar(&e.Tenant, "tenant", "default", "tenant")
	fs.StringVar(&e.Result, "result", bridge.ResultSucceeded, "succeeded or failed")
	fs.StringVar(&e.Detail, "detail", "", "what happened, as people should read it on the card")
	if code, ok := c.parse(fs, args, true); !ok {
		return code
	}
	if fs.NArg() != 2 {
		return c.usageError("executed", "takes a job and a proposal")
	}
	e.JobID, e.ProposalID = fs.Arg(0), fs.Arg(1)
	if err := checkTokens([]string{e.JobID, e.ProposalID}, "job", "proposal"); err != nil {
		return c.usageError("executed", "%v", err)
	}
	client, closeNATS, err := c.agentClient(*url)
	if err != nil {
		return c.fail("%v", err)
	}
	defer closeNATS()
	if err := client.ReportExecution(ctx, e); err != nil {
		return c.fail("%v", err)
	}
	fmt.Fprintf(c.stdout, "reported %s of proposal %s in %s/%s\n", e.Result, e.ProposalID, e.Tenant, e.JobID)
	return exitOK
}
