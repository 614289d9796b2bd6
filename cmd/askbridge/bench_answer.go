package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/internal/bench"
)

// benchAnswers drives the real answer path: agents ask, people click the
// cards through signed POST /slack/interactions, and the agents read their
// resumes. Its steps are answerBench's methods, in the order they run.
func (c *cli) benchAnswers(ctx context.Context, o benchOptions) int {
	b := &answerBench{c: c, o: o, n: o.questions, resumedJob: map[string]bool{}, clickAt: map[string]time.Time{}}
	if b.n == 0 {
		b.n = 30000
		if o.rate > 0 {
			b.n = int(o.rate*o.duration.Seconds()) + 100
		}
	}
	dir, err := os.MkdirTemp("", "askbridge-bench-")
	if err != nil {
		return c.fail("bench: %v", err)
	}
	defer os.RemoveAll(dir)
	if err := b.localBaselines(ctx, dir); err != nil {
		return c.fail("bench: baseline: %v", err)
	}
	if b.fake, err = startBenchSlack(benchSlackOptions{}); err != nil {
		return c.fail("bench: fake Slack: %v", err)
	}
	defer b.fake.close()
	if o.replicas > 0 {
		b.svc, err = c.startClusterBench(ctx, dir, o.syncMode, b.fake.url, o.replicas)
	} else {
		b.svc, err = c.startBenchService(ctx, dir, o.syncMode, b.fake.url, o.child)
	}
	if err != nil {
		return c.fail("bench: start: %v", err)
	}
	defer b.svc.stop()
	if b.nc, err = benchConnect(b.svc.natsURL, b.svc.dataDir, false); err != nil {
		return c.fail("bench: %v", err)
	}
	defer b.nc.Close()
	if err := b.clusterBaseline(ctx); err != nil {
		return c.fail("bench: %v", err)
	}
	stop, err := b.watchResumes()
	if err != nil {
		return c.fail("bench: %v", err)
	}
	defer stop()
	if err := b.ask(ctx); err != nil {
		if errors.Is(err, errBenchStopped) {
			return exitError
		}
		return c.fail("bench: %v", err)
	}
	stopProfile, err := b.clickAll(ctx)
	if err != nil {
		return c.fail("bench: %v", err)
	}
	defer stopProfile()
	b.report()
	return exitOK
}

// errBenchStopped: the run was interrupted; there is nothing to report.
var errBenchStopped = errors.New("bench: stopped")

// answerBench is one run of benchAnswers: what it started and what it
// counts.
type answerBench struct {
	c *cli
	o benchOptions
	// n is how many questions it asks, one job each.
	n         int
	fake      *benchSlack
	svc       *benchService
	nc        *nats.Conn
	clusterJS jetstream.JetStream // with replicas

	// The baselines.
	jsRate, sqlRate, cpuPerPublish float64
	commits                        bench.Commits

	// Resumes, as watchResumes counts them.
	resumed, wire atomic.Int64
	lmu           sync.Mutex
	resumedJob    map[string]bool
	clickAt       map[string]time.Time
	latencies     []time.Duration

	// Clicks, as click counts them: acknowledged, answered 503 (not
	// recorded within Slack's budget: the person tries again), and failed
	// otherwise.
	clicked, busy, failed atomic.Int64
	amu                   sync.Mutex
	acks                  []time.Duration

	// What the clicking measured (clickAll).
	mode, where string
	elapsed     time.Duration
	cpuR, cpuN  int64
	tally       clusterTally
}

// localBaselines measures, for a single node, what the machine does at
// all: JetStream publishes and SQLite single-row commits. They run about
// as many operations as the run asks questions, within bounds, so that a
// tiny run stays tiny.
func (b *answerBench) localBaselines(ctx context.Context, dir string) (err error) {
	if b.o.replicas > 0 {
		return nil
	}
	fmt.Fprintf(b.c.stderr, "baselines: JetStream publish (sync %s) and SQLite single-row commits...\n", b.o.syncMode)
	if b.jsRate, err = bench.JetStreamPublishRate(ctx, dir, b.o.syncMode == "always", b.publishes(), 256); err != nil {
		return err
	}
	if b.commits, err = bench.SQLiteCommits(ctx, dir, min(max(b.n, 500), 5000)); err != nil {
		return err
	}
	b.sqlRate = b.commits.PerSecond
	return nil
}

