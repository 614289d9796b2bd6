// Package cluster starts a 3-node nats-server cluster with JetStream on
// loopback, for the tests and the torture run that check askbridge against
// a replicated record (docs/design.md). Each node has its own store
// directory and fixed ports, so a node killed abruptly restarts where its
// peers and clients expect it, on the data it had.
//
// A node runs either in this process (server.NewServer; Kill is then an
// immediate Shutdown without lame duck mode, which still closes its files
// cleanly) or, when Options.Command is set, as a child process running one
// nats-server from its configuration file (RunNode), so that Kill is a real
// SIGKILL: nothing flushed, nothing said to the peers.
package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/deploy"
	"github.com/askbridge/askbridge/internal/freeport"
)

// Name is the cluster's name in each node's configuration.
const Name = "askbridge-test"

// nodeTemplate is the node configuration askbridge ships (deploy/nats).
var nodeTemplate = template.Must(template.New("node.conf").Parse(deploy.NATSNode))

// Options shape a cluster.
type Options struct {
	// Dir holds each node's configuration file, store directory and log.
	Dir string
	// Size is the number of nodes; 3 when zero.
	Size int
	// Command, when set, makes the command that runs one node from its
	// configuration file as a child process (such as "askbridge nats-node
	// <conf>", or a test binary calling RunNode). Nil runs the nodes in
	// this process.
	Command func(conf string) *exec.Cmd
	// SyncAlways makes each node fsync every JetStream write (sync_interval:
	// always); otherwise the server's default applies. A SIGKILL loses
	// nothing written either way: the kernel still holds the pages.
	SyncAlways bool
	// ReadyWithin bounds each wait for the cluster or a node to be ready;
	// 60 s when zero.
	ReadyWithin time.Duration
	// Include, when set, is a configuration file every node includes: the
	// accounts `askbridge creds nats-config` writes, which make the
	// cluster admit askbridge's credentials only.
	Include string
}

// Cluster is a running cluster.
type Cluster struct {
	o     Options
	nodes []*Node
}

// Node is one nats-server of the cluster.
type Node struct {
	// Name is the server's name: n1, n2, ...
	Name string
	// ClientPort, ClusterPort and MonitorPort are fixed for the node's life,
	// restarts included.
	ClientPort, ClusterPort, MonitorPort int
	conf, log                            string
	command                              func(conf string) *exec.Cmd

	mu   sync.Mutex
	ns   *server.Server // in this process
	cmd  *exec.Cmd      // a child process
	done chan struct{}  // closed when the child has exited
}

// URL is the node's client URL.
func (n *Node) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.ClientPort) }

// Running reports whether the node was started and not killed or stopped.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ns != nil || n.cmd != nil
}

// Start writes each node's configuration, starts every node and waits until
// the cluster has a JetStream meta leader that every node follows. A port
// another process took between freeport.Pick and the node's listen (the suite's
// other tests listen on random ports too) makes that node exit at once: the
// cluster is then started again on new ports, a few times at most.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Dir == "" {
		return nil, errors.New("cluster: Options.Dir is required")
	}
	if o.Size <= 0 {
		o.Size = 3
	}
	if o.ReadyWithin <= 0 {
		o.ReadyWithin = 60 * time.Second
	}
	for attempt := 1; ; attempt++ {
		c, err := startOnce(ctx, o)
		if !errors.Is(err, errPortTaken) || attempt == portAttempts {
			return c, err
		}
		if err := os.RemoveAll(o.Dir); err != nil {
			return nil, fmt.Errorf("cluster: start again: %w", err)
		}
	}
}

// portAttempts bounds the starts on new ports.
const portAttempts = 3

// errPortTaken is a node that could not listen on a port it was given.
var errPortTaken = errors.New("a port was taken by another process")

func startOnce(ctx context.Context, o Options) (*Cluster, error) {
	c := &Cluster{o: o}
	for i := range o.Size {
		n := &Node{Name: fmt.Sprintf("n%d", i+1), command: o.Command}
		for _, p := range []*int{&n.ClientPort, &n.ClusterPort, &n.MonitorPort} {
			port, err := freeport.Pick()
			if err != nil {
				return nil, fmt.Errorf("cluster: port for %s: %w", n.Name, err)
			}
			*p = port
		}
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		if err := c.writeConf(n); err != nil {
			return nil, err
		}
	}
	for _, n := range c.nodes {
		if err := n.start(); err != nil {
			c.Stop()
			return nil, err
		}
	}
	if err := c.WaitReady(ctx); err != nil {
		c.Stop()
		for _, n := range c.nodes {
			if log, _ := os.ReadFile(n.log); bytes.Contains(log, []byte("address already in use")) {
				return nil, fmt.Errorf("cluster: %s: %w: %w", n.Name, errPortTaken, err)
			}
		}
		return nil, err
	}
	return c, nil
}

