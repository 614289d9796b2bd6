package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/bench"
)

// benchGateTenant holds the gate benchmark's jobs.
const benchGateTenant = "bench"

// benchGate measures the gate (docs/benchmarks.md, "askbridge bench
// --gate"): it asks pending questions that block tools, then sends gate
// requests at a fixed rate for a fixed time, open loop, and reports their
// latency beside a plain NATS request/reply echo at the same rate.
func (c *cli) benchGate(ctx context.Context, o benchOptions, pending int) int {
	rate, duration := o.rate, o.duration
	if !o.set["rate"] {
		rate = 5000
	}
	if !o.set["duration"] {
		duration = 20 * time.Second
	}
	if o.child && o.cpuProfile != "" {
		return c.usageError("bench", "--cpuprofile profiles this process; with --child the service runs in another, so it would profile only the load generator")
	}
	if rate <= 0 {
		return c.usageError("bench", "--gate needs a --rate above 0: it offers requests at a fixed rate")
	}
	dir, err := os.MkdirTemp("", "askbridge-gate-")
	if err != nil {
		return c.usageError("bench", "%v", err)
	}
	defer os.RemoveAll(dir)
	natsURL, childPID, stop, err := c.startGateService(ctx, dir, o.syncMode, o.child)
	if err != nil {
		return c.usageError("bench", "%v", err)
	}
	defer stop()
	nc, err := benchConnect(natsURL, dir, false, nats.Name("askbridge-bench-gate"))
	if err != nil {
		return c.usageError("bench", "%v", err)
	}
	defer nc.Close()
	fmt.Fprintf(c.stderr, "asking %d questions that block tools...\n", pending)
	askStart := time.Now()
	if err := askGatePending(ctx, nc, pending); err != nil {
		return c.usageError("bench", "ask: %v", err)
	}
	fmt.Fprintf(c.stderr, "  %d pending in %v\n", pending, time.Since(askStart).Round(100*time.Millisecond))

	// The baselines first, then the gate, in the same minute; a tiny run's
	// baseline is small too.
	commits, err := bench.SQLiteCommits(ctx, dir, min(max(10*pending, 500), 2000))
	if err != nil {
		return c.usageError("bench", "baseline: %v", err)
	}
	echo, err := nc.Subscribe("bench.echo", func(m *nats.Msg) { _ = m.Respond(m.Data) })
	if err != nil {
		return c.usageError("bench", "%v", err)
	}
	defer echo.Unsubscribe()
	fmt.Fprintf(c.stderr, "baseline: NATS request/reply echo at %.0f/s for %v...\n", rate, duration)
	base := openLoop(ctx, nc, rate, duration, func(int) (string, []byte, string) {
		return "bench.echo", []byte(`{"tenant":"bench","job_id":"job-00001","task_version":1,"tool":"send_report"}`), ""
	}, nil)
	fmt.Fprintf(c.stderr, "gate at %.0f/s for %v...\n", rate, duration)
	cpu0 := procCPU(childPID)
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return c.usageError("bench", "%v", err)
	}
	gate := openLoop(ctx, nc, rate, duration, gateRequest(pending), func(data []byte) (string, bool) {
		var r bridge.GateReply
		if json.Unmarshal(data, &r) != nil {
			return "unreadable", false
		}
		return r.Code, true
	})
	stopProfile()
	cpu := float64(procCPU(childPID)-cpu0) / clockTicks

	c.gateReport(o, pending, rate, duration, gate, base, commits, cpu)
	return exitOK
}

