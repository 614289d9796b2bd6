package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// clickAll clicks the cards for the run's duration, closed loop (so many
// clickers) or open loop (so many clicks a second), then waits for the
// resumes of the clicks acknowledged; stopProfile ends the CPU profile
// it started.
func (b *answerBench) clickAll(ctx context.Context) (stopProfile func(), err error) {
	o := b.o
	click := b.clicker()
	cards := b.fake.takeCards()
	b.mode = fmt.Sprintf("closed loop, %d clickers", o.concurrency)
	if o.rate > 0 {
		b.mode = fmt.Sprintf("open loop, %.0f clicks/s", o.rate)
	}
	b.where = "in this process"
	if o.child {
		b.where = "a child process"
	}
	fmt.Fprintf(b.c.stderr, "clicking for %v (%s)...\n", o.duration, b.mode)
	if o.memProfile != "" {
		if err := writeHeapProfile(o.memProfile + ".start"); err != nil {
			return nil, err
		}
	}
	if stopProfile, err = startCPUProfile(o.cpuProfile); err != nil {
		return nil, err
	}
	cpuR0, cpuN0 := cpuTicks(b.svc.replicaPIDs), cpuTicks(b.svc.natsPIDs)
	var tally0 clusterTally
	if b.clusterJS != nil {
		if tally0, err = readClusterTally(ctx, b.clusterJS); err != nil {
			return stopProfile, err
		}
	}
	start := time.Now()
	progress := time.NewTicker(time.Second)
	defer progress.Stop()
	go func() {
		for range progress.C {
			fmt.Fprintf(b.c.stderr, "\r  %5.1fs  clicks acked %d  resumes %d  try again %d  failed %d", time.Since(start).Seconds(), b.clicked.Load(), b.resumed.Load(), b.busy.Load(), b.failed.Load())
		}
	}()
	b.clickFor(ctx, cards, click, start, start.Add(o.duration))
	clickEnd := time.Now()
	if o.memProfile != "" {
		if err := writeHeapProfile(o.memProfile); err != nil {
			return stopProfile, err
		}
	}
	want := b.clicked.Load()
	for b.resumed.Load() < want && time.Since(clickEnd) < 60*time.Second && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	b.elapsed = time.Since(start)
	b.cpuR, b.cpuN = cpuTicks(b.svc.replicaPIDs)-cpuR0, cpuTicks(b.svc.natsPIDs)-cpuN0
	if b.clusterJS != nil {
		tally, err := readClusterTally(ctx, b.clusterJS)
		if err != nil {
			return stopProfile, err
		}
		b.tally = tally.since(tally0)
	}
	progress.Stop()
	fmt.Fprintln(b.c.stderr)
	return stopProfile, nil
}

// clickFor clicks cards from start until deadline: open loop at the
// run's rate, else closed loop with its clickers.
func (b *answerBench) clickFor(ctx context.Context, cards []benchCard, click func(benchCard), start, deadline time.Time) {
	var cwg sync.WaitGroup
	if b.o.rate > 0 {
		interval := time.Duration(float64(time.Second) / b.o.rate)
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
		for range b.o.concurrency {
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
}

// clicker is a person's click on a card: a signed POST
// /slack/interactions to a replica, counted with its ack's time.
func (b *answerBench) clicker() func(benchCard) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}, Timeout: 10 * time.Second}
	endpoints := []string{"http://" + b.svc.httpAddr + "/slack/interactions"}
	if len(b.svc.httpAddrs) > 0 {
		endpoints = endpoints[:0]
		for _, a := range b.svc.httpAddrs {
			endpoints = append(endpoints, "http://"+a+"/slack/interactions")
		}
	}
	return func(card benchCard) {
		body := card.payload()
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		// Behind a load balancer, a click reaches any replica.
		req, _ := http.NewRequest(http.MethodPost, endpoints[rand.IntN(len(endpoints))], strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", slackSign(benchSecret, ts, body))
		start := time.Now()
		b.lmu.Lock()
		b.clickAt[card.job] = start
		b.lmu.Unlock()
		resp, err := client.Do(req)
		took := time.Since(start)
		if err != nil {
			b.failed.Add(1)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
		case http.StatusServiceUnavailable:
			b.busy.Add(1)
			return
		default:
			b.failed.Add(1)
			return
		}
		b.clicked.Add(1)
		b.amu.Lock()
		b.acks = append(b.acks, took)
		b.amu.Unlock()
	}
}

