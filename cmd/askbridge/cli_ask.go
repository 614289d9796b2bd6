package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// parseField reads --field name:kind[:options]. A trailing * on the name
// makes the field required; choice kinds take comma-separated options,
// number takes min..max.
func parseField(spec string) (bridge.Field, error) {
	parts := strings.SplitN(spec, ":", 3)
	if len(parts) < 2 {
		return bridge.Field{}, fmt.Errorf("--field %q: write name:kind[:options], e.g. copies:number:1..9 or size:choice:S,M,L", spec)
	}
	f := bridge.Field{Name: parts[0], Kind: parts[1]}
	if name, ok := strings.CutSuffix(f.Name, "*"); ok {
		f.Name, f.Required = name, true
	}
	if len(parts) == 3 && parts[2] != "" {
		switch f.Kind {
		case bridge.FieldChoice, bridge.FieldMultiChoice:
			for _, o := range strings.Split(parts[2], ",") {
				f.Options = append(f.Options, strings.TrimSpace(o))
			}
		case bridge.FieldNumber:
			lo, hi, ok := strings.Cut(parts[2], "..")
			if !ok {
				return bridge.Field{}, fmt.Errorf("--field %q: a number's bounds are min..max, e.g. 1..9", spec)
			}
			for _, b := range []struct {
				s   string
				dst **float64
			}{{lo, &f.Min}, {hi, &f.Max}} {
				if b.s == "" {
					continue
				}
				v, err := strconv.ParseFloat(b.s, 64)
				if err != nil {
					return bridge.Field{}, fmt.Errorf("--field %q: %q is not a number", spec, b.s)
				}
				*b.dst = &v
			}
		case bridge.FieldDate:
			if parts[2] != "time" {
				return bridge.Field{}, fmt.Errorf("--field %q: a date field takes only :time (date and time)", spec)
			}
			f.DateTime = true
		default:
			return bridge.Field{}, fmt.Errorf("--field %q: a %s field takes no options", spec, f.Kind)
		}
	}
	return f, nil
}

func (c *cli) ask(ctx context.Context, args []string) int {
	fs, url := c.flags("ask")
	q := bridge.Question{}
	var choices, fields, answerers multiFlag
	fs.StringVar(&q.Tenant, "tenant", "default", "tenant")
	fs.StringVar(&q.JobID, "job", "", "job id (required)")
	fs.StringVar(&q.QuestionID, "id", "", "question id (default: a new one)")
	fs.Int64Var(&q.TaskVersion, "version", 1, "task version")
	fs.Var(&choices, "choice", "a choice (repeat)")
	fs.Var(&fields, "field", "a typed field name:kind[:options] (repeat); name* is required")
	fs.Var(&answerers, "answerer", "an identity who may answer, e.g. slack:U0123, or a person of ASK_PEOPLE, e.g. person:kevin (repeat)")
	var blocks multiFlag
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
	noWait := fs.Bool("no-wait", false, "publish and print the question id without waiting")
	proposal := addProposalFlags(fs)
	// Every dashed word is a flag, so a mistyped one is an error rather
	// than words of the question; a question starting with - follows --.
	if err := parseFlags(fs, args, false); err != nil {
		return flagExit(err)
	}
	q.Question = strings.Join(fs.Args(), " ")
	q.Choices, q.Answerers, q.BlockedTools = choices, answerers, blocks
	if err := proposal.apply(&q, time.Now()); err != nil {
		return c.fail("%v", err)
	}
	for _, spec := range fields {
		f, err := parseField(spec)
		if err != nil {
			return c.fail("%v", err)
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
	if q.QuestionID == "" {
		q.QuestionID = newID("q-")
	}
	// Refuse here what the runtime would refuse, in the same words.
	if err := bridge.ValidateQuestion(&q); err != nil {
		return c.fail("%v", err)
	}
	client, closeNATS, err := c.agentClient(*url)
	if err != nil {
		return c.fail("%v", err)
	}
	defer closeNATS()
	if *noWait {
		if err := client.Publish(ctx, &q); err != nil {
			return c.fail("%v", err)
		}
		fmt.Fprintf(c.stdout, "%s %s %s\n", q.Tenant, q.JobID, q.QuestionID)
		return exitOK
	}
	fmt.Fprintf(c.stderr, "asked %s/%s/%s; waiting for an answer...\n", q.Tenant, q.JobID, q.QuestionID)
	out, err := client.Ask(ctx, &q)
	if err != nil {
		return c.fail("%v", err)
	}
	fmt.Fprintln(c.stdout, out.Text)
	switch out.Outcome {
	case bridge.OutcomeAnswered:
		return exitOK
	case bridge.OutcomeDeclined:
		return exitDeclined
	case bridge.OutcomeTimedOut:
		return exitTimedOut
	case bridge.OutcomeFailed:
		if out.Code == bridge.CodeQuestionTimedOut {
			// --on-timeout fail: the job fails, but what happened is still
			// that nobody answered in time, not an error of askbridge's.
			return exitTimedOut
		}
	}
	return exitError
}