// gateReport prints what benchGate measured, then one markdown row for
// docs/benchmarks.md.
func (c *cli) gateReport(o benchOptions, pending int, rate float64, duration time.Duration, gate, base *loadRun, commits bench.Commits, cpu float64) {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	where := "this process"
	if o.child {
		where = "a child process"
	}
	fmt.Fprintf(tw, "mode\t%d pending questions in %d jobs; %.0f requests/s offered for %v, open loop; JetStream sync %s, SQLite synchronous=FULL; service in %s\n",
		pending, pending, rate, duration, o.syncMode, where)
	gate.print(tw, "gate")
	base.print(tw, "baseline: NATS echo")
	fmt.Fprintf(tw, "baseline: SQLite single-row commit p50 / p99\t%v / %v (%.0f/s)\n",
		commits.P50.Round(time.Microsecond), commits.P99.Round(time.Microsecond), commits.PerSecond)
	var codes []string
	for code, n := range gate.codes {
		codes = append(codes, fmt.Sprintf("%s %d", code, n))
	}
	slices.Sort(codes)
	fmt.Fprintf(tw, "gate codes\t%s; wrong decisions %d\n", strings.Join(codes, ", "), gate.wrong.Load())
	cpuCell := ""
	if o.child {
		fmt.Fprintf(tw, "service CPU over the gate phase\t%.1f s (%.0f%% of one core)\n", cpu, 100*cpu/gate.elapsed.Seconds())
		cpuCell = fmt.Sprintf("%.0f%%", 100*cpu/gate.elapsed.Seconds())
	}
	tw.Flush()
	ms := func(r *loadRun, p int) string {
		return fmt.Sprintf("%.2f", float64(percentile(r.lat, p))/float64(time.Millisecond))
	}
	fmt.Fprintf(c.stdout, "| %d | %.0f/s | %.0f/s | %s / %s / %s ms | %s / %s / %s ms | %v | %s |\n", pending, rate,
		float64(gate.got)/gate.elapsed.Seconds(), ms(gate, 50), ms(gate, 99), ms(gate, 100), ms(base, 50), ms(base, 99), ms(base, 100),
		commits.P50.Round(time.Microsecond), cpuCell)
}

// startGateService starts the service with no chat platform: the
// questions wait for the console and the CLI, and the gate reads them.
func (c *cli) startGateService(ctx context.Context, dir, syncMode string, child bool) (natsURL string, pid int, stop func(), err error) {
	env := map[string]string{"ASK_DATA_DIR": dir, "ASK_NATS_SYNC": syncMode, "ASK_LOG_LEVEL": "error",
		"ASK_CONSOLE_SECRET": "bench-console-secret-0123456789", "ASK_HTTP_ADDR": "127.0.0.1:0", "ASK_NATS_LISTEN": "127.0.0.1:0"}
	if child {
		var list []string
		for k, v := range env {
			if k != "ASK_HTTP_ADDR" && k != "ASK_NATS_LISTEN" {
				list = append(list, k+"="+v)
			}
		}
		ch, err := c.startChild(ctx, list)
		if err != nil {
			return "", 0, nil, err
		}
		return ch.natsURL, ch.cmd.Process.Pid, ch.stop, nil
	}
	cfg := config.Defaults()
	cfg.DataDir, cfg.NATSSync, cfg.LogLevel, cfg.ConsoleSecret = dir, syncMode, "error", env["ASK_CONSOLE_SECRET"]
	cfg.HTTPAddr, cfg.NATSListen = env["ASK_HTTP_ADDR"], env["ASK_NATS_LISTEN"]
	if err := cfg.Validate(); err != nil {
		return "", 0, nil, err
	}
	s, err := startService(ctx, &cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return "", 0, nil, err
	}
	return s.natsURL(), os.Getpid(), func() { s.stop(context.Background()) }, nil
}

// gatePendingQuestion is the pending question of job i: it blocks
// send_report, and for even i closes the job to lookup_order and
// draft_reply.
func gatePendingQuestion(i int) *bridge.Question {
	q := &bridge.Question{Tenant: benchGateTenant, JobID: fmt.Sprintf("job-%05d", i), QuestionID: "q-date", TaskVersion: 1,
		Question: "When should I send the quarterly report, and to whom?", MissingField: "send_date",
		Choices: []string{"today", "monday", "end of month"}, BlockedTools: []string{"send_report"}, Timeout: "72h"}
	if i%2 == 0 {
		q.AllowedTools = []string{"lookup_order", "draft_reply"}
	}
	return q
}