// report prints what the run measured, beside its baselines.
func (b *answerBench) report() {
	o := b.o
	b.lmu.Lock()
	lat := slices.Clone(b.latencies)
	b.lmu.Unlock()
	b.amu.Lock()
	ack := slices.Clone(b.acks)
	b.amu.Unlock()
	resumed := b.resumed.Load()
	answersPerSec := float64(resumed) / b.elapsed.Seconds()
	tw := tabwriter.NewWriter(b.c.stdout, 0, 0, 2, ' ', 0)
	if o.replicas > 0 {
		where := fmt.Sprintf("%d replicas (ASK_STORE=jetstream, R3) on 3 NATS nodes, child processes", o.replicas)
		fmt.Fprintf(tw, "mode\t%s, JetStream sync %s, %s\n", b.mode, o.syncMode, where)
	} else {
		fmt.Fprintf(tw, "mode\t%s, JetStream sync %s, SQLite synchronous=FULL, service %s\n", b.mode, o.syncMode, b.where)
	}
	fmt.Fprintf(tw, "clicks acked (HTTP 200)\t%d (try again, HTTP 503: %d; failed: %d)\n", b.clicked.Load(), b.busy.Load(), b.failed.Load())
	fmt.Fprintf(tw, "resumes\t%d\n", resumed)
	fmt.Fprintf(tw, "resume publishes seen on the wire\t%d\n", b.wire.Load())
	fmt.Fprintf(tw, "answers/s end to end\t%.0f\n", answersPerSec)
	fmt.Fprintf(tw, "click→resume p50 / p99\t%v / %v\n", percentile(lat, 50), percentile(lat, 99))
	fmt.Fprintf(tw, "Slack ack p50 / p99\t%v / %v\n", percentile(ack, 50), percentile(ack, 99))
	if o.replicas > 0 {
		if resumed > 0 {
			per := func(ticks int64) float64 { return float64(ticks) / clockTicks * 1000 / float64(resumed) }
			fmt.Fprintf(tw, "CPU per answer: replicas / NATS nodes / both\t%.2f / %.2f / %.2f ms\n", per(b.cpuR), per(b.cpuN), per(b.cpuR+b.cpuN))
			fmt.Fprintf(tw, "stream writes per answer\t%s\n", b.tally.writesPer(resumed))
			fmt.Fprintf(tw, "JetStream API requests per answer\t%.2f\n", float64(b.tally.api)/float64(resumed))
		}
		fmt.Fprintf(tw, "baseline: JetStream publishes/s on the cluster, R3 (sync %s)\t%.0f (answers/s ÷ this = %.2f)\n", o.syncMode, b.jsRate, answersPerSec/b.jsRate)
		fmt.Fprintf(tw, "baseline: NATS nodes' CPU per R3 publish\t%.3f ms\n", b.cpuPerPublish)
	} else {
		fmt.Fprintf(tw, "baseline: JetStream publishes/s (sync %s)\t%.0f (answers/s ÷ this = %.2f)\n", o.syncMode, b.jsRate, answersPerSec/b.jsRate)
		fmt.Fprintf(tw, "baseline: SQLite single-row commits/s\t%.0f (answers/s ÷ this = %.2f)\n", b.sqlRate, answersPerSec/b.sqlRate)
		fmt.Fprintf(tw, "baseline: SQLite commit p50 / p99\t%v / %v\n", b.commits.P50.Round(time.Microsecond), b.commits.P99.Round(time.Microsecond))
	}
	if o.child {
		if resumed > 0 {
			fmt.Fprintf(tw, "service CPU per answer (user + system)\t%.2f ms\n", float64(b.cpuR)/clockTicks*1000/float64(resumed))
		}
		fmt.Fprintf(tw, "service RSS at the end\t%.0f MB\n", float64(procRSS(b.svc.childPID))/(1<<20))
	}
	tw.Flush()
}
