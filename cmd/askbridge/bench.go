package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/bench"
	"github.com/askbridge/askbridge/store"
)

const benchSecret = "bench-signing-secret"

// bench runs the whole service in-process against a fake Slack on loopback
// and drives the real answer path: agents ask, people click through signed
// POST /slack/interactions, and the agents read their resumes.
func (c *cli) bench(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("askbridge bench", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	duration := fs.Duration("duration", 10*time.Second, "how long to click")
	rate := fs.Float64("rate", 0, "clicks a second, open loop (0: closed loop, as fast as --concurrency allows)")
	concurrency := fs.Int("concurrency", 32, "clickers in flight (closed loop)")
	questions := fs.Int("questions", 0, "questions to ask first (default: enough for the run)")
	syncMode := fs.String("sync", "always", "embedded JetStream durability: always or interval")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the click phase to this file")
	memProfile := fs.String("memprofile", "", "write a heap profile at the end of the click phase to this file, and one at its start to this file with .start appended (compare allocations with go tool pprof -base)")
	pending := fs.Int("pending", 0, "instead: measure a service holding this many pending questions (memory, ready time, idle CPU, list)")
	idle := fs.Duration("idle", 10*time.Second, "with --pending: how long to measure idle CPU")
	settle := fs.Duration("settle", 0, "with --pending: wait this long between the fill and the measured start (10m: past JetStream's duplicate window, as a restart long after the questions were asked)")
	fill := fs.String("fill", "store", "with --pending: how the questions get there: store (written into SQLite only) or nats (asked through NATS and posted to a fake Slack, as agents would)")
	child := fs.Bool("child", false, "run the service as a child process (askbridge serve), apart from the load generator's memory and garbage collector")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if *syncMode != "always" && *syncMode != "interval" {
		return c.fail("bench: --sync must be always or interval")
	}
	if *fill != "store" && *fill != "nats" {
		return c.fail("bench: --fill must be store or nats")
	}
	if *pending > 0 {
		return c.benchPending(ctx, *pending, *fill == "nats", *idle, *settle)
	}
	if *child && (*cpuProfile != "" || *memProfile != "") {
		return c.fail("bench: --cpuprofile and --memprofile profile this process; with --child the service runs in another, so they would profile only the load generator")
	}
	n := *questions
	if n == 0 {
		n = 30000
		if *rate > 0 {
			n = int(*rate*duration.Seconds()) + 100
		}
	}
	dir, err := os.MkdirTemp("", "askbridge-bench-")
	if err != nil {
		return c.fail("bench: %v", err)
	}
	defer os.RemoveAll(dir)

	fmt.Fprintf(c.stderr, "baselines: JetStream publish (sync %s) and SQLite single-row commits...\n", *syncMode)
	jsRate, err := bench.JetStreamPublishRate(ctx, dir, *syncMode == "always", 20000, 256)
	if err != nil {
		return c.fail("bench: baseline: %v", err)
	}
	commits, err := bench.SQLiteCommits(ctx, dir, 5000)
	if err != nil {
		return c.fail("bench: baseline: %v", err)
	}
	sqlRate := commits.PerSecond

	fake, err := startBenchSlack(false)
	if err != nil {
		return c.fail("bench: fake Slack: %v", err)
	}
	defer fake.close()
	var natsURL, httpAddr string
	var childPID int
	if *child {
		svc, err := c.startChild(ctx, []string{"ASK_DATA_DIR=" + dir, "ASK_NATS_SYNC=" + *syncMode, "ASK_LOG_LEVEL=error",
			"ASK_SLACK_BOT_TOKEN=xoxb-bench", "ASK_SLACK_SIGNING_SECRET=" + benchSecret, "ASK_SLACK_API_URL=" + fake.url + "/api/",
			"ASK_CONSOLE_SECRET=bench-console-secret-0123456789", "ASK_OPERATORS=slack:UBENCH"})
		if err != nil {
			return c.fail("bench: start: %v", err)
		}
		defer svc.stop()
		natsURL, httpAddr, childPID = svc.natsURL, svc.httpAddr, svc.cmd.Process.Pid
	} else {
		cfg := &config.Config{
			DataDir: dir, HTTPAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:0", NATSSync: *syncMode, NATSReplicas: 1,
			SlackBotToken: "xoxb-bench", SlackSigningSecret: benchSecret, SlackAPIURL: fake.url + "/api/",
			DiscordAPIURL: "http://127.0.0.1:1/", ConsoleSecret: "bench-console-secret-0123456789", Operators: []string{"slack:UBENCH"},
			LogLevel: "error", ShutdownGrace: 10 * time.Second,
		}
		s, err := startService(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			return c.fail("bench: start: %v", err)
		}
		defer s.stop(context.Background())
		natsURL, httpAddr = s.natsURL(), s.Addr()
	}

	nc, err := nats.Connect(natsURL)
	if err != nil {
		return c.fail("bench: %v", err)
	}
	defer nc.Close()
	var resumed atomic.Int64
	var lmu sync.Mutex
	clickAt := map[string]time.Time{}
	var latencies []time.Duration
	sub, err := nc.Subscribe(bridge.PrefixResume+".bench.>", func(m *nats.Msg) {
		now := time.Now()
		var res bridge.Resume
		if json.Unmarshal(m.Data, &res) != nil {
			return
		}
		resumed.Add(1)
		lmu.Lock()
		if at, ok := clickAt[res.JobID]; ok {
			latencies = append(latencies, now.Sub(at))
		}
		lmu.Unlock()
	})
	if err != nil {
		return c.fail("bench: %v", err)
	}
	defer sub.Unsubscribe()
	ag, err := agent.New(nc)
	if err != nil {
		return c.fail("bench: %v", err)
	}

	// Ask: one job (and one Slack channel, so per-channel pacing does not
	// throttle the fake) per question.
	fmt.Fprintf(c.stderr, "asking %d questions...\n", n)
	askStart := time.Now()
	err = askEach(ctx, ag, n, 16, nil, func(i int) *bridge.Question {
		return &bridge.Question{Tenant: "bench", JobID: fmt.Sprintf("job-%06d", i), QuestionID: "q", TaskVersion: 1,
			Question: "Which colour should the report use?", Choices: []string{"red", "blue"}, Timeout: "1h",
			Route: &bridge.Route{Slack: &bridge.SlackRoute{Channel: fmt.Sprintf("C%06d", i)}}}
	})
	if err != nil {
		return c.fail("bench: ask: %v", err)
	}
	for fake.cards() < n {
		if ctx.Err() != nil {
			return exitError
		}
		fmt.Fprintf(c.stderr, "\r  %d of %d cards posted", fake.cards(), n)
		time.Sleep(500 * time.Millisecond)
	}
	fmt.Fprintf(c.stderr, "\r  %d cards posted in %v (%.0f questions/s asked and shown)\n", n, time.Since(askStart).Round(time.Millisecond), float64(n)/time.Since(askStart).Seconds())

	// Click.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}, Timeout: 10 * time.Second}
	endpoint := "http://" + httpAddr + "/slack/interactions"
	var acks []time.Duration
	var amu sync.Mutex
	var clicked, failed atomic.Int64
	click := func(card benchCard) {
		body := card.payload()
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", slackSign(benchSecret, ts, body))
		start := time.Now()
		lmu.Lock()
		clickAt[card.job] = start
		lmu.Unlock()
		resp, err := client.Do(req)
		took := time.Since(start)
		if err != nil {
			failed.Add(1)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			failed.Add(1)
			return
		}
		clicked.Add(1)
		amu.Lock()
		acks = append(acks, took)
		amu.Unlock()
	}
	cards := fake.takeCards()
	mode := fmt.Sprintf("closed loop, %d clickers", *concurrency)
	if *rate > 0 {
		mode = fmt.Sprintf("open loop, %.0f clicks/s", *rate)
	}
	where := "in this process"
	if *child {
		where = "a child process"
	}
	fmt.Fprintf(c.stderr, "clicking for %v (%s)...\n", *duration, mode)
	if *memProfile != "" {
		if err := writeHeapProfile(*memProfile + ".start"); err != nil {
			return c.fail("bench: %v", err)
		}
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return c.fail("bench: %v", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return c.fail("bench: %v", err)
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	deadline := start.Add(*duration)
	progress := time.NewTicker(time.Second)
	defer progress.Stop()
	go func() {
		for range progress.C {
			fmt.Fprintf(c.stderr, "\r  %5.1fs  clicks acked %d  resumes %d  failed %d", time.Since(start).Seconds(), clicked.Load(), resumed.Load(), failed.Load())
		}
	}()
	var cwg sync.WaitGroup
	if *rate > 0 {
		interval := time.Duration(float64(time.Second) / *rate)
		for i := 0; i < len(cards) && time.Now().Before(deadline) && ctx.Err() == nil; i++ {
			due := start.Add(time.Duration(i) * interval)
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
			cwg.Add(1)
			go func(card benchCard) { defer cwg.Done(); click(card) }(cards[i])
		}
	} else {
		var idx atomic.Int64
		for range *concurrency {
			cwg.Add(1)
			go func() {
				defer cwg.Done()
				for time.Now().Before(deadline) && ctx.Err() == nil {
					i := int(idx.Add(1)) - 1
					if i >= len(cards) {
						return
					}
					click(cards[i])
				}
			}()
		}
	}
	cwg.Wait()
	clickEnd := time.Now()
	if *memProfile != "" {
		if err := writeHeapProfile(*memProfile); err != nil {
			return c.fail("bench: %v", err)
		}
	}
	want := clicked.Load()
	for resumed.Load() < want && time.Since(clickEnd) < 60*time.Second && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	progress.Stop()
	fmt.Fprintln(c.stderr)

	lmu.Lock()
	lat := slices.Clone(latencies)
	lmu.Unlock()
	amu.Lock()
	ack := slices.Clone(acks)
	amu.Unlock()
	answersPerSec := float64(resumed.Load()) / elapsed.Seconds()
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "mode\t%s, JetStream sync %s, SQLite synchronous=FULL, service %s\n", mode, *syncMode, where)
	fmt.Fprintf(tw, "clicks acked (HTTP 200)\t%d (failed %d)\n", clicked.Load(), failed.Load())
	fmt.Fprintf(tw, "resumes\t%d\n", resumed.Load())
	fmt.Fprintf(tw, "answers/s end to end\t%.0f\n", answersPerSec)
	fmt.Fprintf(tw, "click→resume p50 / p99\t%v / %v\n", percentile(lat, 50), percentile(lat, 99))
	fmt.Fprintf(tw, "Slack ack p50 / p99\t%v / %v\n", percentile(ack, 50), percentile(ack, 99))
	fmt.Fprintf(tw, "baseline: JetStream publishes/s (sync %s)\t%.0f (answers/s ÷ this = %.2f)\n", *syncMode, jsRate, answersPerSec/jsRate)
	fmt.Fprintf(tw, "baseline: SQLite single-row commits/s\t%.0f (answers/s ÷ this = %.2f)\n", sqlRate, answersPerSec/sqlRate)
	fmt.Fprintf(tw, "baseline: SQLite commit p50 / p99\t%v / %v\n", commits.P50.Round(time.Microsecond), commits.P99.Round(time.Microsecond))
	if *child {
		fmt.Fprintf(tw, "service RSS at the end\t%.0f MB\n", float64(procRSS(childPID))/(1<<20))
	}
	tw.Flush()
	return exitOK
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := (len(d)*p + 99) / 100
	if i > 0 {
		i--
	}
	return d[i].Round(10 * time.Microsecond)
}

func slackSign(secret, ts, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "v0:%s:%s", ts, body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// benchCard is a posted card's first choice button, as a person sees it.
type benchCard struct {
	job, channel, ts, blockID, actionID, value, text string
	blocks                                           json.RawMessage
	n                                                int
}

// payload is the block_actions payload Slack sends for the click: the
// clicked message comes back whole, blocks included. It is written by
// hand, not through json.Marshal of a map, to keep the load generator's
// share of the two cores small.
func (b benchCard) payload() string {
	var p strings.Builder
	p.Grow(len(b.blocks) + len(b.text) + 1024)
	w := func(parts ...string) {
		for _, s := range parts {
			p.WriteString(s)
		}
	}
	now := time.Now()
	w(`{"type":"block_actions","token":"bench-verification-token","api_app_id":"A0BENCH","is_enterprise_install":false,"enterprise":null,`,
		`"trigger_id":"bench-`, strconv.Itoa(b.n), "-", strconv.FormatInt(now.UnixNano(), 10), `",`,
		`"response_url":"https://hooks.slack.com/actions/T1/`, strconv.Itoa(b.n), `/bench",`,
		`"user":{"id":"UBENCH","username":"bench","name":"bench","team_id":"T1"},"team":{"id":"T1","domain":"bench"},`,
		`"container":{"type":"message","message_ts":`, jsonString(b.ts), `,"channel_id":`, jsonString(b.channel), `,"is_ephemeral":false},`,
		`"channel":{"id":`, jsonString(b.channel), `,"name":`, jsonString("bench-"+b.channel), `},`,
		`"message":{"type":"message","subtype":"bot_message","text":`, jsonString(b.text), `,"ts":`, jsonString(b.ts),
		`,"bot_id":"B0BENCH","app_id":"A0BENCH","user":"U0BOT","team":"T1","blocks":`, string(b.blocks), `},`,
		`"state":{"values":{}},`,
		`"actions":[{"type":"button","action_id":`, jsonString(b.actionID), `,"block_id":`, jsonString(b.blockID),
		`,"value":`, jsonString(b.value), `,"text":{"type":"plain_text","text":`, jsonString(b.value), `,"emoji":true},`,
		`"action_ts":"`, strconv.FormatInt(now.Unix(), 10), `.000001"}]}`)
	return "payload=" + url.QueryEscape(p.String())
}

func jsonString(s string) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}

// benchSlack is a loopback Slack Web API that accepts everything and keeps
// the cards posted, so the bench can click what a person would.
type benchSlack struct {
	url  string
	srv  *http.Server
	seq  atomic.Int64
	mu   sync.Mutex
	list []benchCard
	// countOnly counts posted cards without keeping them: a million
	// kept cards would weigh more than the service measured.
	countOnly bool
	posted    atomic.Int64
}

func startBenchSlack(countOnly bool) (*benchSlack, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &benchSlack{url: "http://" + ln.Addr().String(), countOnly: countOnly}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 5 * time.Second}
	go f.srv.Serve(ln)
	return f, nil
}

func (f *benchSlack) close() { f.srv.Close() }

func (f *benchSlack) serve(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	_ = r.ParseForm()
	ts := fmt.Sprintf("1700000000.%06d", f.seq.Add(1))
	w.Header().Set("Content-Type", "application/json")
	channel := r.Form.Get("channel")
	if method == "chat.postMessage" {
		if f.countOnly {
			// A thread's parent message has no buttons; count cards only.
			if strings.Contains(r.Form.Get("blocks"), `"action_id":"choice.`) {
				f.posted.Add(1)
			}
		} else {
			f.keep(channel, ts, r.Form.Get("blocks"), r.Form.Get("text"))
		}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": channel, "ts": ts,
		"message": map[string]any{"ts": ts}, "permalink": "https://bench.slack.com/archives/" + channel})
}