// publishes is how many publishes a JetStream baseline makes.
func (b *answerBench) publishes() int { return min(max(10*b.n, 2000), 20000) }

// clusterBaseline measures JetStream publishes on the cluster, R3, and
// the NATS nodes' CPU for each (with replicas only).
func (b *answerBench) clusterBaseline(ctx context.Context) error {
	if b.o.replicas == 0 {
		return nil
	}
	fmt.Fprintf(b.c.stderr, "baseline: JetStream publish on the cluster, R3 (sync %s)...\n", b.o.syncMode)
	js, err := jetstream.New(b.nc)
	if err != nil {
		return err
	}
	cpu0 := cpuTicks(b.svc.natsPIDs)
	if b.jsRate, err = bench.PublishRate(ctx, js, 3, b.publishes(), 256); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	b.cpuPerPublish = float64(cpuTicks(b.svc.natsPIDs)-cpu0) / clockTicks * 1000 / float64(b.publishes())
	b.clusterJS = js
	return nil
}

// watchResumes counts the resumes the agents get, each job's first, and
// the time from its click.
func (b *answerBench) watchResumes() (stop func(), err error) {
	sub, err := b.nc.Subscribe(bridge.PrefixResume+".bench.>", func(m *nats.Msg) {
		now := time.Now()
		var res bridge.Resume
		if json.Unmarshal(m.Data, &res) != nil {
			return
		}
		// A core subscription sees every publish, also a second one of
		// the same resume that JetStream dropped as a duplicate (two
		// replicas relaying one outbox row): count each job's first.
		b.wire.Add(1)
		b.lmu.Lock()
		defer b.lmu.Unlock()
		if b.resumedJob[res.JobID] {
			return
		}
		b.resumedJob[res.JobID] = true
		b.resumed.Add(1)
		if at, ok := b.clickAt[res.JobID]; ok {
			b.latencies = append(b.latencies, now.Sub(at))
		}
	})
	if err != nil {
		return nil, err
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// ask asks the questions, one job (and one Slack channel, so per-channel
// pacing does not throttle the fake) per question, and waits for their
// cards.
func (b *answerBench) ask(ctx context.Context) error {
	ag, err := agent.New(b.nc)
	if err != nil {
		return err
	}
	n := b.n
	fmt.Fprintf(b.c.stderr, "asking %d questions...\n", n)
	var askTally clusterTally
	if b.clusterJS != nil {
		if askTally, err = readClusterTally(ctx, b.clusterJS); err != nil {
			return err
		}
	}
	askStart := time.Now()
	err = askEach(ctx, ag, n, 16, nil, func(i int) *bridge.Question {
		return &bridge.Question{Tenant: "bench", JobID: fmt.Sprintf("job-%06d", i), QuestionID: "q", TaskVersion: 1,
			Question: "Which colour should the report use?", Choices: []string{"red", "blue"}, Timeout: "1h",
			Route: &bridge.Route{Slack: &bridge.SlackRoute{Channel: fmt.Sprintf("C%06d", i)}}}
	})
	if err != nil {
		return fmt.Errorf("ask: %w", err)
	}
	for b.fake.cards() < n {
		if ctx.Err() != nil {
			return errBenchStopped
		}
		fmt.Fprintf(b.c.stderr, "\r  %d of %d cards posted", b.fake.cards(), n)
		time.Sleep(500 * time.Millisecond)
	}
	fmt.Fprintf(b.c.stderr, "\r  %d cards posted in %v (%.0f questions/s asked and shown)\n", n, time.Since(askStart).Round(time.Millisecond), float64(n)/time.Since(askStart).Seconds())
	if b.clusterJS != nil {
		after, err := readClusterTally(ctx, b.clusterJS)
		if err != nil {
			return err
		}
		askTally = after.since(askTally)
		fmt.Fprintf(b.c.stderr, "  stream writes per question asked: %s\n", askTally.writesPer(int64(n)))
	}
	return nil
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
