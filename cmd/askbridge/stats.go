package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// stats prints the questions by state, the outbox backlog, and the
// clarification measures of the questions asked in the window
// (docs/contract.md, "Clarification metrics").
func (c *cli) stats(ctx context.Context, args []string) int {
	fs, url := c.flags("stats")
	since := fs.String("since", "7d", "how far back the clarification measures look: 7d, 24h, 90m (at most 90d)")
	tenant := fs.String("tenant", "", "one tenant's measures (default: every tenant)")
	if code, ok := c.parse(fs, args, false); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return c.usageError("stats", "takes no arguments, not %q", fs.Arg(0))
	}
	if d, err := bridge.ParseTimeout(*since); err != nil || d <= 0 {
		return c.usageError("stats", "--since: %q is not a positive duration such as 7d, 24h or 90m (at most 90d)", *since)
	}
	if *tenant != "" {
		if err := bridge.CheckToken("tenant", *tenant); err != nil {
			return c.usageError("stats", "%v", err)
		}
	}
	nc, _, err := c.connect(*url)
	if err != nil {
		return c.fail("%v", err)
	}
	defer nc.Close()
	var reply bridge.StatsReply
	if err := c.request(nc, bridge.APIStats, bridge.StatsRequest{Since: *since, Tenant: *tenant}, &reply); err != nil {
		return c.fail("%v", err)
	}
	if reply.Error != "" {
		return c.fail("%s", reply.Error)
	}
	if reply.ByState != nil {
		// Left out for a person with roles in some tenants only: they
		// count the whole service.
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		for _, st := range []string{bridge.StatePending, bridge.StateAnswered, bridge.StateDeclined, bridge.StateTimedOut,
			bridge.StateCancelled, bridge.StateSuperseded, bridge.StateFailed} {
			fmt.Fprintf(tw, "%s\t%d\n", st, reply.ByState[st])
		}
		fmt.Fprintf(tw, "outbox backlog\t%d\n", reply.OutboxBacklog)
		tw.Flush()
	}
	if cl := reply.Clarification; cl != nil {
		if reply.ByState != nil {
			fmt.Fprintln(c.stdout)
		}
		who := "every tenant"
		if *tenant != "" {
			who = "tenant " + *tenant
		}
		fmt.Fprintf(c.stdout, "Clarification, questions asked since %s (%s), %s:\n", cl.Since.UTC().Format("2006-01-02 15:04 UTC"), *since, who)
		printClarification(c.stdout, cl)
	}
	return exitOK
}

// printClarification is the measures as an aligned table: a row per
// tenant and agent, then the total.
func printClarification(w io.Writer, cl *bridge.Clarification) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tAGENT\tASKED\tRESOLVED\tDECLINED\tABANDONED\tREPEATED\tREOPENED\tANSWER P50\tANSWER P90\tGATE REFUSALS")
	row := func(m bridge.ClarificationMeasures) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Tenant, cmp.Or(m.Agent, "-"), m.Asked,
			percent(m.ResolutionRate), percent(m.DeclineRate), percent(m.AbandonmentRate), percent(m.RepetitionRate),
			percent(m.ReopenRate), wait(m.Answered, m.TimeToAnswerP50), wait(m.Answered, m.TimeToAnswerP90), refusals(m.GateRefusals))
	}
	for _, g := range cl.Groups {
		row(g)
	}
	total := cl.Total
	total.Tenant, total.Agent = "all", ""
	row(total)
	tw.Flush()
}

// percent is "16.7%".
func percent(rate float64) string { return strconv.FormatFloat(rate*100, 'f', 1, 64) + "%" }

// wait is a time to answer such as "2m0s", or "-" when nothing was answered.
func wait(answered int64, seconds float64) string {
	if answered == 0 {
		return "-"
	}
	return time.Duration(seconds * float64(time.Second)).Round(time.Second).String()
}

// refusals is "approval_required 1, blocked_by_question 2", or "-".
func refusals(by map[string]int64) string {
	var parts []string
	for code, n := range by {
		parts = append(parts, code+" "+strconv.FormatInt(n, 10))
	}
	if len(parts) == 0 {
		return "-"
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
