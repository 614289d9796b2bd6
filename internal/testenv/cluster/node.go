package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// LoadConfig reads a node's configuration file into server options.
func LoadConfig(conf string) (*server.Options, error) {
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		return nil, fmt.Errorf("cluster: config %s: %w", conf, err)
	}
	return opts, nil
}

// RunNode runs one nats-server from its configuration file until ctx ends
// or the process gets SIGTERM or SIGINT, logging to stderr. It is what a
// node's child process runs (Options.Command).
func RunNode(ctx context.Context, conf string) error {
	opts, err := LoadConfig(conf)
	if err != nil {
		return err
	}
	// Timestamps, so its log lines up with the replicas' after a kill.
	opts.NoSigs, opts.Logtime = true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("cluster: node %s: %w", conf, err)
	}
	ns.ConfigureLogger()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return fmt.Errorf("cluster: node %s: not ready for connections within 30s", conf)
	}
	<-ctx.Done()
	ns.Shutdown()
	ns.WaitForShutdown()
	return nil
}

// start starts the node from its configuration file.
func (n *Node) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ns != nil || n.cmd != nil {
		return fmt.Errorf("cluster: %s is already running", n.Name)
	}
	if n.command == nil {
		opts, err := LoadConfig(n.conf)
		if err != nil {
			return err
		}
		opts.NoSigs, opts.NoLog = true, true
		ns, err := server.NewServer(opts)
		if err != nil {
			return fmt.Errorf("cluster: %s: %w", n.Name, err)
		}
		go ns.Start()
		if !ns.ReadyForConnections(30 * time.Second) {
			ns.Shutdown()
			ns.WaitForShutdown()
			if n.portTaken() {
				return fmt.Errorf("cluster: %s: %w", n.Name, errPortTaken)
			}
			return fmt.Errorf("cluster: %s: not ready for connections within 30s", n.Name)
		}
		n.ns = ns
		return nil
	}
	logf, err := os.OpenFile(n.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		return fmt.Errorf("cluster: %s: log: %w", n.Name, err)
	}
	cmd := n.command(n.conf)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, and killed with us if we die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("cluster: start %s: %w", n.Name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	n.cmd, n.done = cmd, done
	return nil
}

// kill stops the node at once: SIGKILL to a child, Shutdown in process.
func (n *Node) kill() { n.signal(syscall.SIGKILL, 0) }

// stop asks the node to stop and kills it after grace.
func (n *Node) stop(grace time.Duration) { n.signal(syscall.SIGTERM, grace) }

func (n *Node) signal(sig syscall.Signal, grace time.Duration) {
	n.mu.Lock()
	ns, cmd, done := n.ns, n.cmd, n.done
	n.ns, n.cmd, n.done = nil, nil, nil
	n.mu.Unlock()
	if ns != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		return
	}
	if cmd == nil {
		return
	}
	SignalGroup(cmd, done, sig, grace)
}

// SignalGroup sends sig to the process group of cmd, a child started in a
// group of its own, and waits until done closes (the child was reaped).
// A signal other than SIGKILL gets grace to end it; then SIGKILL does.
func SignalGroup(cmd *exec.Cmd, done <-chan struct{}, sig syscall.Signal, grace time.Duration) {
	pid := cmd.Process.Pid
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = cmd.Process.Signal(sig)
	}
	if sig != syscall.SIGKILL {
		select {
		case <-done:
			return
		case <-time.After(grace):
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	<-done
}

// PID is the node's process id when it runs as a child process, else 0.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// portTaken reports whether another process listens on one of n's ports,
// which n is not using: why an in-process node did not start.
func (n *Node) portTaken() bool {
	for _, port := range []int{n.ClientPort, n.ClusterPort, n.MonitorPort} {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return true
		}
		ln.Close()
	}
	return false
}
