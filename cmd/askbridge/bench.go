package main

import (
	"cmp"
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"time"

	"github.com/askbridge/askbridge/config"
)

const benchSecret = "bench-signing-secret"

// benchOptions are the flags of `askbridge bench`, shared by its modes.
type benchOptions struct {
	duration    time.Duration
	rate        float64
	concurrency int
	questions   int
	syncMode    string
	cpuProfile  string
	memProfile  string
	child       bool
	replicas    int // with --cluster: askbridge replicas on a 3-node NATS cluster

	// The asking path (--ask).
	ask         int
	channels    int
	slackLimits bool
	// trusted asks in the service's own account, with no agent's credential.
	trusted    bool
	slackBurst int
	stall      time.Duration

	// set names the flags given on the command line.
	set map[string]bool
}

// bench runs the whole service against a fake Slack on loopback and drives
// one of its paths: by default the answer path (agents ask, people click
// through signed POST /slack/interactions, the agents read their resumes);
// with --ask the asking path (questions published to cards shown); with
// --pending the memory and start of a big backlog.
func (c *cli) bench(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("askbridge bench", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	var o benchOptions
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long to click")
	fs.Float64Var(&o.rate, "rate", 0, "clicks (with --ask: questions) a second, open loop (0: closed loop, as fast as --concurrency allows)")
	fs.IntVar(&o.concurrency, "concurrency", 32, "clickers in flight (closed loop); with --ask, questions in flight (published, card not yet shown; default 256, or all of them with --slack-limits)")
	fs.IntVar(&o.questions, "questions", 0, "questions to ask first (default: enough for the run)")
	fs.StringVar(&o.syncMode, "sync", "always", "embedded JetStream durability: always or interval")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the click phase (with --ask: of the asking) to this file")
	fs.StringVar(&o.memProfile, "memprofile", "", "write a heap profile at the end of the click phase to this file, and one at its start to this file with .start appended (compare allocations with go tool pprof -base)")
	fs.IntVar(&o.ask, "ask", 0, "instead: measure the asking path with this many questions (published on NATS to cards shown on the fake Slack)")
	fs.IntVar(&o.channels, "channels", 0, "with --ask: spread the questions over this many Slack channels (0: a channel of its own for each)")
	fs.BoolVar(&o.trusted, "trusted", false, "with --ask: publish the questions in the service's own account instead of with an agent's credential from the agents' account (what authentication costs the ask path is the difference between the two)")
	fs.BoolVar(&o.slackLimits, "slack-limits", false, "with --ask: the fake Slack enforces chat.postMessage's limit per channel (about 1 a second, short bursts) and answers HTTP 429 with Retry-After")
	fs.IntVar(&o.slackBurst, "slack-burst", 2, "with --slack-limits: messages a channel takes at once before the 1 a second pace applies")
	fs.DurationVar(&o.stall, "stall", time.Minute, "with --ask: give up when no card was shown for this long")
	pending := fs.Int("pending", 0, "instead: measure a service holding this many pending questions (memory, ready time, idle CPU, list)")
	idle := fs.Duration("idle", 10*time.Second, "with --pending: how long to measure idle CPU")
	settle := fs.Duration("settle", 0, "with --pending: wait this long between the fill and the measured start (10m: past JetStream's duplicate window, as a restart long after the questions were asked)")
	fill := fs.String("fill", "store", "with --pending: how the questions get there: store (written into SQLite only) or nats (asked through NATS and posted to a fake Slack, as agents would)")
	gate := fs.Bool("gate", false, "instead: measure the gate (ask.v1.gate) under load: --pending questions (default 10000) that block tools, then requests at --rate (default 5000) for --duration (default 20s), beside a NATS request/reply echo at the same rate")
	clustered := fs.Bool("cluster", false, "answer path on a 3-node NATS cluster (child processes) with --replicas askbridge serve replicas (ASK_STORE=jetstream, R3), clicks spread over them; reports the CPU per answer")
	fs.IntVar(&o.replicas, "replicas", 3, "with --cluster: askbridge serve replicas, 1 to 3")
	fs.BoolVar(&o.child, "child", false, "run the service as a child process (askbridge serve), apart from the load generator's memory and garbage collector")
	if code, ok := c.parse(fs, args, false); !ok {
		return code
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if !*clustered {
		o.replicas = 0
	} else if o.replicas < 1 || o.replicas > 3 || *gate || *pending > 0 || o.ask > 0 || o.cpuProfile != "" || o.memProfile != "" {
		return c.usageError("bench", "--cluster measures the answer path with --replicas 1 to 3, without --gate, --pending, --ask or profiles")
	}
	if o.syncMode != "always" && o.syncMode != "interval" {
		return c.usageError("bench", "--sync must be always or interval")
	}
	if *fill != "store" && *fill != "nats" {
		return c.usageError("bench", "--fill must be store or nats")
	}
	if *gate {
		if o.ask > 0 {
			return c.usageError("bench", "--gate and --ask are two different measurements; give one")
		}
		return c.benchGate(ctx, o, cmp.Or(*pending, 10000))
	}
	if *pending > 0 && o.ask > 0 {
		return c.usageError("bench", "--pending and --ask are two different measurements; give one")
	}
	if *pending > 0 {
		return c.benchPending(ctx, *pending, *fill == "nats", *idle, *settle)
	}
	if o.child && (o.cpuProfile != "" || o.memProfile != "") {
		return c.usageError("bench", "--cpuprofile and --memprofile profile this process; with --child the service runs in another, so they would profile only the load generator")
	}
	for _, name := range []string{"channels", "slack-limits", "slack-burst", "stall"} {
		if o.set[name] && o.ask == 0 {
			return c.usageError("bench", "--%s applies to --ask only", name)
		}
	}
	if o.ask > 0 {
		return c.benchAsk(ctx, o)
	}
	return c.benchAnswers(ctx, o)
}

// benchService is the service under measurement, in this process or a
// child, with the Slack adapter pointed at a fake Slack.
type benchService struct {
	natsURL, httpAddr string
	// dataDir holds the service's NATS keys (benchConnect).
	dataDir  string
	childPID int // 0 in this process
	stop     func()
	// With --cluster: every replica's HTTP address, and the replicas' and
	// the NATS nodes' process ids (for their CPU time).
	httpAddrs             []string
	replicaPIDs, natsPIDs []int
}

// startBenchService starts the service on data directory dir with the
// embedded JetStream in syncMode and Slack's Web API at slackURL.
func (c *cli) startBenchService(ctx context.Context, dir, syncMode, slackURL string, child bool) (*benchService, error) {
	if child {
		svc, err := c.startChild(ctx, []string{"ASK_DATA_DIR=" + dir, "ASK_NATS_SYNC=" + syncMode, "ASK_LOG_LEVEL=error",
			"ASK_SLACK_BOT_TOKEN=xoxb-bench", "ASK_SLACK_SIGNING_SECRET=" + benchSecret, "ASK_SLACK_API_URL=" + slackURL + "/api/",
			"ASK_CONSOLE_SECRET=bench-console-secret-0123456789", "ASK_OPERATORS=slack:UBENCH"})
		if err != nil {
			return nil, err
		}
		return &benchService{natsURL: svc.natsURL, httpAddr: svc.httpAddr, dataDir: dir, childPID: svc.cmd.Process.Pid, replicaPIDs: []int{svc.cmd.Process.Pid}, stop: svc.stop}, nil
	}
	cfg := &config.Config{
		CLI: config.CLI{DataDir: dir, NATSListen: "127.0.0.1:0"}, HTTPAddr: "127.0.0.1:0", NATSSync: syncMode, NATSReplicas: 1,
		SlackBotToken: "xoxb-bench", SlackSigningSecret: benchSecret, SlackAPIURL: slackURL + "/api/",
		DiscordAPIURL: "http://127.0.0.1:1/", ConsoleSecret: "bench-console-secret-0123456789", Operators: []string{"slack:UBENCH"},
		LogLevel: "error", ShutdownGrace: 10 * time.Second,
	}
	s, err := startService(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	return &benchService{natsURL: s.natsURL(), httpAddr: s.Addr(), dataDir: dir, stop: func() { s.stop(context.Background()) }}, nil
}

// startCPUProfile starts profiling this process into path; stop ends it.
// An empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
