package torture

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/askbridge/askbridge/bridge/principal"
	"github.com/askbridge/askbridge/internal/freeport"
	"github.com/askbridge/askbridge/internal/testenv/cluster"
)

// readyWithin bounds each start of a child: askbridge until /readyz, a
// NATS node until its /healthz (current with the cluster).
const readyWithin = 60 * time.Second

// startServices starts what the run tortures, and the fake Slack its
// questions are shown on, and returns the NATS URL(s) its client connects
// to: one service with its embedded NATS, or (with Replicas) a 3-node NATS
// cluster and the replicas on it.
func (r *run) startServices(ctx context.Context, serverLog io.Writer, rep *Report) (string, error) {
	var err error
	if r.slack, err = startFakeSlack(r.onCard); err != nil {
		return "", err
	}
	if r.o.Replicas <= 0 {
		return r.startSingle(ctx, serverLog, rep)
	}
	return r.startCluster(ctx, serverLog, rep)
}

// startSingle starts the one service, with its embedded NATS.
func (r *run) startSingle(ctx context.Context, serverLog io.Writer, rep *Report) (string, error) {
	o := r.o
	natsPort, err := freeport.Pick()
	if err != nil {
		return "", fmt.Errorf("nats port: %w", err)
	}
	httpPort, err := freeport.Pick()
	if err != nil {
		return "", fmt.Errorf("http port: %w", err)
	}
	r.keysDir = o.DataDir
	r.srvs = []*server{newServer(o.Binary, o.DataDir, cmp.Or(o.Sync, "always"), natsPort, httpPort, r.slack.url, serverLog)}
	r.live = newLive(1)
	if err := r.restart(ctx, 0, rep); err != nil {
		return "", err
	}
	r.logf("askbridge serve ready (nats 127.0.0.1:%d, http 127.0.0.1:%d, data %s)", natsPort, httpPort, o.DataDir)
	return fmt.Sprintf("nats://127.0.0.1:%d", natsPort), nil
}

// startCluster starts the NATS cluster and the replicas on it.
func (r *run) startCluster(ctx context.Context, serverLog io.Writer, rep *Report) (string, error) {
	o := r.o
	// The cluster trusts askbridge's accounts, as docs/deploy.md sets one
	// up; every replica is handed the keys.
	keysDir := filepath.Join(o.DataDir, "keys")
	r.keysDir = keysDir
	keys, err := principal.LoadOrCreateKeys(keysDir)
	if err != nil {
		return "", err
	}
	if !keys.OwnOperator() {
		return "", fmt.Errorf("torture: %s: %w", keysDir, principal.ErrNotOwnOperator)
	}
	accounts, err := keys.ServerConfig(nil)
	if err != nil {
		return "", err
	}
	include := filepath.Join(o.DataDir, "accounts.conf")
	if err := os.WriteFile(include, []byte(accounts), 0o640); err != nil {
		return "", err
	}
	keyFile, err := os.ReadFile(filepath.Join(keysDir, principal.KeysFile))
	if err != nil {
		return "", err
	}
	nodes, err := cluster.Start(ctx, cluster.Options{
		Include:     include,
		Dir:         filepath.Join(o.DataDir, "nats"),
		Command:     func(conf string) *exec.Cmd { return exec.Command(o.Binary, "nats-node", conf) },
		SyncAlways:  cmp.Or(o.Sync, "always") == "always",
		ReadyWithin: readyWithin,
	})
	if err != nil {
		return "", err
	}
	r.nodes = nodes
	r.logf("NATS cluster ready: %s (logs in %s/nats/n*/nats.log)", nodes.URLs(), o.DataDir)
	for i := range o.Replicas {
		dataDir := filepath.Join(o.DataDir, "r"+strconv.Itoa(i+1))
		if err := os.MkdirAll(filepath.Join(dataDir, filepath.Dir(principal.KeysFile)), 0o700); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dataDir, principal.KeysFile), keyFile, 0o600); err != nil {
			return "", err
		}
		s, err := newReplica(o.Binary, dataDir, nodes.URLs(), r.slack.url, &prefixed{w: serverLog, prefix: fmt.Sprintf("r%d ", i+1)})
		if err != nil {
			return "", err
		}
		r.srvs = append(r.srvs, s)
	}
	r.live = newLive(len(r.srvs))
	if err := r.startReplicas(ctx, rep); err != nil {
		return "", err
	}
	r.logf("%d askbridge serve replicas ready (ASK_STORE=jetstream, R3)", len(r.srvs))
	return nodes.URLs(), nil
}

