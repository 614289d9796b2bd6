package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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

// benchAsk measures the asking path: agents publish questions on NATS (a
// Nats-Msg-Id each), the runtime records them, and the Slack adapter posts
// each card to the fake Slack. A question counts from just before its
// publish to the fake Slack receiving its card's chat.postMessage. The raw
// baselines (JetStream publishes, slack-go posts to the same fake, SQLite
// commits) are measured in the same run, after the service has stopped.
func (c *cli) benchAsk(ctx context.Context, o benchOptions) int {
	inflight, err := askInFlight(o)
	if err != nil {
		return c.usageError("bench", "%v", err)
	}
	n := o.ask
	dir, err := os.MkdirTemp("", "askbridge-bench-ask-")
	if err != nil {
		return c.fail("bench: %v", err)
	}
	defer os.RemoveAll(dir)

	var limits *bench.SlackLimits
	if o.slackLimits {
		limits = bench.NewSlackLimits(time.Second, o.slackBurst, time.Now)
	}
	t := newAskTracker(n, inflight, o.rate > 0)
	fake, err := startBenchSlack(benchSlackOptions{countOnly: true, limits: limits, onCard: t.shown})
	if err != nil {
		return c.fail("bench: fake Slack: %v", err)
	}
	defer fake.close()
	svc, err := c.startBenchService(ctx, dir, o.syncMode, fake.url, o.child)
	if err != nil {
		return c.fail("bench: start: %v", err)
	}
	cpu0 := cpuTicks(svc.replicaPIDs)
	run, err := c.askRun(ctx, o, svc, t)
	var child childUse
	if svc.childPID != 0 {
		child = childUse{rss: procRSS(svc.childPID), cpuTicks: cpuTicks(svc.replicaPIDs) - cpu0}
	}
	svc.stop()
	if err != nil {
		return c.fail("bench: %v", err)
	}
	run.posts = fake.posts.Load()
	if limits != nil {
		st := limits.Stats()
		run.limits = &st
	}

	fmt.Fprintf(c.stderr, "baselines: JetStream publish (sync %s), slack-go chat.postMessage to a fake Slack, SQLite single-row commits...\n", o.syncMode)
	base, err := askBaselines(ctx, dir, o.syncMode, n, fake.sample.Load())
	if err != nil {
		return c.fail("bench: baseline: %v", err)
	}
	c.askReport(o, inflight, t, run, base, child)
	if run.shown+run.failed < n {
		return exitError
	}
	return exitOK
}

// askInFlight checks the flags of --ask and says how many questions may
// be in flight: --concurrency, or by default 256, or all of them (a
// burst) with --slack-limits.
func askInFlight(o benchOptions) (int, error) {
	for _, name := range []string{"duration", "questions", "memprofile"} {
		if o.set[name] {
			return 0, fmt.Errorf("--%s applies to the answer path, not to --ask", name)
		}
	}
	if o.channels < 0 || o.slackBurst < 1 || o.concurrency < 1 || o.rate < 0 {
		return 0, errors.New("--channels must be 0 or more, --slack-burst and --concurrency 1 or more, --rate 0 or more")
	}
	switch {
	case o.set["concurrency"]:
		return o.concurrency, nil
	case o.slackLimits:
		return o.ask, nil
	}
	return 256, nil
}

// askTracker follows each question from its publish to its card.
type askTracker struct {
	start time.Time
	// askedAt and shownAt are nanoseconds since start (0: not yet);
	// state is 0 waiting, 1 shown, 2 failed.
	askedAt, shownAt []atomic.Int64
	// recordedAt is when the question's first event (asked) was seen,
	// reportedAt when its delivery report was: the stages between.
	recordedAt, reportedAt []atomic.Int64
	state                  []atomic.Int32
	done                   atomic.Int64 // shown or failed
	shownN, failedN        atomic.Int64
	dupes                  atomic.Int64 // a second card for a question
	lastCard               atomic.Int64
	// slots holds one token for each question in flight (closed loop);
	// nil in open loop.
	slots chan struct{}
}

func newAskTracker(n, inflight int, openLoop bool) *askTracker {
	t := &askTracker{start: time.Now(), askedAt: make([]atomic.Int64, n), shownAt: make([]atomic.Int64, n),
		recordedAt: make([]atomic.Int64, n), reportedAt: make([]atomic.Int64, n), state: make([]atomic.Int32, n)}
	if !openLoop {
		t.slots = make(chan struct{}, inflight)
	}
	return t
}

func (t *askTracker) since() int64 { return max(1, int64(time.Since(t.start))) }

// jobIndex reads the question number out of a bench job id (job-0000042).
func (t *askTracker) jobIndex(job string) (int, bool) {
	i, err := strconv.Atoi(strings.TrimPrefix(job, "job-"))
	return i, err == nil && strings.HasPrefix(job, "job-") && i >= 0 && i < len(t.state)
}

