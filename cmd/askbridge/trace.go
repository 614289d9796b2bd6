package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
)

// tracePages bounds the pages trace follows: 100 of the API's largest.
const tracePages = 100

// trace prints a job's timeline from the record (docs/contract.md
// "ask.v1.api.trace").
func (c *cli) trace(ctx context.Context, args []string) int {
	fs, url := c.flags("trace")
	tenant := fs.String("tenant", "", "the job's tenant (default: found from the job)")
	asJSON := fs.Bool("json", false, "print the entries as the API's reply, in JSON")
	as := fs.String("as", "", "see the trace as this identity sees it (default: you, "+c.identity+")")
	if code, ok := c.parse(fs, args, false); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return c.usageError("trace", "takes one job")
	}
	job := fs.Arg(0)
	if err := checkTokens([]string{job}, "job"); err != nil {
		return c.usageError("trace", "%v", err)
	}
	req := bridge.TraceRequest{As: c.identity, Tenant: *tenant, JobID: job}
	if *as != "" {
		req.As = *as
	}
	nc, _, err := c.connect(*url)
	if err != nil {
		return c.fail("%v", err)
	}
	defer nc.Close()
	guessed := req.Tenant == ""
	if guessed {
		if req.Tenant, err = c.jobTenant(nc, req.As, job); err != nil {
			return c.fail("%v", err)
		}
	}
	entries, err := c.traceEntries(nc, req)
	if err != nil && guessed && req.Tenant == "default" {
		return c.fail("%v (none of its questions is in a tenant you can see: name its tenant with --tenant)", err)
	}
	if err != nil {
		return c.fail("%v", err)
	}
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(bridge.TraceReply{Entries: entries}); err != nil {
			return c.fail("%v", err)
		}
		return exitOK
	}
	writeTrace(c.stdout, entries, time.Local)
	return exitOK
}

// jobTenant finds the tenant of a job among the questions as may see;
// "default" (ask's) when none holds it.
func (c *cli) jobTenant(nc *nats.Conn, as, job string) (string, error) {
	var reply bridge.ListReply
	if err := c.request(nc, bridge.APIList, bridge.ListRequest{As: as, JobID: job, State: "all", Limit: 200}, &reply); err != nil {
		return "", err
	}
	if reply.Error != "" {
		return "", fmt.Errorf("%s", reply.Error)
	}
	var tenants []string
	for _, v := range reply.Questions {
		if !slices.Contains(tenants, v.Tenant) {
			tenants = append(tenants, v.Tenant)
		}
	}
	switch len(tenants) {
	case 0:
		return "default", nil
	case 1:
		return tenants[0], nil
	}
	return "", fmt.Errorf("job %s is in more than one tenant you can see (%s): name one with --tenant", job, strings.Join(tenants, ", "))
}

// traceEntries reads every page of a job's trace.
func (c *cli) traceEntries(nc *nats.Conn, req bridge.TraceRequest) ([]bridge.TraceEntry, error) {
	entries := []bridge.TraceEntry{}
	for range tracePages {
		var reply bridge.TraceReply
		if err := c.request(nc, bridge.APITrace, req, &reply); err != nil {
			return nil, err
		}
		if reply.Error != "" {
			return nil, fmt.Errorf("%s", reply.Error)
		}
		entries = append(entries, reply.Entries...)
		if reply.Next == "" || len(reply.Entries) == 0 {
			return entries, nil
		}
		req.After = reply.Next
	}
	return entries, fmt.Errorf("trace: more than %d pages; read the rest with ask.v1.api.trace", tracePages)
}

// writeTrace prints entries one a line, aligned: time (with the date when
// they span days), kind, question, and what happened.
func writeTrace(w io.Writer, entries []bridge.TraceEntry, loc *time.Location) {
	if len(entries) == 0 {
		fmt.Fprintln(w, "Nothing recorded.")
		return
	}
	layout := "15:04:05.000"
	first, last := entries[0].At.In(loc), entries[len(entries)-1].At.In(loc)
	if first.Format(time.DateOnly) != last.Format(time.DateOnly) {
		layout = "2006-01-02 15:04:05.000"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.At.In(loc).Format(layout), printable(e.Kind, false),
			orDash(printable(e.QuestionID, false)), printable(traceWhat(e), false))
	}
	tw.Flush()
}

// traceWhat is an entry's last column: its text, and what an asked
// question blocks or allows while it waits.
func traceWhat(e bridge.TraceEntry) string {
	if e.Kind != bridge.TraceAsked {
		return e.Text
	}
	what := shorten(e.Text, 100)
	if len(e.BlockedTools) > 0 {
		what += " (blocks " + strings.Join(e.BlockedTools, ", ") + ")"
	}
	if len(e.AllowedTools) > 0 {
		what += " (allows only " + strings.Join(e.AllowedTools, ", ") + ")"
	}
	return what
}