// startReplicas starts the replicas: the first makes the streams and
// buckets; the others then adopt them together.
func (r *run) startReplicas(ctx context.Context, rep *Report) error {
	if err := r.restart(ctx, 0, rep); err != nil {
		return fmt.Errorf("replica r1: %w", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(r.srvs))
	for i := 1; i < len(r.srvs); i++ {
		wg.Go(func() { errs[i] = r.restart(ctx, i, rep) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("replica r%d: %w", i+1, err)
		}
	}
	return nil
}

// newReplica is one askbridge replica on the cluster at urls, keeping the
// record in JetStream with three copies.
func newReplica(bin, dataDir, urls, slackURL string, log io.Writer) (*server, error) {
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return nil, fmt.Errorf("replica data dir: %w", err)
	}
	httpPort, err := freeport.Pick()
	if err != nil {
		return nil, fmt.Errorf("http port: %w", err)
	}
	httpAddr := fmt.Sprintf("127.0.0.1:%d", httpPort)
	env := append(childEnv(),
		"ASK_DATA_DIR="+dataDir,
		"ASK_HTTP_ADDR="+httpAddr,
		"ASK_STORE=jetstream",
		"ASK_NATS_URL="+urls,
		"ASK_NATS_REPLICAS=3",
		"ASK_CONSOLE_SECRET=torture-console-secret-0123456789",
	)
	env = append(env, serviceEnv(slackURL)...)
	return &server{bin: bin, env: env, httpAddr: httpAddr, log: log}, nil
}

// killOnce SIGKILLs the service, or a replica (target, else a random one)
// and, unless the kill is aimed at a click, a random NATS node at the same
// moment, and restarts what it killed: the node first (until it is
// current with the cluster), then the replica (until ready).
func (r *run) killOnce(ctx context.Context, rep *Report, target int, aimed bool) error {
	ctx = context.WithoutCancel(ctx) // a restart is not cut short by the end of the load
	i := target
	if i < 0 {
		i = rand.IntN(len(r.srvs))
	}
	node := -1
	if r.nodes != nil && !aimed {
		node = rand.IntN(len(r.nodes.Nodes()))
	}
	r.kills.Add(1)
	killed := time.Now()
	r.live.set(i, false)
	var wg sync.WaitGroup
	wg.Go(r.srvs[i].kill)
	if node >= 0 {
		wg.Go(func() { r.nodes.Kill(node) })
	}
	wg.Wait()
	rep.Kills++
	what := "kill -9"
	if len(r.srvs) > 1 {
		what = fmt.Sprintf("kill -9 replica r%d", i+1)
	}
	if aimed {
		rep.AimedKills++
		what += " (aimed at a click)"
	}
	if node >= 0 {
		rep.NodeKills++
		what += fmt.Sprintf(" and NATS node %s", r.nodes.Node(node).Name)
	}
	r.mu.Lock()
	r.killLog = append(r.killLog, kill{at: killed, what: what})
	r.mu.Unlock()
	if node >= 0 {
		if err := r.nodes.Restart(ctx, node); err != nil {
			return fmt.Errorf("torture: restart after kill %d: %w", rep.Kills, err)
		}
		if err := r.nodes.WaitReady(ctx); err != nil {
			return fmt.Errorf("torture: after kill %d: %w", rep.Kills, err)
		}
	}
	if err := r.restart(ctx, i, rep); err != nil {
		return fmt.Errorf("torture: restart after kill %d: %w", rep.Kills, err)
	}
	r.kills.Add(1)
	r.mu.Lock()
	asked, att := r.nAsk, r.nAtt
	r.mu.Unlock()
	r.logf("%s #%d at %s; restarted and ready in %v (asked %d, answers %d so far)",
		what, rep.Kills, clock(killed), time.Since(killed).Round(time.Millisecond), asked, att)
	return nil
}

// restart starts service i again. In the cluster, a replica that exits
// before it is ready is started again, as its supervisor would, within
// readyWithin; each such exit is counted in Report.EarlyExits and is a
// violation: a replica waits out an election (NATS electing leaders
// after a node's kill), it does not exit for one.
func (r *run) restart(ctx context.Context, i int, rep *Report) error {
	deadline := time.Now().Add(readyWithin)
	for {
		err := r.srvs[i].start(ctx, time.Until(deadline))
		if err == nil {
			r.live.set(i, true)
			return nil
		}
		if r.nodes == nil || !errors.Is(err, errExited) || time.Now().After(deadline) {
			return err
		}
		r.mu.Lock()
		rep.EarlyExits++
		kills := rep.Kills
		r.mu.Unlock()
		r.problem("replica r%d exited before it was ready (after %d kills): %v", i+1, kills, err)
		r.logf("replica r%d exited before it was ready; starting it again", i+1)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// killAll SIGKILLs every child left: the deferred end of a run.
func (r *run) killAll() {
	for _, s := range r.srvs {
		s.kill()
	}
	if r.nodes != nil {
		for i := range r.nodes.Nodes() {
			r.nodes.Kill(i)
		}
	}
}

// dumpStacks ends each server with SIGQUIT, which has the Go runtime
// write every goroutine's stack to its log: where a server that did not
// settle waits.
func (r *run) dumpStacks() {
	r.logf("the service did not settle: each server's goroutines follow in the servers' log (SIGQUIT)")
	for _, s := range r.srvs {
		s.signal(syscall.SIGQUIT, 10*time.Second)
	}
}

// stopAll stops the replicas, then the NATS nodes, gracefully.
func (r *run) stopAll() {
	var wg sync.WaitGroup
	for _, s := range r.srvs {
		wg.Go(func() { s.stop(10 * time.Second) })
	}
	wg.Wait()
	if r.nodes != nil {
		r.nodes.Stop()
	}
	if r.slack != nil {
		r.slack.close()
	}
}