// shown records a card the fake Slack accepted for job.
func (t *askTracker) shown(job string) {
	i, ok := t.jobIndex(job)
	if !ok {
		return
	}
	now := t.since()
	if !t.state[i].CompareAndSwap(0, 1) {
		t.dupes.Add(1)
		return
	}
	t.shownAt[i].Store(now)
	for last := t.lastCard.Load(); now > last && !t.lastCard.CompareAndSwap(last, now); last = t.lastCard.Load() {
	}
	t.shownN.Add(1)
	t.finish()
}

// stamp records the first time something was seen of job's question in
// at, from a subject ending in the job id.
func (t *askTracker) stamp(at []atomic.Int64, subject string) {
	if i, ok := t.jobIndex(subject[strings.LastIndexByte(subject, '.')+1:]); ok {
		at[i].CompareAndSwap(0, t.since())
	}
}

// failed records a question whose delivery failed.
func (t *askTracker) failed(job string) {
	if i, ok := t.jobIndex(job); ok && t.state[i].CompareAndSwap(0, 2) {
		t.failedN.Add(1)
		t.finish()
	}
}

func (t *askTracker) finish() {
	t.done.Add(1)
	if t.slots != nil {
		<-t.slots
	}
}

// latencies are the ask→card times of the questions shown.
func (t *askTracker) latencies() []time.Duration { return between(t.askedAt, t.shownAt) }

// between is the times from one stamp to another, for the questions that
// have both.
func between(from, to []atomic.Int64) []time.Duration {
	var out []time.Duration
	for i := range from {
		if a, b := from[i].Load(), to[i].Load(); a != 0 && b != 0 {
			out = append(out, time.Duration(b-a))
		}
	}
	return out
}

// askResult is what one run of the asking path measured.
// childUse is what the service used when it ran as a child process:
// zero in this process.
type childUse struct {
	rss      int64 // bytes, at the end
	cpuTicks int64 // user and system time over the asking, clock ticks
}

type askResult struct {
	asked          int64
	shown, failed  int
	firstAsk, last time.Duration // since the tracker's start
	publishedBy    time.Duration // the last publish acknowledged
	writes         map[string]float64
	posts          int64
	limits         *bench.SlackLimitStats
}

// askQuestion is the i-th question: a job of its own, in channel i, or
// i modulo channels when they are shared.
func askQuestion(i, channels int) *bridge.Question {
	ch := i
	if channels > 0 {
		ch = i % channels
	}
	return &bridge.Question{Tenant: "bench", JobID: fmt.Sprintf("job-%07d", i), QuestionID: "q", TaskVersion: 1,
		Question: "Which colour should the report use?", Choices: []string{"red", "blue"}, Timeout: "1h",
		Route: &bridge.Route{Slack: &bridge.SlackRoute{Channel: fmt.Sprintf("C%07d", ch)}}}
}

// watch follows the questions' events (asked, delivery_failed) and
// delivery reports on core NATS, which costs the service nothing.
func (t *askTracker) watch(nc *nats.Conn) (stop func(), err error) {
	events, err := nc.Subscribe(bridge.PrefixEvent+".bench.>", func(m *nats.Msg) {
		t.stamp(t.recordedAt, m.Subject)
		if !bytes.Contains(m.Data, []byte(bridge.EventDeliveryFailed)) {
			return
		}
		var ev bridge.Event
		if json.Unmarshal(m.Data, &ev) == nil && ev.Type == bridge.EventDeliveryFailed {
			t.failed(ev.JobID)
		}
	})
	if err != nil {
		return nil, err
	}
	reports, err := nc.Subscribe(bridge.PrefixDelivery+".bench.>", func(m *nats.Msg) { t.stamp(t.reportedAt, m.Subject) })
	if err != nil {
		events.Unsubscribe()
		return nil, err
	}
	return func() {
		events.Unsubscribe()
		reports.Unsubscribe()
	}, nil
}

