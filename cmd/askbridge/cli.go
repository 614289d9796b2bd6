package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"net"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/bridge/principal"
	"github.com/askbridge/askbridge/config"
)

// cli runs the command-line tools. Every tool speaks NATS, never the store.
type cli struct {
	stdout, stderr io.Writer
	// identity is who the tools act as: cli:<os user>.
	identity string
	// natsURL overrides the environment (tests, --nats).
	natsURL string
	// natsOpts are added to connect's options (askbridge mcp, which
	// lives as long as its client, reconnects for ever).
	natsOpts []nats.Option
	// creds is --creds, a NATS credentials file.
	creds string
	// dataDir overrides ASK_DATA_DIR (tests).
	dataDir string
	// credKind is the kind of the credential connect presented, when read
	// from a file: a person's may not read the job's events.
	credKind string
}

// decisionWait bounds how long answer and decline wait for the runtime.
const decisionWait = 15 * time.Second

func (c *cli) flags(name string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("askbridge "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	url := fs.String("nats", "", "NATS URL (default: ASK_NATS_URL, else the embedded server at ASK_NATS_LISTEN)")
	fs.StringVar(&c.creds, "creds", c.creds, "NATS credentials file (default: ASK_NATS_CREDS; without one, the data directory's owner acts as an admin)")
	return fs, url
}

func (c *cli) fail(format string, args ...any) int {
	// Refusals quote what agents and people wrote: shown, never obeyed.
	fmt.Fprintln(c.stderr, printable("askbridge: "+fmt.Sprintf(format, args...), true))
	return exitError
}

// printable is text written by agents or people made safe for a terminal:
// control characters, which could clear the screen, retitle the window or
// write the clipboard, and bidirectional overrides, which could show text
// in another order than it is, appear as escapes such as \x1b. Line breaks
// stay when keepLines, else they and tabs become spaces (a table cell).
func printable(s string, keepLines bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' && keepLines:
			b.WriteRune(r)
		case r == '\n' || r == '\t' || r == '\r':
			b.WriteByte(' ')
		case r == utf8.RuneError, unicode.IsControl(r), unicode.Is(unicode.Bidi_Control, r):
			q := strconv.QuoteToASCII(string(r))
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// row writes label and value as one row of tw, a value of several lines as
// several rows, each line made printable.
func row(tw io.Writer, label, value string) {
	for i, line := range strings.Split(strings.ReplaceAll(value, "\r\n", "\n"), "\n") {
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(tw, "%s\t%s\n", label, printable(line, false))
	}
}

// agentClient connects as connect does and makes the agent client the
// commands that act as an agent use; closeNATS closes the connection.
func (c *cli) agentClient(flagURL string) (client *agent.Client, closeNATS func(), err error) {
	nc, _, err := c.connect(flagURL)
	if err != nil {
		return nil, nil, err
	}
	if client, err = agent.New(nc); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return client, nc.Close, nil
}

// connect opens NATS: the flag, then ASK_NATS_URL, then ASK_NATS_LISTEN.
func (c *cli) connect(flagURL string) (*nats.Conn, jetstream.JetStream, error) {
	url := flagURL
	if url == "" {
		url = c.natsURL
	}
	opts, err := c.credentials()
	if err != nil {
		return nil, nil, err
	}
	if url == "" {
		url = os.Getenv("ASK_NATS_URL")
	}
	if url == "" {
		listen := os.Getenv("ASK_NATS_LISTEN")
		if listen == "" {
			listen = "127.0.0.1:4222"
		}
		host, port, err := net.SplitHostPort(listen)
		if err != nil {
			return nil, nil, fmt.Errorf("ASK_NATS_LISTEN %q is not host:port", listen)
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
		url = "nats://" + net.JoinHostPort(host, port)
	}
	nc, err := nats.Connect(url, append(append(opts, nats.Name("askbridge-cli")), c.natsOpts...)...)
	if err != nil {
		why := err.Error()
		if ue := (*neturl.Error)(nil); errors.As(err, &ue) {
			why = "the URL cannot be read" // its text would repeat the URL, password and all
		}
		if errors.Is(err, nats.ErrAuthorization) {
			return nil, nil, fmt.Errorf("NATS at %s refused the connection: %s; an admin gives you credentials with 'askbridge creds person --as cli:%s --out FILE' (or 'creds agent'), which you pass with --creds FILE or ASK_NATS_CREDS", redactURLs(url), why, strings.TrimPrefix(c.identity, "cli:"))
		}
		return nil, nil, fmt.Errorf("cannot reach NATS at %s (is 'askbridge serve' running?): %s", redactURLs(url), why)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// credentials are the options that present the CLI's credentials:
// --creds or ASK_NATS_CREDS, read with the inbox prefix they allow; else,
// for the data directory's owner, an admin credential made from its keys
// in memory (docs/contract.md, "Principals on the bus"); else none.
func (c *cli) credentials() ([]nats.Option, error) {
	if path := cmp.Or(c.creds, os.Getenv("ASK_NATS_CREDS")); path != "" {
		name, kind, err := principal.ReadCreds(path)
		if err != nil {
			return nil, err
		}
		c.credKind = kind
		return []nats.Option{nats.UserCredentials(path), nats.CustomInboxPrefix(principal.InboxPrefix(name))}, nil
	}
	keys, err := principal.LoadKeys(cmp.Or(c.dataDir, os.Getenv("ASK_DATA_DIR"), "data"))
	if err != nil {
		return nil, nil // not the owner here: try without, and say how to get them
	}
	admin, err := keys.Mint(principal.Spec{Kind: principal.KindAdmin, Name: "cli-owner"}, time.Now())
	if err != nil {
		return nil, err
	}
	return []nats.Option{nats.UserJWTAndSeed(admin.JWT, admin.Seed)}, nil
}

// redactURLs is a comma-separated list of NATS URLs with their passwords
// and tokens hidden, for messages.
func redactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if !strings.Contains(p, "://") {
			// nats.go reads user:pw@host as nats://user:pw@host; url.Parse
			// would read "user" as the scheme and find no password.
			p = "nats://" + p
		}
		u, err := neturl.Parse(p)
		switch {
		case err != nil:
			parts[i] = "(an unreadable URL)"
		case u.User == nil:
		default:
			if _, has := u.User.Password(); !has {
				u.User = neturl.User("xxxxx") // a token alone
			}
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

// multiFlag collects a repeated string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

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

func newID(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func (c *cli) request(nc *nats.Conn, subject string, req, reply any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := bridge.Request(ctx, nc, subject, req, reply)
	if errors.Is(err, nats.ErrNoResponders) {
		return errors.New("no askbridge runtime answered (is 'askbridge serve' running?)")
	}
	return err
}

func (c *cli) list(ctx context.Context, args []string) int {
	fs, url := c.flags("list")
	req := bridge.ListRequest{As: c.identity}
	fs.StringVar(&req.Tenant, "tenant", "", "only this tenant")
	fs.StringVar(&req.JobID, "job", "", "only this job")
	fs.StringVar(&req.State, "state", "pending", "pending, answered, declined, timed_out, cancelled, superseded, failed or all")
	fs.IntVar(&req.Limit, "limit", 50, "at most this many")
	if err := parseFlags(fs, args, false); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 {
		return c.fail("list takes no arguments, not %q (filter with --tenant and --job)", fs.Arg(0))
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
	if err := parseFlags(fs, args, false); err != nil {
		return flagExit(err)
	}
	if fs.NArg() != 1 {
		return c.fail("show takes one question: [JOB/]QUESTION")
	}
	job, question, found := strings.Cut(fs.Arg(0), "/")
	if !found {
		job, question = "", job
	}
	nc, _, err := c.connect(*url)
	if err != nil {
		return c.fail("%v", err)
	}
	defer nc.Close()
	v, audit, err := c.lookup(nc, *tenant, job, question)
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
			desc := f.Kind
			if len(f.Options) > 0 {
				desc += ": " + strings.Join(f.Options, ", ")
			}
			if f.Required {
				desc += " (required)"
			}
			row(tw, "Field "+f.Name+":", desc)
		}
		if q.IsApproval() && q.Proposal != nil {
			row(tw, "Proposal "+printable(q.Proposal.ID, false)+":", strings.Join(q.Proposal.Summary, " / "))
		}
		if v.Text != "" {
			row(tw, "Outcome:", v.Text)
		}
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

func (c *cli) answer(ctx context.Context, args []string) int {
	fs, url := c.flags("answer")
	tenant := fs.String("tenant", "", "tenant (default: found from the job and question)")
	// Flags may follow the answer, as they may follow decline's ids; only
	// these are taken, so an answer such as "-5" stays the answer.
	if err := parseFlags(fs, args, true); err != nil {
		return flagExit(err)
	}
	if fs.NArg() < 3 {
		return c.fail("answer takes JOB QUESTION ANSWER")
	}
	text := strings.Join(fs.Args()[2:], " ")
	var raw json.RawMessage
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
		raw = json.RawMessage(t)
	} else {
		raw, _ = json.Marshal(text)
	}
	a := bridge.AnswerAttempt{Action: bridge.ActionAnswer, Answer: raw}
	return c.propose(ctx, *url, *tenant, fs.Arg(0), fs.Arg(1), a)
}

func (c *cli) decline(ctx context.Context, args []string) int {
	fs, url := c.flags("decline")
	tenant := fs.String("tenant", "", "tenant (default: found from the job and question)")
	comment := fs.String("comment", "", "why you decline")
	if err := parseFlags(fs, args, false); err != nil {
		return flagExit(err)
	}
	if fs.NArg() != 2 {
		return c.fail("decline takes JOB QUESTION [--comment REASON]")
	}
	return c.propose(ctx, *url, *tenant, fs.Arg(0), fs.Arg(1), bridge.AnswerAttempt{Action: bridge.ActionDecline, Comment: *comment})
}

// parseFlags parses args with fs, taking fs's flags wherever they stand
// among the arguments, as people write them ("show JOB/Q --tenant acme",
// "ask 'Which colour?' --choice red"). With onlyKnown only fs's own flags
// move, and every other argument, dashes and all, stays an argument (an
// answer such as "-5", a question's words); else any dashed word is taken
// for a flag, and an unknown one is an error.
func parseFlags(fs *flag.FlagSet, args []string, onlyKnown bool) error {
	flags := map[string]bool{"h": false, "help": false}
	fs.VisitAll(func(f *flag.Flag) {
		b, ok := f.Value.(interface{ IsBoolFlag() bool })
		flags[f.Name] = !ok || !b.IsBoolFlag()
	})
	return fs.Parse(reorder(args, flags, onlyKnown))
}

// flagExit is the exit code for a command line that did not parse: 0 for
// -h and --help, which print the command's flags as asked, else 2.
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitConfig
}

// reorder moves flags written after positional arguments to the front, so
// that "decline JOB Q --comment why" parses as people write it; flags maps
// the flags' names to whether they take a value (--tenant acme or
// --tenant=acme). With onlyKnown only those move, and every other argument,
// dashes and all, stays where it is. "--" ends the flags; the arguments
// follow one, so none of them is read as a flag.
func reorder(args []string, flags map[string]bool, onlyKnown bool) []string {
	var moved, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		valued, known := flags[name]
		if strings.HasPrefix(a, "-") && len(a) > 1 && (!onlyKnown || known) {
			moved = append(moved, a)
			if !hasValue && valued && i+1 < len(args) {
				moved = append(moved, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	if len(pos) == 0 {
		return moved
	}
	return append(append(moved, "--"), pos...)
}

// propose publishes an attempt as the CLI user and waits for the runtime's
// decision on it.
func (c *cli) propose(ctx context.Context, url, tenant, job, question string, a bridge.AnswerAttempt) int {
	if err := bridge.CheckToken("job", job); err != nil {
		return c.fail("%v", err)
	}
	if err := bridge.CheckToken("question", question); err != nil {
		return c.fail("%v", err)
	}
	nc, js, err := c.connect(url)
	if err != nil {
		return c.fail("%v", err)
	}
	defer nc.Close()
	v, _, err := c.lookup(nc, tenant, job, question)
	if err != nil {
		return c.fail("%v", err)
	}
	var text string
	if a.Action == bridge.ActionAnswer && v.Question != nil && v.Question.IsApproval() && json.Unmarshal(a.Answer, &text) == nil {
		// An approval takes "approve" or "deny [reason]".
		if action, reason, ok := bridge.ApprovalAction(text); ok {
			a.Action, a.Answer, a.Comment = action, nil, reason
		}
	}
	a = engine.NewAttempt(bridge.PlatformCLI, newID("cli-"),
		engine.Question{Tenant: v.Tenant, JobID: v.JobID, QuestionID: v.QuestionID, TaskVersion: v.TaskVersion},
		engine.Person{Identity: c.identity}, a.Action, a.Answer, a.Comment, time.Now(), nil)

	decided := make(chan bridge.Event, 1)
	if c.credKind != principal.KindPerson {
		sub, err := nc.Subscribe(bridge.EventSubject(a.Tenant, a.JobID), func(m *nats.Msg) {
			var ev bridge.Event
			if json.Unmarshal(m.Data, &ev) == nil && ev.AttemptID == a.AttemptID {
				select {
				case decided <- ev:
				default:
				}
			}
		})
		if err != nil {
			return c.fail("%v", err)
		}
		defer sub.Unsubscribe()
	}
	// A person's credential may not read the job's events: the runtime
	// tells this inbox too what became of the attempt.
	inbox := nc.NewInbox()
	direct, err := nc.Subscribe(inbox, func(m *nats.Msg) {
		ev := bridge.Event{Type: m.Header.Get(bridge.HeaderDecision), Text: m.Header.Get(bridge.HeaderDecisionText), AttemptID: string(m.Data)}
		if ev.Type != "" && ev.AttemptID == a.AttemptID {
			select {
			case decided <- ev:
			default:
			}
		}
	})
	if err != nil {
		return c.fail("%v", err)
	}
	defer direct.Unsubscribe()
	if err := nc.Flush(); err != nil {
		return c.fail("%v", err)
	}
	data, err := json.Marshal(a)
	if err != nil {
		return c.fail("%v", err)
	}
	msg := &nats.Msg{Subject: bridge.AnswerSubject(a.Tenant, a.JobID), Data: data, Header: nats.Header{bridge.HeaderDecidedTo: []string{inbox}}}
	if _, err := js.PublishMsg(ctx, msg, jetstream.WithMsgID("attempt-"+a.AttemptID)); err != nil {
		return c.fail("%v", err)
	}
	select {
	case ev := <-decided:
		if ev.Type == bridge.EventRefused {
			return c.fail("refused: %s", ev.Text)
		}
		// "answered", "declined", "approval_recorded" as words: "Approval recorded".
		what := strings.ReplaceAll(ev.Type, "_", " ")
		fmt.Fprintf(c.stdout, "%s: %s\n", strings.ToUpper(what[:1])+what[1:], printable(ev.Text, true))
		return exitOK
	case <-time.After(decisionWait):
		return c.fail("sent, but no decision arrived within %v; check with 'askbridge show %s/%s'", decisionWait, a.JobID, a.QuestionID)
	case <-ctx.Done():
		return c.fail("interrupted; the attempt was sent")
	}
}

func (c *cli) cancel(ctx context.Context, args []string) int {
	fs, url := c.flags("cancel")
	tenant := fs.String("tenant", "", "tenant (required)")
	reason := fs.String("reason", "", "why (required with --status retired)")
	status := fs.String("status", "", "retired or implicitly_answered (docs/contract.md, cancel)")
	evidence := fs.String("evidence", "", "the person's words that answered the question (with --status implicitly_answered)")
	if err := parseFlags(fs, args, false); err != nil {
		return flagExit(err)
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return c.fail("cancel takes JOB [QUESTION]")
	}
	cancel := bridge.Cancel{Tenant: *tenant, JobID: fs.Arg(0), QuestionID: fs.Arg(1), Reason: *reason,
		Status: *status, Evidence: *evidence, By: c.identity}
	if err := bridge.ValidateCancel(&cancel); err != nil {
		return c.fail("%v", err)
	}
	if err := bridge.CheckToken("tenant", cancel.Tenant); err != nil {
		return c.fail("%v", err)
	}
	if err := bridge.CheckToken("job", cancel.JobID); err != nil {
		return c.fail("%v", err)
	}
	if cancel.QuestionID != "" {
		if err := bridge.CheckToken("question", cancel.QuestionID); err != nil {
			return c.fail("%v", err)
		}
	}
	nc, js, err := c.connect(*url)
	if err != nil {
		return c.fail("%v", err)
	}
	defer nc.Close()
	// The runtime says on this inbox, once committed, what the cancel did.
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return c.fail("%v", err)
	}
	defer sub.Unsubscribe()
	data, err := json.Marshal(cancel)
	if err != nil {
		return c.fail("%v", err)
	}
	msg := &nats.Msg{Subject: bridge.CancelSubject(cancel.Tenant, cancel.JobID), Data: data, Header: nats.Header{}}
	msg.Header.Set(bridge.HeaderDecidedTo, inbox)
	if _, err := js.PublishMsg(ctx, msg, jetstream.WithMsgID(newID("cancel-"))); err != nil {
		return c.fail("%v", err)
	}
	wctx, stop := context.WithTimeout(ctx, decisionWait)
	defer stop()
	reply, err := sub.NextMsgWithContext(wctx)
	if err != nil {
		if ctx.Err() != nil {
			return c.fail("interrupted; the cancel was sent")
		}
		return c.fail("sent, but no decision arrived within %v; check with 'askbridge list --tenant %s --job %s'", decisionWait, cancel.Tenant, cancel.JobID)
	}
	var d bridge.CancelDecision
	if err := json.Unmarshal(reply.Data, &d); err != nil {
		return c.fail("sent, but the runtime's reply was not understood; check with 'askbridge list --tenant %s --job %s'", cancel.Tenant, cancel.JobID)
	}
	switch {
	case d.Refused != "":
		return c.fail("refused: %s", d.Refused)
	case d.Ended == 0:
		fmt.Fprintln(c.stdout, "Cancelled: no question was waiting.")
	case d.Ended == 1:
		fmt.Fprintln(c.stdout, "Cancelled: 1 question ended.")
	default:
		fmt.Fprintf(c.stdout, "Cancelled: %d questions ended.\n", d.Ended)
	}
	return exitOK
}

// link mints a signed console link with the configured console secret.
func (c *cli) link(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("askbridge link", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	as := fs.String("as", "", "the identity the link acts as, e.g. console:alice (required)")
	question := fs.String("question", "", "TENANT/JOB/QUESTION: a link to one question")
	job := fs.String("job", "", "TENANT/JOB: a link to one job")
	ttl := fs.Duration("ttl", 24*time.Hour, "how long the link is valid")
	if err := parseFlags(fs, args, false); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 {
		return c.fail("link takes no arguments, not %q (name the identity with --as)", fs.Arg(0))
	}
	if err := bridge.CheckIdentity(*as); err != nil {
		return c.fail("--as: %v", err)
	}
	if *ttl <= 0 {
		return c.fail("--ttl must be positive")
	}
	cfg, err := config.Load()
	if err != nil {
		return c.fail("%v", err)
	}
	// Only the service makes a secret: one made here would sign links
	// the service refuses.
	var secret []byte
	if cfg.ConsoleSecret == "" && cfg.Shared() {
		if secret, err = c.sharedConsoleSecret(ctx); err != nil {
			return c.fail("%v", err)
		}
	} else if secret, err = readConsoleSecret(cfg); errors.Is(err, iofs.ErrNotExist) {
		return c.fail("no console secret: ASK_CONSOLE_SECRET is not set and %s does not exist; "+
			"set ASK_CONSOLE_SECRET or ASK_DATA_DIR as the service has them (the service makes the file when it first starts)", consoleSecretPath(cfg))
	} else if err != nil {
		return c.fail("%v (set ASK_CONSOLE_SECRET or ASK_DATA_DIR as the service has them)", err)
	}
	signer := console.Signer{PublicURL: cfg.BaseURL(), Secret: secret}
	switch {
	case *question != "":
		parts := strings.Split(*question, "/")
		if len(parts) != 3 {
			return c.fail("--question takes TENANT/JOB/QUESTION")
		}
		if err := checkTokens(parts, "tenant", "job", "question"); err != nil {
			return c.fail("--question: %v", err)
		}
		fmt.Fprintln(c.stdout, signer.QuestionURL(*as, parts[0], parts[1], parts[2], *ttl))
	case *job != "":
		parts := strings.Split(*job, "/")
		if len(parts) != 2 {
			return c.fail("--job takes TENANT/JOB")
		}
		if err := checkTokens(parts, "tenant", "job"); err != nil {
			return c.fail("--job: %v", err)
		}
		fmt.Fprintln(c.stdout, signer.JobURL(*as, parts[0], parts[1], *ttl))
	default:
		fmt.Fprintln(c.stdout, signer.ListURL(*as, *ttl))
	}
	return exitOK
}

// sharedConsoleSecret reads the console secret the replicas share
// (ASK_STORE=jetstream) from NATS.
func (c *cli) sharedConsoleSecret(ctx context.Context) ([]byte, error) {
	nc, js, err := c.connect("")
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	kv, err := js.KeyValue(ctx, SecretsBucket)
	if err == nil {
		var secret []byte
		if secret, err = sharedConsoleSecret(ctx, kv); err == nil {
			return secret, nil
		}
	}
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, iofs.ErrNotExist) {
		return nil, fmt.Errorf("no console secret: ASK_CONSOLE_SECRET is not set and the bucket %s holds none; "+
			"set ASK_CONSOLE_SECRET as the service has it, or start the service once (it makes the secret)", SecretsBucket)
	}
	return nil, err
}

// checkTokens checks ids the console opens (a link to others it refuses as
// not valid), naming each by what.
func checkTokens(ids []string, what ...string) error {
	for i, id := range ids {
		if err := bridge.CheckToken(what[i], id); err != nil {
			return err
		}
	}
	return nil
}
