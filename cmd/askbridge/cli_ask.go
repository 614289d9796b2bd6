package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
)

// parseField reads --field name:kind[:options]. A trailing * on the name
// makes the field required; choice kinds take comma-separated options,
// number takes min..max, and int is a number that takes whole numbers
// only (the field's integer setting), with whole bounds.
func parseField(spec string) (bridge.Field, error) {
	parts := strings.SplitN(spec, ":", 3)
	if len(parts) < 2 {
		return bridge.Field{}, fmt.Errorf("--field %q: write name:kind[:options], e.g. copies:int:1..9 or size:choice:S,M,L", spec)
	}
	f := bridge.Field{Name: parts[0], Kind: parts[1]}
	if name, ok := strings.CutSuffix(f.Name, "*"); ok {
		f.Name, f.Required = name, true
	}
	if f.Kind == "int" || f.Kind == "integer" {
		f.Kind, f.Integer = bridge.FieldNumber, true
	}
	if len(parts) < 3 || parts[2] == "" {
		return f, nil
	}
	switch f.Kind {
	case bridge.FieldChoice, bridge.FieldMultiChoice:
		for _, o := range strings.Split(parts[2], ",") {
			f.Options = append(f.Options, strings.TrimSpace(o))
		}
	case bridge.FieldNumber:
		if err := parseBounds(&f, parts[2]); err != nil {
			return bridge.Field{}, fmt.Errorf("--field %q: %w", spec, err)
		}
	case bridge.FieldDate:
		if parts[2] != "time" {
			return bridge.Field{}, fmt.Errorf("--field %q: a date field takes only :time (date and time)", spec)
		}
		f.DateTime = true
	default:
		return bridge.Field{}, fmt.Errorf("--field %q: a %s field takes no options", spec, f.Kind)
	}
	return f, nil
}

// parseBounds sets a number field's min and max from "min..max", either
// left out ("1..", "..9").
func parseBounds(f *bridge.Field, s string) error {
	lo, hi, ok := strings.Cut(s, "..")
	if !ok {
		return errors.New("a number's bounds are min..max, e.g. 1..9")
	}
	for _, b := range []struct {
		s   string
		dst **float64
	}{{lo, &f.Min}, {hi, &f.Max}} {
		if b.s == "" {
			continue
		}
		v, err := strconv.ParseFloat(b.s, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return fmt.Errorf("%q is not a number", b.s)
		}
		if f.Integer && v != math.Trunc(v) {
			return fmt.Errorf("%q is not a whole number: an int field's bounds are whole numbers", b.s)
		}
		*b.dst = &v
	}
	return nil
}

// askOptions are ask's flags beyond the question's own.
type askOptions struct {
	url    *string
	noWait *bool
}

// askArgs reads ask's command line into a question, checked as the
// runtime would check it; code is the exit code when it is nil.
func (c *cli) askArgs(args []string) (q *bridge.Question, o askOptions, code int) {
	fs, url := c.flags("ask")
	q = &bridge.Question{}
	var choices, fields, answerers, blocks multiFlag
	fs.StringVar(&q.Tenant, "tenant", "default", "tenant")
	fs.StringVar(&q.JobID, "job", "", "job id (required)")
	fs.StringVar(&q.QuestionID, "id", "", "question id (default: a new one)")
	fs.Int64Var(&q.TaskVersion, "version", 1, "task version")
	fs.Var(&choices, "choice", "a choice (repeat)")
	fs.Var(&fields, "field", "a typed field name:kind[:options] (repeat); name* is required, e.g. copies:int:1..9, size:choice:S,M,L, at:date:time")
	fs.Var(&answerers, "answerer", "an identity who may answer, e.g. slack:U0123, or a person of ASK_PEOPLE, e.g. person:kevin (repeat)")
	fs.Var(&blocks, "blocks", "a tool this question blocks, e.g. send_report (repeat)")
	fs.StringVar(&q.Owner, "owner", "", "the job's owner identity")
	fs.StringVar(&q.Visibility, "visibility", "", "tenant (default) or restricted: only its answerers, owner, admins and owners may read it")
	fs.StringVar(&q.WhyItMatters, "why", "", "why the answer matters")
	fs.StringVar(&q.Priority, "priority", "", "blocking (default), high, medium or low: its place in the job's queue")
	fs.StringVar(&q.Timeout, "timeout", "", "how long to wait, e.g. 30m, 4h, 2d (default 24h)")
	fs.StringVar(&q.OnTimeout, "on-timeout", "", "continue (default) or fail")
	fs.StringVar(&q.Agent, "agent", "askbridge-cli", "the asking agent's name")
	slackChannel := fs.String("slack-channel", "", "Slack channel to ask in")
	discordChannel := fs.String("discord-channel", "", "Discord channel id to ask in")
	o = askOptions{url: url, noWait: fs.Bool("no-wait", false, "wait only until the runtime has recorded the question (or refused it), then print its tenant, job and id")}
	proposal := addProposalFlags(fs)
	// Every dashed word is a flag, so a mistyped one is an error rather
	// than words of the question; a question starting with - follows --.
	if code, ok := c.parse(fs, args, false); !ok {
		return nil, o, code
	}
	q.Question = strings.Join(fs.Args(), " ")
	q.Choices, q.Answerers, q.BlockedTools = choices, answerers, blocks
	if err := proposal.apply(q, time.Now()); err != nil {
		return nil, o, c.fail("%v", err)
	}
	for _, spec := range fields {
		f, err := parseField(spec)
		if err != nil {
			return nil, o, c.usageError("ask", "%v", err)
		}
		q.Fields = append(q.Fields, f)
	}
	if *slackChannel != "" || *discordChannel != "" {
		q.Route = &bridge.Route{}
		if *slackChannel != "" {
			q.Route.Slack = &bridge.SlackRoute{Channel: *slackChannel}
		}
		if *discordChannel != "" {
			q.Route.Discord = &bridge.DiscordRoute{ChannelID: *discordChannel}
		}
	}
	switch {
	case q.JobID == "":
		return nil, o, c.usageError("ask", "--job is required: the job the question is of")
	case strings.TrimSpace(q.Question) == "":
		return nil, o, c.usageError("ask", "takes the question: write it for a person who has not seen the conversation")
	}
	if q.QuestionID == "" {
		q.QuestionID = newID("q-")
	}
	// Refuse here what the runtime would refuse, in the same words.
	if err := bridge.ValidateQuestion(q); err != nil {
		return nil, o, c.fail("%v", err)
	}
	return q, o, exitOK
}

func (c *cli) ask(ctx context.Context, args []string) int {
	q, o, code := c.askArgs(args)
	if q == nil {
		return code
	}
	nc, _, err := c.connect(*o.url)
	if err != nil {
		return c.fail("%v", err)
	}
	defer nc.Close()
	client, err := agent.New(nc)
	if err != nil {
		return c.fail("%v", err)
	}
	if *o.noWait {
		return c.askNoWait(ctx, nc, client, q)
	}
	fmt.Fprintf(c.stderr, "asked %s/%s/%s; waiting for an answer...\n", q.Tenant, q.JobID, q.QuestionID)
	out, err := client.Ask(ctx, q)
	if err != nil {
		return c.waitFailed(ctx, err, q.Tenant, q.JobID, q.QuestionID)
	}
	return c.outcome(out)
}
