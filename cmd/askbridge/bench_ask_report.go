package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/internal/bench"
)

// askBase is the raw baselines of the asking path: its parts alone.
type askBase struct {
	jsPublishes float64 // JetStream publishes/s, the service's sync mode
	slackPosts  float64 // slack-go chat.postMessage/s to a bare fake Slack
	commits     bench.Commits
}

// askBaselines measures the parts the asking path is made of, alone on
// the machine: JetStream publishes in syncMode, the card the run posted
// (sample) posted again through slack-go to a fake Slack without limits,
// and single-row SQLite commits.
// Each runs about as many operations as the asking did, within bounds, so
// that a tiny run stays tiny.
func askBaselines(ctx context.Context, dir, syncMode string, questions int, sample *benchSample) (askBase, error) {
	var b askBase
	var err error
	if b.jsPublishes, err = bench.JetStreamPublishRate(ctx, dir, syncMode == "always", min(max(10*questions, 500), 5000), 256); err != nil {
		return b, err
	}
	blocks, text := []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "Which colour should the report use?", false, false), nil, nil)}, "Which colour should the report use?"
	if sample != nil {
		var bs slack.Blocks
		if err := json.Unmarshal([]byte(sample.blocks), &bs); err != nil {
			return b, fmt.Errorf("the card posted: %w", err)
		}
		blocks, text = bs.BlockSet, sample.text
	}
	fake, err := startBenchSlack(benchSlackOptions{countOnly: true})
	if err != nil {
		return b, err
	}
	defer fake.close()
	if b.slackPosts, err = bench.SlackPostRate(ctx, fake.url+"/api/", min(max(10*questions, 500), 10000), 32, blocks, text); err != nil {
		return b, err
	}
	if b.commits, err = bench.SQLiteCommits(ctx, dir, min(max(questions, 200), 2000)); err != nil {
		return b, err
	}
	return b, nil
}

// askReport prints the asking path's summary table, then the same as one
// markdown row for docs/benchmarks.md.
func (c *cli) askReport(o benchOptions, inflight int, t *askTracker, run *askResult, base askBase, child childUse) {
	n := len(t.state)
	mode := fmt.Sprintf("closed loop, %d questions in flight", inflight)
	if o.rate > 0 {
		mode = fmt.Sprintf("open loop, %.0f questions/s", o.rate)
	}
	where := "in this process"
	if o.child {
		where = "a child process"
	}
	channels := "one per question"
	if o.channels > 0 {
		channels = fmt.Sprint(o.channels)
	}
	slackMode := "no rate limits"
	if o.slackLimits {
		slackMode = fmt.Sprintf("Slack's rate limits (chat.postMessage: %d at once, then 1 a second, a channel)", o.slackBurst)
	}
	span := run.last - run.firstAsk
	perSec := 0.0
	if span > 0 {
		perSec = float64(run.shown) / span.Seconds()
	}
	lat := t.latencies()
	p50, p99, pmax := coarse(percentile(lat, 50)), coarse(percentile(lat, 99)), coarse(percentile(lat, 100))
	writes, total := sortedWrites(run.writes)
	shown := fmt.Sprintf("%d of %d", run.shown, n)
	if run.shown == n {
		shown = fmt.Sprintf("all %d", n)
	}

	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "mode\t%s, JetStream sync %s, SQLite synchronous=FULL, service %s\n", mode, o.syncMode, where)
	fmt.Fprintf(tw, "fake Slack\t%s; channels: %s\n", slackMode, channels)
	fmt.Fprintf(tw, "questions published (acknowledged)\t%d, the last %v after the first\n", run.asked, (run.publishedBy - run.firstAsk).Round(time.Millisecond))
	fmt.Fprintf(tw, "cards shown\t%s (failed %d, not shown %d, second cards %d)\n", shown, run.failed, n-run.shown-run.failed, t.dupes.Load())
	fmt.Fprintf(tw, "questions/s, first publish to last card\t%.0f (%d in %v)\n", perSec, run.shown, span.Round(time.Millisecond))
	fmt.Fprintf(tw, "ask→card p50 / p99 / max\t%v / %v / %v\n", p50, p99, pmax)
	for _, st := range []struct {
		name     string
		from, to []atomic.Int64
	}{
		{"  publish → asked event (the runtime)", t.askedAt, t.recordedAt},
		{"  asked event → card (the Slack adapter)", t.recordedAt, t.shownAt},
		{"  card → delivery report (the Slack adapter)", t.shownAt, t.reportedAt},
	} {
		d := between(st.from, st.to)
		fmt.Fprintf(tw, "%s p50 / p99\t%v / %v\n", st.name, coarse(percentile(d, 50)), coarse(percentile(d, 99)))
	}
	fmt.Fprintf(tw, "chat.postMessage accepted\t%d (%.2f a question)\n", run.posts, float64(run.posts)/float64(n))
	if l := run.limits; l != nil {
		fmt.Fprintf(tw, "429s received\t%d\n", l.Limited)
		fmt.Fprintf(tw, "early retries (a call before its Retry-After)\t%d (in %d of %d channels)\n", l.EarlyRetries, l.EarlyChannels, l.Channels)
		fmt.Fprintf(tw, "Slack's pace alone\t%v (the busiest channel's posts at its limit)\n", l.Floor)
	}
	fmt.Fprintf(tw, "JetStream writes a question\t%.2f (%s)\n", total, writes)
	fmt.Fprintf(tw, "baseline: JetStream publishes/s (sync %s)\t%.0f (questions/s ÷ this = %.2f)\n", o.syncMode, base.jsPublishes, perSec/base.jsPublishes)
	fmt.Fprintf(tw, "baseline: slack-go chat.postMessage/s, bare fake\t%.0f (questions/s ÷ this = %.2f)\n", base.slackPosts, perSec/base.slackPosts)
	fmt.Fprintf(tw, "baseline: SQLite single-row commits/s\t%.0f (questions/s ÷ this = %.2f)\n", base.commits.PerSecond, perSec/base.commits.PerSecond)
	if child.rss > 0 {
		if run.shown > 0 {
			fmt.Fprintf(tw, "service CPU a question (user + system)\t%.2f ms\n", float64(child.cpuTicks)/clockTicks*1000/float64(run.shown))
		}
		fmt.Fprintf(tw, "service RSS at the end\t%.0f MB\n", float64(child.rss)/(1<<20))
	}
	tw.Flush()

	limited, early := "", ""
	if l := run.limits; l != nil {
		limited, early = fmt.Sprint(l.Limited), fmt.Sprint(l.EarlyRetries)
	}
	fmt.Fprintf(c.stdout, "\n| questions | channels | Slack limits | questions/s | ask→card p50 / p99 | shown / failed | 429s | early retries | JetStream publishes/s | slack-go posts/s |\n")
	fmt.Fprintf(c.stdout, "| ---: | ---: | --- | ---: | --- | --- | ---: | ---: | ---: | ---: |\n")
	fmt.Fprintf(c.stdout, "| %d | %s | %v | %.0f | %v / %v | %d / %d | %s | %s | %.0f | %.0f |\n",
		n, channels, o.slackLimits, perSec, p50, p99, run.shown, run.failed, limited, early, base.jsPublishes, base.slackPosts)
}

// coarse rounds a latency to what a reader compares: milliseconds from a
// second up.
func coarse(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Millisecond)
	}
	return d
}