// askRun publishes the questions and waits until each is shown or failed,
// or nothing moved for o.stall.
func (c *cli) askRun(ctx context.Context, o benchOptions, svc *benchService, t *askTracker) (*askResult, error) {
	nc, err := benchConnect(svc.natsURL, svc.dataDir, false)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	unwatch, err := t.watch(nc)
	if err != nil {
		return nil, err
	}
	defer unwatch()
	anc, err := benchConnect(svc.natsURL, svc.dataDir, !o.trusted)
	if err != nil {
		return nil, err
	}
	defer anc.Close()
	ag, err := agent.New(anc)
	if err != nil {
		return nil, err
	}
	before, err := streamSeqs(ctx, nc)
	if err != nil {
		return nil, err
	}
	n := len(t.state)
	mode := fmt.Sprintf("closed loop, %d questions in flight", cap(t.slots))
	if o.rate > 0 {
		mode = fmt.Sprintf("open loop, %.0f questions/s", o.rate)
	}
	fmt.Fprintf(c.stderr, "asking %d questions (%s)...\n", n, mode)
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := &askResult{}
	var pubErr error
	var pubMu sync.Mutex
	publish := func(i int) {
		t.askedAt[i].Store(t.since())
		if err := ag.Publish(runCtx, askQuestion(i, o.channels)); err != nil {
			pubMu.Lock()
			pubErr = cmp.Or(pubErr, fmt.Errorf("publish question %d: %w", i, err))
			pubMu.Unlock()
			cancel()
			return
		}
		if atomic.AddInt64(&res.asked, 1) == int64(n) {
			res.publishedBy = time.Duration(t.since())
		}
	}
	published := make(chan struct{})
	go func() {
		defer close(published)
		publishAll(runCtx, n, o.rate, t, publish)
	}()
	err = c.awaitCards(runCtx, o.stall, n, t)
	cancel()
	<-published
	stopProfile()
	if pubErr != nil {
		return nil, pubErr
	}
	if err != nil && ctx.Err() != nil {
		return nil, err
	}
	// The delivery reports of the last cards follow their posts.
	time.Sleep(500 * time.Millisecond)
	after, err := streamSeqs(ctx, nc)
	if err != nil {
		return nil, err
	}
	res.writes = writesEach(before, after, n)
	res.shown, res.failed = int(t.shownN.Load()), int(t.failedN.Load())
	res.firstAsk, res.last = time.Duration(t.askedAt[0].Load()), time.Duration(t.lastCard.Load())
	return res, nil
}

// publishAll publishes question 0 to n-1: at rate a second (open loop),
// or as fast as t's slots of questions in flight allow.
func publishAll(ctx context.Context, n int, rate float64, t *askTracker, publish func(int)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	if rate > 0 {
		interval := time.Duration(float64(time.Second) / rate)
		start := time.Now()
		for i := 0; i < n && ctx.Err() == nil; i++ {
			if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
				time.Sleep(d)
			}
			wg.Go(func() { publish(i) })
		}
		return
	}
	var next atomic.Int64
	for range min(cap(t.slots), 64) {
		wg.Go(func() {
			for {
				select {
				case t.slots <- struct{}{}:
				case <-ctx.Done():
					return
				}
				i := int(next.Add(1)) - 1
				if i >= n {
					<-t.slots
					return
				}
				publish(i)
			}
		})
	}
}

// awaitCards waits until all n questions are shown or failed, printing
// progress, and gives up when none was for stall.
func (c *cli) awaitCards(ctx context.Context, stall time.Duration, n int, t *askTracker) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	seen, movedAt := int64(-1), time.Now()
	for {
		done := t.done.Load()
		if done >= int64(n) {
			fmt.Fprintf(c.stderr, "\r  %d shown, %d failed of %d\n", t.shownN.Load(), t.failedN.Load(), n)
			return nil
		}
		if done != seen {
			seen, movedAt = done, time.Now()
		} else if time.Since(movedAt) > stall {
			fmt.Fprintln(c.stderr)
			return fmt.Errorf("no card shown for %v, %d of %d", stall, done, n)
		}
		fmt.Fprintf(c.stderr, "\r  %5.1fs  %d shown, %d failed of %d", time.Since(t.start).Seconds(), t.shownN.Load(), t.failedN.Load(), n)
		select {
		case <-tick.C:
		case <-ctx.Done():
			fmt.Fprintln(c.stderr)
			return ctx.Err()
		}
	}
}

// writesEach is the messages each stream took between two readings of
// streamSeqs, per question of n: the streams with at least 0.005 each.
func writesEach(before, after map[string]uint64, n int) map[string]float64 {
	out := map[string]float64{}
	for name, seq := range after {
		if d := seq - before[name]; d*200 >= uint64(n) {
			out[name] = float64(d) / float64(n)
		}
	}
	return out
}

// streamSeqs is each stream's last sequence: messages ever stored in it,
// key-value buckets included.
func streamSeqs(ctx context.Context, nc *nats.Conn) (map[string]uint64, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	l := js.ListStreams(ctx)
	for info := range l.Info() {
		out[info.Config.Name] = info.State.LastSeq
	}
	if err := l.Err(); err != nil && !errors.Is(err, jetstream.ErrEndOfData) {
		return nil, fmt.Errorf("list streams: %w", err)
	}
	return out, nil
}

// sortedWrites lists stream writes a question, most first.
func sortedWrites(w map[string]float64) (string, float64) {
	names := slices.Collect(maps.Keys(w))
	slices.SortFunc(names, func(a, b string) int {
		if w[a] != w[b] {
			if w[a] > w[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var parts []string
	total := 0.0
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, w[k]))
		total += w[k]
	}
	return strings.Join(parts, ", "), total
}