// askGatePending asks n questions, one a job, and waits until the runtime
// holds them all pending and has announced them.
func askGatePending(ctx context.Context, nc *nats.Conn, n int) error {
	ag, err := agent.New(nc)
	if err != nil {
		return err
	}
	if err := askEach(ctx, ag, n, 64, nil, gatePendingQuestion); err != nil {
		return err
	}
	for {
		var stats bridge.StatsReply
		if err := bridge.Request(ctx, nc, bridge.APIStats, struct{}{}, &stats); err != nil {
			return err
		}
		// And every asked event published, so the gate phase has the
		// service to itself.
		if stats.ByState[bridge.StatePending] >= int64(n) && stats.OutboxBacklog == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// gateRequest builds request i of the gate phase: a job picked at random
// (one in ten never asked anything), a tool in turn, and the code the
// gate must answer.
func gateRequest(pending int) func(int) (string, []byte, string) {
	tools := []string{"send_report", "lookup_order", "refund"}
	return func(i int) (string, []byte, string) {
		r := rand.New(rand.NewPCG(uint64(i), 16))
		j := r.IntN(pending + pending/9)
		tool := tools[i%len(tools)]
		want := bridge.GateAllowed
		switch {
		case j >= pending: // a job never seen
		case tool == "send_report", tool == "refund" && j%2 == 0:
			want = bridge.GateBlockedByQuestion
		}
		job := fmt.Sprintf("job-%05d", j)
		data := []byte(`{"task_version":1,"tool":"` + tool + `"}`)
		return bridge.GateSubject(benchGateTenant, job), data, want
	}
}

// loadRun is what openLoop measured.
type loadRun struct {
	sent, got int64
	wrong     atomic.Int64
	lat       []time.Duration
	elapsed   time.Duration
	codes     map[string]int
}

// openLoop sends request i at start + i/rate, whatever the replies, for
// duration, and measures each reply from when its request was due (so a
// sender falling behind shows in the latency). decode, when set, reads a
// reply's code, compared with the code request i wants.
func openLoop(ctx context.Context, nc *nats.Conn, rate float64, duration time.Duration,
	request func(i int) (subject string, data []byte, want string), decode func([]byte) (string, bool)) *loadRun {
	total := int(rate * duration.Seconds())
	interval := float64(time.Second) / rate
	run := &loadRun{lat: make([]time.Duration, total), codes: map[string]int{}}
	wants := make([]string, total)
	got := make([]bool, total)
	inbox := nats.NewInbox() + "."
	var mu sync.Mutex
	var start time.Time
	sub, err := nc.Subscribe(inbox+"*", func(m *nats.Msg) {
		at := time.Now()
		i, err := strconv.Atoi(strings.TrimPrefix(m.Subject, inbox))
		if err != nil || i < 0 || i >= total {
			return
		}
		code, ok := "", true
		if decode != nil {
			code, ok = decode(m.Data)
		}
		mu.Lock()
		defer mu.Unlock()
		if got[i] {
			return
		}
		got[i] = true
		run.got++
		run.lat[i] = at.Sub(start.Add(time.Duration(float64(i) * interval)))
		if decode != nil {
			run.codes[code]++
			if !ok || code != wants[i] {
				run.wrong.Add(1)
			}
		}
	})
	if err != nil {
		return run
	}
	defer sub.Unsubscribe()
	_ = sub.SetPendingLimits(-1, -1)
	_ = nc.Flush()
	mu.Lock()
	start = time.Now()
	mu.Unlock()
	for run.sent < int64(total) && ctx.Err() == nil {
		due := min(int64(float64(time.Since(start))/interval)+1, int64(total))
		for ; run.sent < due; run.sent++ {
			i := int(run.sent)
			subject, data, want := request(i)
			mu.Lock()
			wants[i] = want
			mu.Unlock()
			_ = nc.PublishRequest(subject, inbox+strconv.Itoa(i), data)
		}
		time.Sleep(100 * time.Microsecond)
	}
	sendEnd := time.Now()
	for wait := time.Now(); time.Since(wait) < 10*time.Second && ctx.Err() == nil; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		done := run.got == run.sent
		mu.Unlock()
		if done {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	run.elapsed = sendEnd.Sub(start)
	lat := run.lat[:0]
	for i := range total {
		if got[i] {
			lat = append(lat, run.lat[i])
		}
	}
	run.lat = lat
	return run
}

func (r *loadRun) print(tw io.Writer, name string) {
	fmt.Fprintf(tw, "%s: answered\t%d of %d sent; %.0f/s over the %v they were sent in\n",
		name, r.got, r.sent, float64(r.got)/r.elapsed.Seconds(), r.elapsed.Round(time.Millisecond))
	fmt.Fprintf(tw, "%s: latency p50 / p99 / max\t%v / %v / %v\n", name,
		percentile(r.lat, 50).Round(time.Microsecond), percentile(r.lat, 99).Round(time.Microsecond), percentile(r.lat, 100).Round(time.Microsecond))
}
