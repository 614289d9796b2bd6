package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
)

func (c *cli) list(ctx context.Context, args []string) int {
	fs, url := c.flags("list")
	req := bridge.ListRequest{As: c.identity}
	fs.StringVar(&req.Tenant, "tenant", "", "only this tenant")
	fs.StringVar(&req.JobID, "job", "", "only this job")
	fs.StringVar(&req.State, "state", "pending", "pending, answered, declined, timed_out, cancelled, superseded, failed or all")
	fs.IntVar(&req.Limit, "limit", 50, "at most this many")
	if code, ok := c.parse(fs, args, false); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return c.usageError("list", "takes no arguments, not %q (filter with --tenant and --job)", fs.Arg(0))
	}
	nc, _, err := c.connect(*url)
	if err != nil {
		return c.fail("%v", err)
	}
	defer nc.Close()
	var reply bridge.ListReply
	if err := c.request(nc, bridge.APIList, req, &reply); err != nil {
		return c.fail("%v", err)
	}
	if reply.Error != "" {
		return c.fail("%s", reply.Error)
	}
	if len(reply.Questions) == 0 {
		fmt.Fprintln(c.stdout, "No questions.")
		return exitOK
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tJOB\tQUESTION\tVERSION\tSTATE\tASKED\tDEADLINE\tASKS")
	for _, v := range reply.Questions {
		text := "(you may see only that it waits)"
		if v.Restricted && v.Question == nil {
			text = "(restricted: for " + printable(restrictedTo(v.WaitsFor), false) + ")"
		}
		if v.Question != nil {
			text = printable(shorten(v.Question.Question, 60), false)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", v.Tenant, v.JobID, v.QuestionID, v.TaskVersion, v.State,
			v.AskedAt.Local().Format("2006-01-02 15:04"), v.Deadline.Local().Format("2006-01-02 15:04"), text)
	}
	tw.Flush()
	if reply.Next != "" {
		fmt.Fprintln(c.stdout, "(more: narrow with --tenant or --job)")
	}
	return exitOK
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// lookup finds a question the CLI user may see; job may be empty.
func (c *cli) lookup(nc *nats.Conn, tenant, job, question string) (*bridge.QuestionView, []bridge.AuditEntry, error) {
	var reply bridge.ShowReply
	if err := c.request(nc, bridge.APIShow, bridge.ShowRequest{As: c.identity, Tenant: tenant, JobID: job, QuestionID: question}, &reply); err != nil {
		return nil, nil, err
	}
	if reply.Error != "" {
		return nil, nil, errors.New(reply.Error)
	}
	return reply.Question, reply.Audit, nil
}

func (c *cli) show(ctx context.Context, args []string) int {
	fs, url := c.flags("show")
	tenant := fs.String("tenant", "", "tenant")
	if code, ok := c.parse(fs, args, false); !ok {
		return code
	}
	ref, _, err := questionArgs(fs.Args(), "", 0, 0)
	if err != nil {
		return c.usageError("show", "%v", err)
	}
	nc, _, err := c.connect(*url)
	if err != nil {
		return c.fail("%v", err)
	}
	defer nc.Close()
	v, audit, err := c.lookup(nc, *tenant, ref.Job, ref.Question)
	if err != nil {
		return c.fail("%v", err)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Question:\t%s/%s/%s (task version %d)\n", v.Tenant, v.JobID, v.QuestionID, v.TaskVersion)
	fmt.Fprintf(tw, "State:\t%s\n", v.State)
	fmt.Fprintf(tw, "Asked:\t%s\n", v.AskedAt.Local().Format(time.RFC1123))
	fmt.Fprintf(tw, "Deadline:\t%s\n", v.Deadline.Local().Format(time.RFC1123))
	if v.Question == nil {
		fmt.Fprintf(tw, "Asks:\t(you may see only that it waits)\n")
		if v.Restricted {
			row(tw, "Restricted to:", restrictedTo(v.WaitsFor))
		}
	} else {
		showQuestion(tw, v)
	}
	fmt.Fprintf(tw, "You may:\t%s\n", mayDo(v))
	tw.Flush()
	for _, e := range audit {
		who := e.By
		if who == "" {
			who = "askbridge"
		}
		fmt.Fprintf(c.stdout, "  %s  %s -> %s  %s  %s\n", e.At.Local().Format("2006-01-02 15:04:05"), orDash(e.From), e.To,
			printable(who, false), printable(e.Reason, false))
	}
	return exitOK
}

// restrictedTo names who may read a restricted question: the people it
// waits for, and admins (who stand for owners too).
func restrictedTo(people []string) string {
	return bridge.RestrictedReaders(people, func(id string) string { return id })
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func mayDo(v *bridge.QuestionView) string {
	switch {
	case v.CanAnswer:
		return "answer or decline"
	case v.CanDecline:
		return "decline"
	}
	return "nothing"
}

// describeField says what a field takes, as show prints it: "whole
// number from 1 to 9 (required) — Copies to print".
func describeField(f bridge.Field) string {
	desc := f.Kind
	switch {
	case f.Kind == bridge.FieldNumber && f.Integer:
		desc = "whole number"
	case f.Kind == bridge.FieldDate && f.DateTime:
		desc = "date and time"
	}
	if len(f.Options) > 0 {
		desc += ": " + strings.Join(f.Options, ", ")
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	switch {
	case f.Min != nil && f.Max != nil:
		desc += " from " + num(*f.Min) + " to " + num(*f.Max)
	case f.Min != nil:
		desc += " of at least " + num(*f.Min)
	case f.Max != nil:
		desc += " of at most " + num(*f.Max)
	}
	if f.MaxLength > 0 {
		desc += fmt.Sprintf(" of at most %d characters", f.MaxLength)
	}
	if f.Required {
		desc += " (required)"
	}
	if label := strings.TrimSpace(f.Label); label != "" && label != f.Name {
		desc += " — " + label
	}
	return desc
}

// showQuestion writes the rows of what v asks, for a reader who may read it.
func showQuestion(tw io.Writer, v *bridge.QuestionView) {
	q := v.Question
	row(tw, "Asks:", q.Question)
	if q.WhyItMatters != "" {
		row(tw, "Why it matters:", q.WhyItMatters)
	}
	if len(q.BlockedTools) > 0 {
		row(tw, "Blocks:", strings.Join(q.BlockedTools, ", "))
	}
	if len(q.AllowedTools) > 0 {
		row(tw, "Allows only:", strings.Join(q.AllowedTools, ", "))
	}
	if len(q.Answerers) > 0 {
		row(tw, "Answerers:", strings.Join(q.Answerers, ", "))
	}
	if len(q.Choices) > 0 {
		row(tw, "Choices:", strings.Join(q.Choices, ", "))
	}
	for _, f := range q.Fields {
		row(tw, "Field "+f.Name+":", describeField(f))
	}
	if q.IsApproval() && q.Proposal != nil {
		row(tw, "Proposal "+printable(q.Proposal.ID, false)+":", strings.Join(q.Proposal.Summary, " / "))
	}
	if v.Text != "" {
		row(tw, "Outcome:", v.Text)
	}
}