// keep records a card's first choice button.
func (f *benchSlack) keep(channel, ts, blocks, text string) {
	var bs []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	if json.Unmarshal([]byte(blocks), &bs) != nil {
		return
	}
	for _, b := range bs {
		if b.Type != "actions" || !strings.HasPrefix(b.BlockID, "ask.") {
			continue
		}
		for _, e := range b.Elements {
			if strings.HasPrefix(e.ActionID, "choice.") {
				parts := strings.Split(b.BlockID, ".")
				if len(parts) < 3 {
					return
				}
				f.mu.Lock()
				f.list = append(f.list, benchCard{job: parts[2], channel: channel, ts: ts, blockID: b.BlockID, actionID: e.ActionID, value: e.Value,
					text: text, blocks: json.RawMessage(blocks), n: len(f.list)})
				f.mu.Unlock()
				return
			}
		}
	}
}

func (f *benchSlack) cards() int {
	if f.countOnly {
		return int(f.posted.Load())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.list)
}

func (f *benchSlack) takeCards() []benchCard {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.list)
}

// benchPending fills a store with n pending questions, starts this binary's
// service on it as a child process and measures what a big backlog costs:
// time to ready, resident memory, CPU while idle, and the first list page.
// viaNATS asks the questions as agents do, so JetStream's streams and the
// Slack adapter's records hold them too, as they would in production.
func (c *cli) benchPending(ctx context.Context, n int, viaNATS bool, idle, settle time.Duration) int {
	dir, err := os.MkdirTemp("", "askbridge-pending-")
	if err != nil {
		return c.fail("bench: %v", err)
	}
	defer os.RemoveAll(dir)
	fake, err := startBenchSlack(true)
	if err != nil {
		return c.fail("bench: fake Slack: %v", err)
	}
	defer fake.close()
	env := []string{"ASK_DATA_DIR=" + dir, "ASK_ADMINS=cli:bench", "ASK_LOG_LEVEL=warn",
		"ASK_CONSOLE_SECRET=bench-console-secret-0123456789",
		"ASK_SLACK_BOT_TOKEN=xoxb-bench", "ASK_SLACK_SIGNING_SECRET=" + benchSecret, "ASK_SLACK_API_URL=" + fake.url + "/api/"}
	fillStart := time.Now()
	if viaNATS {
		fmt.Fprintf(c.stderr, "asking %d questions through NATS...\n", n)
		child, err := c.startChild(ctx, env)
		if err != nil {
			return c.fail("bench: %v", err)
		}
		err = askPending(ctx, child.natsURL, n, func(asked int) {
			fmt.Fprintf(c.stderr, "\r  %d asked, %d cards posted", asked, fake.cards())
		})
		seen, progressAt := -1, time.Now()
		for err == nil && fake.cards() < n {
			switch posted := fake.cards(); {
			case ctx.Err() != nil:
				err = ctx.Err()
			case posted != seen:
				seen, progressAt = posted, time.Now()
			case time.Since(progressAt) > time.Minute:
				err = fmt.Errorf("no card posted for a minute, %d of %d", posted, n)
			}
			fmt.Fprintf(c.stderr, "\r  %d asked, %d cards posted", n, fake.cards())
			time.Sleep(500 * time.Millisecond)
		}
		child.stop()
		if err != nil {
			return c.fail("bench: fill: %v", err)
		}
	} else {
		fmt.Fprintf(c.stderr, "filling a store with %d pending questions...\n", n)
		if err := fillPending(ctx, filepath.Join(dir, "askbridge.db"), n, func(done int) {
			fmt.Fprintf(c.stderr, "\r  %d of %d", done, n)
		}); err != nil {
			return c.fail("bench: fill: %v", err)
		}
	}
	fmt.Fprintf(c.stderr, "\r  %d questions in %v\n", n, time.Since(fillStart).Round(time.Second))
	if settle > 0 {
		fmt.Fprintf(c.stderr, "waiting %v before the start...\n", settle)
		select {
		case <-time.After(settle):
		case <-ctx.Done():
			return exitError
		}
	}

	child, err := c.startChild(ctx, env)
	if err != nil {
		return c.fail("bench: %v", err)
	}
	defer child.stop()
	nc, err := nats.Connect(child.natsURL)
	if err != nil {
		return c.fail("bench: %v", err)
	}
	defer nc.Close()
	var lists []time.Duration
	for i := range 50 {
		tenant := fmt.Sprintf("t-%03d", i%100)
		// Question k is tenant k%100's.
		want := n / 100
		if i%100 < n%100 {
			want++
		}
		want = min(50, want)
		req, _ := json.Marshal(bridge.ListRequest{As: "cli:bench", Tenant: tenant, Limit: 50})
		t0 := time.Now()
		msg, err := nc.Request(bridge.APIList, req, 10*time.Second)
		if err != nil {
			return c.fail("bench: list: %v", err)
		}
		lists = append(lists, time.Since(t0))
		var reply bridge.ListReply
		if err := json.Unmarshal(msg.Data, &reply); err != nil || len(reply.Questions) != want {
			return c.fail("bench: list of tenant %s returned %d questions, want %d (%s)", tenant, len(reply.Questions), want, reply.Error)
		}
	}
	pid := child.cmd.Process.Pid
	rssReady := procRSS(pid)
	cpu0 := procCPU(pid)
	fmt.Fprintf(c.stderr, "measuring idle CPU for %v...\n", idle)
	time.Sleep(idle)
	cpu1 := procCPU(pid)
	rssIdle := procRSS(pid)
	ticks := float64(cpu1 - cpu0)
	how := "written into SQLite"
	if viaNATS {
		how = "asked through NATS, cards posted to Slack"
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "pending questions\t%d (%s)\n", n, how)
	fmt.Fprintf(tw, "start to /readyz 200\t%v\n", child.ready.Round(time.Millisecond))
	fmt.Fprintf(tw, "RSS after the list calls / after %v idle\t%.0f MB / %.0f MB\n", idle, float64(rssReady)/(1<<20), float64(rssIdle)/(1<<20))
	fmt.Fprintf(tw, "CPU while idle\t%.2f%% of one core (%d ticks in %v)\n", ticks/float64(clockTicks)/idle.Seconds()*100, cpu1-cpu0, idle)
	fmt.Fprintf(tw, "list, one tenant's first page of 50: p50 / max\t%v / %v\n", percentile(lists, 50), percentile(lists, 100))
	tw.Flush()
	return exitOK
}

