package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/internal/bench"
)

// benchAnswers drives the real answer path: agents ask, people click the
// cards through signed POST /slack/interactions, and the agents read their
// resumes.
func (c *cli) benchAnswers(ctx context.Context, o benchOptions) int {
	duration, rate, concurrency, syncMode := &o.duration, &o.rate, &o.concurrency, &o.syncMode
	cpuProfile, memProfile, child := &o.cpuProfile, &o.memProfile, &o.child
	n := o.questions
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

	// The baselines run about as many operations as the run asks
	// questions, within bounds, so that a tiny run stays tiny.
	publishes, singleCommits := min(max(10*n, 2000), 20000), min(max(n, 500), 5000)
	var jsRate, sqlRate float64
	var commits bench.Commits
	if o.replicas == 0 {
		fmt.Fprintf(c.stderr, "baselines: JetStream publish (sync %s) and SQLite single-row commits...\n", *syncMode)
		if jsRate, err = bench.JetStreamPublishRate(ctx, dir, *syncMode == "always", publishes, 256); err != nil {
			return c.fail("bench: baseline: %v", err)
		}
		if commits, err = bench.SQLiteCommits(ctx, dir, singleCommits); err != nil {
			return c.fail("bench: baseline: %v", err)
		}
		sqlRate = commits.PerSecond
	}

	fake, err := startBenchSlack(benchSlackOptions{})
	if err != nil {
		return c.fail("bench: fake Slack: %v", err)
	}
	defer fake.close()
	var svc *benchService
	if o.replicas > 0 {
		svc, err = c.startClusterBench(ctx, dir, *syncMode, fake.url, o.replicas)
	} else {
		svc, err = c.startBenchService(ctx, dir, *syncMode, fake.url, *child)
	}
	if err != nil {
		return c.fail("bench: start: %v", err)
	}
	defer svc.stop()
	natsURL, httpAddr, childPID := svc.natsURL, svc.httpAddr, svc.childPID

	nc, err := benchConnect(natsURL, svc.dataDir, false)
	if err != nil {
		return c.fail("bench: %v", err)
	}
	defer nc.Close()
	var resumed, wire atomic.Int64
	resumedJob := map[string]bool{}
	var lmu sync.Mutex
	clickAt := map[string]time.Time{}
	var latencies []time.Duration
	var clusterJS jetstream.JetStream
	var cpuPerPublish float64
	if o.replicas > 0 {
		fmt.Fprintf(c.stderr, "baseline: JetStream publish on the cluster, R3 (sync %s)...\n", *syncMode)
		js, err := jetstream.New(nc)
		if err != nil {
			return c.fail("bench: %v", err)
		}
		cpu0 := cpuTicks(svc.natsPIDs)
		if jsRate, err = bench.PublishRate(ctx, js, 3, publishes, 256); err != nil {
			return c.fail("bench: baseline: %v", err)
		}
		cpuPerPublish = float64(cpuTicks(svc.natsPIDs)-cpu0) / clockTicks * 1000 / float64(publishes)
		clusterJS = js
	}
	sub, err := nc.Subscribe(bridge.PrefixResume+".bench.>", func(m *nats.Msg) {
		now := time.Now()
		var res bridge.Resume
		if json.Unmarshal(m.Data, &res) != nil {
			return
		}
		// A core subscription sees every publish, also a second one of
		// the same resume that JetStream dropped as a duplicate (two
		// replicas relaying one outbox row): count each job's first.
		wire.Add(1)
		lmu.Lock()
		defer lmu.Unlock()
		if resumedJob[res.JobID] {
			return
		}
		resumedJob[res.JobID] = true
		resumed.Add(1)
		if at, ok := clickAt[res.JobID]; ok {
			latencies = append(latencies, now.Sub(at))
		}
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
	var askTally clusterTally
	if clusterJS != nil {
		if askTally, err = readClusterTally(ctx, clusterJS); err != nil {
			return c.fail("bench: %v", err)
		}
	}
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
	if clusterJS != nil {
		after, err := readClusterTally(ctx, clusterJS)
		if err != nil {
			return c.fail("bench: %v", err)
		}
		askTally = after.since(askTally)
		fmt.Fprintf(c.stderr, "  stream writes per question asked: %s\n", askTally.writesPer(int64(n)))
	}

	// Click.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}, Timeout: 10 * time.Second}
	endpoints := []string{"http://" + httpAddr + "/slack/interactions"}
	if len(svc.httpAddrs) > 0 {
		endpoints = endpoints[:0]
		for _, a := range svc.httpAddrs {
			endpoints = append(endpoints, "http://"+a+"/slack/interactions")
		}
	}
	var acks []time.Duration
	var amu sync.Mutex
	var clicked, failed atomic.Int64
	click := func(card benchCard) {
		body := card.payload()
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		// Behind a load balancer, a click reaches any replica.
		req, _ := http.NewRequest(http.MethodPost, endpoints[rand.IntN(len(endpoints))], strings.NewReader(body))
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
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return c.fail("bench: %v", err)
	}
	defer stopProfile()
	cpuR0, cpuN0 := cpuTicks(svc.replicaPIDs), cpuTicks(svc.natsPIDs)
	var tally0 clusterTally
	if clusterJS != nil {
		if tally0, err = readClusterTally(ctx, clusterJS); err != nil {
			return c.fail("bench: %v", err)
		}
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
	cpuR, cpuN := cpuTicks(svc.replicaPIDs)-cpuR0, cpuTicks(svc.natsPIDs)-cpuN0
	var tally clusterTally
	if clusterJS != nil {
		if tally, err = readClusterTally(ctx, clusterJS); err != nil {
			return c.fail("bench: %v", err)
		}
		tally = tally.since(tally0)
	}
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
	if o.replicas > 0 {
		where = fmt.Sprintf("%d replicas (ASK_STORE=jetstream, R3) on 3 NATS nodes, child processes", o.replicas)
		fmt.Fprintf(tw, "mode\t%s, JetStream sync %s, %s\n", mode, *syncMode, where)
	} else {
		fmt.Fprintf(tw, "mode\t%s, JetStream sync %s, SQLite synchronous=FULL, service %s\n", mode, *syncMode, where)
	}
	fmt.Fprintf(tw, "clicks acked (HTTP 200)\t%d (failed %d)\n", clicked.Load(), failed.Load())
	fmt.Fprintf(tw, "resumes\t%d\n", resumed.Load())
	fmt.Fprintf(tw, "resume publishes seen on the wire\t%d\n", wire.Load())
	fmt.Fprintf(tw, "answers/s end to end\t%.0f\n", answersPerSec)
	fmt.Fprintf(tw, "click→resume p50 / p99\t%v / %v\n", percentile(lat, 50), percentile(lat, 99))
	fmt.Fprintf(tw, "Slack ack p50 / p99\t%v / %v\n", percentile(ack, 50), percentile(ack, 99))
	if o.replicas > 0 {
		if n := resumed.Load(); n > 0 {
			per := func(ticks int64) float64 { return float64(ticks) / clockTicks * 1000 / float64(n) }
			fmt.Fprintf(tw, "CPU per answer: replicas / NATS nodes / both\t%.2f / %.2f / %.2f ms\n", per(cpuR), per(cpuN), per(cpuR+cpuN))
		}
		if n := resumed.Load(); n > 0 {
			fmt.Fprintf(tw, "stream writes per answer\t%s\n", tally.writesPer(n))
			fmt.Fprintf(tw, "JetStream API requests per answer\t%.2f\n", float64(tally.api)/float64(n))
		}
		fmt.Fprintf(tw, "baseline: JetStream publishes/s on the cluster, R3 (sync %s)\t%.0f (answers/s ÷ this = %.2f)\n", *syncMode, jsRate, answersPerSec/jsRate)
		fmt.Fprintf(tw, "baseline: NATS nodes' CPU per R3 publish\t%.3f ms\n", cpuPerPublish)
	} else {
		fmt.Fprintf(tw, "baseline: JetStream publishes/s (sync %s)\t%.0f (answers/s ÷ this = %.2f)\n", *syncMode, jsRate, answersPerSec/jsRate)
		fmt.Fprintf(tw, "baseline: SQLite single-row commits/s\t%.0f (answers/s ÷ this = %.2f)\n", sqlRate, answersPerSec/sqlRate)
		fmt.Fprintf(tw, "baseline: SQLite commit p50 / p99\t%v / %v\n", commits.P50.Round(time.Microsecond), commits.P99.Round(time.Microsecond))
	}
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