// writeConf writes n's nats-server configuration file, with routes to
// every other node.
func (c *Cluster) writeConf(n *Node) error {
	dir := filepath.Join(c.o.Dir, n.Name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("cluster: %s: %w", n.Name, err)
	}
	var routes []string
	for _, p := range c.nodes {
		if p != n {
			routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p.ClusterPort))
		}
	}
	if c.o.Include != "" {
		accounts, err := os.ReadFile(c.o.Include)
		if err != nil {
			return fmt.Errorf("cluster: %s: %w", n.Name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "accounts.conf"), accounts, 0o640); err != nil {
			return fmt.Errorf("cluster: %s: %w", n.Name, err)
		}
	}
	var conf strings.Builder
	err := nodeTemplate.Execute(&conf, map[string]any{
		"Name": n.Name, "Listen": fmt.Sprintf("127.0.0.1:%d", n.ClientPort), "Monitor": fmt.Sprintf("127.0.0.1:%d", n.MonitorPort),
		"StoreDir": filepath.Join(dir, "store"), "SyncAlways": c.o.SyncAlways, "Cluster": Name,
		"ClusterListen": fmt.Sprintf("127.0.0.1:%d", n.ClusterPort), "Routes": routes, "Accounts": c.o.Include != "",
	})
	if err != nil {
		return fmt.Errorf("cluster: %s: %w", n.Name, err)
	}
	n.conf = filepath.Join(dir, "nats.conf")
	n.log = filepath.Join(dir, "nats.log")
	if err := os.WriteFile(n.conf, []byte(conf.String()), 0o640); err != nil {
		return fmt.Errorf("cluster: %s: %w", n.Name, err)
	}
	return nil
}

// Nodes returns the nodes, n1 first.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Node returns node i (0-based).
func (c *Cluster) Node(i int) *Node { return c.nodes[i] }

// URLs is every node's client URL separated by commas, as ASK_NATS_URL
// and nats.Connect take them.
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		urls[i] = n.URL()
	}
	return strings.Join(urls, ",")
}

// Kill stops node i abruptly: SIGKILL for a child process, an immediate
// Shutdown in this process.
func (c *Cluster) Kill(i int) { c.nodes[i].kill() }

// Restart starts node i again on its store directory and ports, and waits
// until it is current with the cluster (its /healthz answers 200).
func (c *Cluster) Restart(ctx context.Context, i int) error {
	n := c.nodes[i]
	n.kill()
	if err := n.start(); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, c.o.ReadyWithin)
	defer cancel()
	return n.waitHealthy(rctx)
}

// WaitReady waits until every running node answers /healthz with 200: it
// knows the meta leader and its streams and consumers are current.
func (c *Cluster) WaitReady(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, c.o.ReadyWithin)
	defer cancel()
	for _, n := range c.nodes {
		if !n.Running() {
			continue
		}
		if err := n.waitHealthy(rctx); err != nil {
			return err
		}
	}
	return c.waitPeersOnline(rctx)
}

// waitPeersOnline waits until the cluster places a stream with a replica
// on every running node: a meta leader refuses one ("no suitable peers for
// placement, peer offline") until it has heard every peer's statistics,
// although every node answers /healthz. A cluster that trusts askbridge's
// accounts (Options.Include) takes no anonymous client, and is not probed:
// the service waits for its streams by itself.
func (c *Cluster) waitPeersOnline(ctx context.Context) error {
	var running []*Node
	for _, n := range c.nodes {
		if n.Running() {
			running = append(running, n)
		}
	}
	if c.o.Include != "" || len(running) < 2 {
		return nil
	}
	nc, err := nats.Connect(running[0].URL())
	if err != nil {
		return fmt.Errorf("cluster: probe: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("cluster: probe: %w", err)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "CLUSTER_READY_PROBE", Subjects: []string{"cluster.ready.probe"},
			Replicas: len(running), Storage: jetstream.MemoryStorage})
		if err == nil {
			if err := js.DeleteStream(ctx, "CLUSTER_READY_PROBE"); err != nil {
				return fmt.Errorf("cluster: probe: %w", err)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: not ready: a stream with %d replicas: %w", len(running), err)
		case <-tick.C:
		}
	}
}

// Stop shuts every node down (SIGTERM, then SIGKILL after 10 s).
func (c *Cluster) Stop() {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.stop(10 * time.Second) }()
	}
	wg.Wait()
}

// Health is the node's /healthz answer: nil when it answers 200.
func (n *Node) Health(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/healthz", n.MonitorPort), nil)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: /healthz %d: %s", n.Name, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

func (n *Node) waitHealthy(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := n.Health(ctx)
		if err == nil {
			return nil
		}
		n.mu.Lock()
		done := n.done
		n.mu.Unlock()
		select {
		case <-done:
			return fmt.Errorf("cluster: %s exited before it was ready (log %s)", n.Name, n.log)
		case <-ctx.Done():
			return fmt.Errorf("cluster: %s not ready: %w (log %s)", n.Name, err, n.log)
		case <-tick.C:
		}
	}
}