// benchChild is this binary's service running as a child process.
type benchChild struct {
	cmd               *exec.Cmd
	natsURL, httpAddr string
	ready             time.Duration
}

// startChild starts `askbridge serve` with env on free loopback ports and
// waits for /readyz.
func (c *cli) startChild(ctx context.Context, env []string) (*benchChild, error) {
	bin, err := os.Executable()
	if err != nil {
		return nil, err
	}
	httpPort, natsPort := freePort(), freePort()
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env, "ASK_HTTP_ADDR=127.0.0.1:"+httpPort, "ASK_NATS_LISTEN=127.0.0.1:"+natsPort)
	cmd.Stderr = c.stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	child := &benchChild{cmd: cmd, natsURL: "nats://127.0.0.1:" + natsPort, httpAddr: "127.0.0.1:" + httpPort}
	for time.Since(start) < 60*time.Second {
		resp, err := http.Get("http://127.0.0.1:" + httpPort + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				child.ready = time.Since(start)
				return child, nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	child.stop()
	return nil, errors.New("the service was not ready within 60s")
}

func (b *benchChild) stop() {
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	_ = b.cmd.Wait()
}

// askPending asks the same n questions fillPending writes, through NATS as
// an agent fleet would, each with its own Slack channel.
func askPending(ctx context.Context, natsURL string, n int, progress func(int)) error {
	nc, err := nats.Connect(natsURL)
	if err != nil {
		return err
	}
	defer nc.Close()
	ag, err := agent.New(nc)
	if err != nil {
		return err
	}
	var done atomic.Int64
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	stopProgress := make(chan struct{})
	go func() {
		for {
			select {
			case <-tick.C:
				progress(int(done.Load()))
			case <-stopProgress:
				return
			}
		}
	}()
	defer close(stopProgress)
	return askEach(ctx, ag, n, 64, &done, func(i int) *bridge.Question {
		q := pendingQuestion(i)
		q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: fmt.Sprintf("C%07d", i)}}
		return &q
	})
}

