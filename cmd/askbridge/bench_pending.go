package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/internal/freeport"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/store/record"
)

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
	fake, err := startBenchSlack(benchSlackOptions{countOnly: true})
	if err != nil {
		return c.fail("bench: fake Slack: %v", err)
	}
	defer fake.close()
	env := []string{"ASK_DATA_DIR=" + dir, "ASK_ADMINS=cli:bench", "ASK_LOG_LEVEL=warn",
		"ASK_CONSOLE_SECRET=bench-console-secret-0123456789",
		"ASK_SLACK_BOT_TOKEN=xoxb-bench", "ASK_SLACK_SIGNING_SECRET=" + benchSecret, "ASK_SLACK_API_URL=" + fake.url + "/api/"}
	fillStart := time.Now()
	if viaNATS {
		if err := c.fillPendingViaNATS(ctx, env, dir, n, fake); err != nil {
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
	nc, err := benchConnect(child.natsURL, dir, false)
	if err != nil {
		return c.fail("bench: %v", err)
	}
	defer nc.Close()
	lists, err := listPending(nc, n)
	if err != nil {
		return c.fail("bench: %v", err)
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
	held, err := streamsHeld(ctx, nc)
	if err != nil {
		return c.fail("bench: streams: %v", err)
	}
	fmt.Fprintf(tw, "streams: messages / subjects held\t%s\n", held)
	tw.Flush()
	return exitOK
}

// fillPendingViaNATS asks n questions of a child service through NATS and
// waits until the fake Slack has every card, then stops the child.
func (c *cli) fillPendingViaNATS(ctx context.Context, env []string, dir string, n int, fake *benchSlack) error {
	fmt.Fprintf(c.stderr, "asking %d questions through NATS...\n", n)
	child, err := c.startChild(ctx, env)
	if err != nil {
		return err
	}
	defer child.stop()
	err = askPending(ctx, child.natsURL, dir, n, func(asked int) {
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
	return err
}

// listPending times 50 list calls, one tenant's first page of 50 each
// (question k is tenant k%100's), and checks each page is full.
func listPending(nc *nats.Conn, n int) ([]time.Duration, error) {
	var lists []time.Duration
	for i := range 50 {
		tenant := fmt.Sprintf("t-%03d", i%100)
		want := n / 100
		if i%100 < n%100 {
			want++
		}
		want = min(50, want)
		req, _ := json.Marshal(bridge.ListRequest{As: "cli:bench", Tenant: tenant, Limit: 50})
		t0 := time.Now()
		msg, err := nc.Request(bridge.APIList, req, 10*time.Second)
		if err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
		lists = append(lists, time.Since(t0))
		var reply bridge.ListReply
		if err := json.Unmarshal(msg.Data, &reply); err != nil || len(reply.Questions) != want {
			return nil, fmt.Errorf("list of tenant %s returned %d questions, want %d (%s)", tenant, len(reply.Questions), want, reply.Error)
		}
	}
	return lists, nil
}

// streamsHeld says, for each stream that holds any, how many messages and
// distinct subjects it holds: JetStream keeps an index entry in memory for
// each subject (docs/contract.md "Streams").
func streamsHeld(ctx context.Context, nc *nats.Conn) (string, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return "", err
	}
	var parts []string
	streams := js.ListStreams(ctx)
	for info := range streams.Info() {
		if st := info.State; st.Msgs > 0 || st.NumSubjects > 0 {
			parts = append(parts, fmt.Sprintf("%s %d / %d", info.Config.Name, st.Msgs, st.NumSubjects))
		}
	}
	if err := streams.Err(); err != nil {
		return "", err
	}
	if len(parts) == 0 {
		return "none", nil
	}
	slices.Sort(parts)
	return strings.Join(parts, ", "), nil
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
	hp, err := freeport.Pick()
	if err != nil {
		return nil, err
	}
	np, err := freeport.Pick()
	if err != nil {
		return nil, err
	}
	httpPort, natsPort := strconv.Itoa(hp), strconv.Itoa(np)
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
func askPending(ctx context.Context, natsURL, dataDir string, n int, progress func(int)) error {
	nc, err := benchConnect(natsURL, dataDir, false)
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
// service would have published them long ago), each shown in Slack: a
// Slack consumer new to the service asks again only what Slack shows
// nowhere (docs/contract.md "Streams"), and a long-running service's
// questions have their cards.
func fillPending(ctx context.Context, path string, n int, progress func(int)) error {
	st, err := store.Open(ctx, path)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now().UTC()
	const batch = 5000
	for done := 0; done < n; {
		nqs := make([]record.NewQuestion, 0, batch)
		for i := done; i < n && len(nqs) < batch; i++ {
			q := pendingQuestion(i)
			body, _ := json.Marshal(q)
			timeout := 72 * time.Hour
			// Spread the deadlines so the ladder has work far in the future.
			asked := now.Add(-time.Duration(i%3600) * time.Second)
			nq := record.NewQuestion{Key: record.Key{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: 1},
				Kind: bridge.KindQuestion, Body: body, AskedAt: asked, Deadline: asked.Add(timeout)}
			for j, step := range bridge.DefaultLadder {
				nq.Steps = append(nq.Steps, record.Step{Index: j, Target: step.To, Due: asked.Add(time.Duration(float64(timeout) * step.At))})
			}
			nq.Steps = append(nq.Steps, record.Step{Index: len(nq.Steps), Target: record.StepTimeout, Due: asked.Add(timeout)})
			nqs = append(nqs, nq)
		}
		res, err := st.AskMany(ctx, nqs)
		if err != nil {
			return err
		}
		shown := make([]record.ReportedDelivery, len(res))
		for i, r := range res {
			ref := &bridge.MessageRef{Platform: bridge.PlatformSlack, Channel: "C0123", MessageID: fmt.Sprintf("1700000000.%06d", done+i)}
			shown[i] = record.ReportedDelivery{Question: r.Record.ID, Delivery: bridge.Delivery{Tenant: r.Record.Tenant, JobID: r.Record.JobID,
				QuestionID: r.Record.QuestionID, TaskVersion: r.Record.TaskVersion, Platform: bridge.PlatformSlack, OK: true, Message: ref}}
		}
		if err := st.RecordDeliveries(ctx, shown, now); err != nil {
			return err
		}
		done += len(nqs)
		progress(done)
	}
	return nil
}
