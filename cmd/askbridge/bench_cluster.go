package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/internal/bench"
	"github.com/askbridge/askbridge/internal/testenv/cluster"
)

// startClusterBench starts the cluster deployment for the bench: a 3-node
// NATS cluster (askbridge nats-node children, JetStream sync_interval
// always with syncMode always) and n askbridge serve replicas with
// ASK_STORE=jetstream and R3, the first alone (it makes the streams and
// buckets), then the others together.
func (c *cli) startClusterBench(ctx context.Context, dir, syncMode, slackURL string, n int) (*benchService, error) {
	bin, err := os.Executable()
	if err != nil {
		return nil, err
	}
	nodes, err := cluster.Start(ctx, cluster.Options{
		Dir:        filepath.Join(dir, "nats"),
		Command:    func(conf string) *exec.Cmd { return exec.Command(bin, "nats-node", conf) },
		SyncAlways: syncMode == "always",
	})
	if err != nil {
		return nil, err
	}
	svc := &benchService{natsURL: nodes.URLs()}
	var children []*benchChild
	svc.stop = func() {
		var wg sync.WaitGroup
		for _, ch := range children {
			wg.Go(ch.stop)
		}
		wg.Wait()
		nodes.Stop()
	}
	for _, node := range nodes.Nodes() {
		svc.natsPIDs = append(svc.natsPIDs, node.PID())
	}
	start := func(i int) (*benchChild, error) {
		return c.startChild(ctx, []string{"ASK_DATA_DIR=" + filepath.Join(dir, "r"+strconv.Itoa(i+1)), "ASK_LOG_LEVEL=error",
			"ASK_STORE=jetstream", "ASK_NATS_URL=" + nodes.URLs(), "ASK_NATS_REPLICAS=3", "ASK_NATS_SYNC=",
			"ASK_SLACK_BOT_TOKEN=xoxb-bench", "ASK_SLACK_SIGNING_SECRET=" + benchSecret, "ASK_SLACK_API_URL=" + slackURL + "/api/",
			"ASK_CONSOLE_SECRET=bench-console-secret-0123456789", "ASK_OPERATORS=slack:UBENCH"})
	}
	first, err := start(0)
	if err != nil {
		svc.stop()
		return nil, fmt.Errorf("replica r1: %w", err)
	}
	children = append(children, first)
	rest := make([]*benchChild, n-1)
	errs := make([]error, n-1)
	var wg sync.WaitGroup
	for i := range rest {
		wg.Go(func() { rest[i], errs[i] = start(i + 1) })
	}
	wg.Wait()
	for i, ch := range rest {
		if ch != nil {
			children = append(children, ch)
		}
		if errs[i] != nil {
			svc.stop()
			return nil, fmt.Errorf("replica r%d: %w", i+2, errs[i])
		}
	}
	for _, ch := range children {
		svc.httpAddrs = append(svc.httpAddrs, ch.httpAddr)
		svc.replicaPIDs = append(svc.replicaPIDs, ch.cmd.Process.Pid)
	}
	svc.httpAddr = svc.httpAddrs[0]
	return svc, nil
}

// cpuTicks sums the user and system time of pids, in clock ticks.
func cpuTicks(pids []int) int64 {
	var t int64
	for _, pid := range pids {
		t += procCPU(pid)
	}
	return t
}

// clusterTally is what the cluster has done so far: the messages each
// stream took and the JetStream API requests made. Two readings apart give
// what a run cost the NATS nodes beyond its CPU time.
type clusterTally struct {
	writes map[string]uint64
	api    uint64
}

func readClusterTally(ctx context.Context, js jetstream.JetStream) (clusterTally, error) {
	writes, err := bench.StreamWrites(ctx, js)
	if err != nil {
		return clusterTally{}, err
	}
	api, err := bench.APIRequests(ctx, js)
	return clusterTally{writes: writes, api: api}, err
}

// since is what was done between reading before and t.
func (t clusterTally) since(before clusterTally) clusterTally {
	out := clusterTally{writes: map[string]uint64{}, api: t.api - before.api}
	for name, seq := range t.writes {
		out.writes[name] = seq - before.writes[name]
	}
	return out
}

// writesPer is the messages written per answer, the total first and then
// each stream's, most first.
func (t clusterTally) writesPer(answers int64) string {
	var total uint64
	names := slices.Collect(maps.Keys(t.writes))
	for _, n := range names {
		total += t.writes[n]
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(t.writes[b], t.writes[a]), cmp.Compare(a, b)) })
	per := func(w uint64) string { return strconv.FormatFloat(float64(w)/float64(answers), 'f', 2, 64) }
	parts := []string{per(total)}
	for _, n := range names {
		if t.writes[n] > 0 {
			parts = append(parts, n+" "+per(t.writes[n]))
		}
	}
	return strings.Join(parts, ", ")
}