// askEach publishes question(0) to question(n-1) from workers simulated
// agents, counting each acknowledged publish in asked when it is not nil.
func askEach(ctx context.Context, ag *agent.Client, n, workers int, asked *atomic.Int64, question func(int) *bridge.Question) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var askErr atomic.Value
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := ag.Publish(ctx, question(i)); err != nil {
					askErr.Store(err)
					return
				}
				if asked != nil {
					asked.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if err, ok := askErr.Load().(error); ok {
		return err
	}
	return ctx.Err()
}

// pendingQuestion is the i-th of the bench's pending questions, over 100
// tenants.
func pendingQuestion(i int) bridge.Question {
	return bridge.Question{Tenant: fmt.Sprintf("t-%03d", i%100), JobID: fmt.Sprintf("job-%07d", i), QuestionID: "q", TaskVersion: 1,
		Question: "Which colour should the quarterly report use for the customer's charts?", Choices: []string{"red", "blue", "green"},
		Answerers: []string{"slack:U0ANA"}, Timeout: "72h"}
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times on Linux.
const clockTicks = 100

// fillPending writes n pending questions over 100 tenants straight into a
// new store, in large transactions, without outbox rows (a long-running
// service would have published them long ago).
func fillPending(ctx context.Context, path string, n int, progress func(int)) error {
	st, err := store.Open(ctx, path)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now().UTC()
	const batch = 5000
	for done := 0; done < n; {
		nqs := make([]store.NewQuestion, 0, batch)
		for i := done; i < n && len(nqs) < batch; i++ {
			q := pendingQuestion(i)
			body, _ := json.Marshal(q)
			timeout := 72 * time.Hour
			// Spread the deadlines so the ladder has work far in the future.
			asked := now.Add(-time.Duration(i%3600) * time.Second)
			nq := store.NewQuestion{Key: store.Key{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: 1},
				Kind: bridge.KindQuestion, Body: body, AskedAt: asked, Deadline: asked.Add(timeout)}
			for j, step := range bridge.DefaultLadder {
				nq.Steps = append(nq.Steps, store.Step{Index: j, Target: step.To, Due: asked.Add(time.Duration(float64(timeout) * step.At))})
			}
			nq.Steps = append(nq.Steps, store.Step{Index: len(nq.Steps), Target: store.StepTimeout, Due: asked.Add(timeout)})
			nqs = append(nqs, nq)
		}
		if _, err := st.AskMany(ctx, nqs); err != nil {
			return err
		}
		done += len(nqs)
		progress(done)
	}
	return nil
}

func freePort() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "0"
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// procRSS is a process's resident set in bytes, from /proc.
func procRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// procCPU is a process's user+system time in clock ticks, from /proc.
func procCPU(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses.
	rest := string(b)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return utime + stime
}

// writeHeapProfile records what is live now, after a collection: the heap
// the garbage collector must mark on every cycle.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
