package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/askbridge/askbridge/internal/torture"
)

// torture runs this binary's service under kill -9 and checks that nothing
// acknowledged was lost or applied twice (internal/torture).
func (c *cli) torture(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("askbridge torture", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	duration := fs.Duration("duration", 60*time.Second, "how long to ask, answer and kill")
	rate := fs.Float64("rate", 50, "questions a second (answers go at 80% of it)")
	syncMode := fs.String("sync", "always", "the server's ASK_NATS_SYNC: always or interval")
	killEvery := fs.Duration("kill-every", 5*time.Second, "mean time between SIGKILLs of the server")
	data := fs.String("data", "", "data directory (default: a new temporary directory, removed when the run is clean)")
	clustered := fs.Bool("cluster", false, "instead: a 3-node NATS cluster and --replicas askbridge replicas with ASK_STORE=jetstream (R3); each kill SIGKILLs one replica, and one NATS node unless it is aimed at a click")
	replicas := fs.Int("replicas", 3, "with --cluster: askbridge serve replicas")
	if code, ok := c.parse(fs, args, false); !ok {
		return code
	}
	if fs.NArg() > 0 || *duration <= 0 || *rate <= 0 || *killEvery <= 0 || *replicas <= 0 {
		return c.usageError("torture", "takes positive --duration, --rate, --kill-every and --replicas and no arguments")
	}
	n := 0
	if *clustered {
		n = *replicas
	}
	bin, err := os.Executable()
	if err != nil {
		return c.fail("torture: %v", err)
	}
	dir, temp := *data, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "askbridge-torture-"); err != nil {
			return c.fail("torture: %v", err)
		}
		temp = true
	}
	fmt.Fprintf(c.stdout, "askbridge torture: %v at %g questions/s, kill -9 every ~%v, data in %s\n", *duration, *rate, *killEvery, dir)
	if n > 0 {
		fmt.Fprintf(c.stdout, "cluster: 3 NATS nodes, %d replicas; each kill is one replica, and one node unless it is aimed at a click\n", n)
	}
	rep, err := torture.Run(ctx, torture.Options{
		Binary: bin, DataDir: dir, Duration: *duration, Rate: *rate, KillEvery: *killEvery, Progress: c.stdout, Sync: *syncMode,
		Replicas: n,
	})
	if err != nil {
		fmt.Fprintf(c.stderr, "askbridge torture: %v (service log: %s/serve.log)\n", err, dir)
		return exitError
	}
	c.printTortureReport(rep)
	fmt.Fprintf(c.stdout, "elapsed %v\n", rep.Elapsed.Round(time.Millisecond))
	if len(rep.Violations) > 0 {
		fmt.Fprintln(c.stdout, "\nVIOLATIONS:")
		for _, v := range rep.Violations {
			fmt.Fprintln(c.stdout, "  - "+v)
		}
		fmt.Fprintf(c.stdout, "data kept in %s\n", dir)
		return exitError
	}
	if temp {
		_ = os.RemoveAll(dir)
	}
	return exitOK
}

// printTortureReport prints what a torture run counted, one row a count.
func (c *cli) printTortureReport(rep *torture.Report) {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	rows := []struct {
		name string
		n    any
	}{
		{"kills (SIGKILL)", rep.Kills},
		{"  aimed at a click in flight", rep.AimedKills},
		{"NATS node kills (SIGKILL)", rep.NodeKills},
		{"replica starts that exited early (violations)", rep.EarlyExits},
		{"times no replica was ready", rep.AllDown},
		{"  for in all", rep.AllDownFor.Round(time.Millisecond)},
		{"asked (acked)", rep.Asked},
		{"stored", rep.Stored},
		{"answers sent (clicks and NATS)", rep.AnswersSent},
		{"answers acked", rep.AnswersAcked},
		{"  acked across a kill", rep.AckedAcrossKills},
		{"  settled their question", rep.Settled},
		{"  refused", rep.Refused},
		{"  settled out of order", rep.OutOfOrder},
		{"clicks sent (Slack, signed)", rep.Clicks},
		{"  acked (HTTP 200)", rep.ClicksAcked},
		{"  retried", rep.ClicksRetried},
		{"  folded into the one before", rep.ClicksFolded},
		{"  cut by a kill", rep.ClicksCut},
		{"    before the claim", rep.CutBeforeClaim},
		{"    between claim and publish", rep.CutBetween},
		{"    after the publish", rep.CutAfterPublish},
		{"resumes", rep.Resumes},
		{"duplicates", rep.Duplicates},
		{"lost", rep.Lost},
		{"answered", rep.Answered},
		{"declined", rep.Declined},
		{"timed out", rep.TimedOut},
		{"failed (on_timeout fail)", rep.Failed},
		{"still pending (1h timeout)", rep.Pending},
		{"ladder steps fired", rep.LadderSteps},
		{"cards posted (fake Slack)", rep.Cards},
		{"  posted twice or more", rep.CardDuplicates},
		{"  missing", rep.CardsMissing},
		{"  later than " + torture.DefaultCardWithin.String(), rep.CardsLate},
		{"  none, ended before due", rep.NoCard},
		{"lookups for a card a try may have posted", rep.Lookups},
		{"card delay p50", rep.CardDelayP50},
		{"card delay p99", rep.CardDelayP99},
		{"card delay max", rep.CardDelayMax},
		{"answers measured to their resume", rep.ResumesMeasured},
		{"  answer to resume p50", rep.ResumeDelayP50},
		{"  answer to resume p99", rep.ResumeDelayP99},
		{"  answer to resume max", rep.ResumeDelayMax},
		{"ladder steps measured (with timeouts)", rep.StepsMeasured},
		{"  step lateness p50", rep.LadderLateP50},
		{"  step lateness p99", rep.LadderLateP99},
		{"  step lateness max", rep.LadderLateMax},
		{"outbox backlog", rep.OutboxBacklog},
		{"violations", len(rep.Violations)},
	}
	fmt.Fprintln(c.stdout)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%v\t\n", r.name, r.n)
	}
	tw.Flush()
	if len(rep.RefusedBy) > 0 {
		fmt.Fprintf(c.stdout, "refusals by reason: %v\n", rep.RefusedBy)
	}
}
