package torture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/askbridge/askbridge/internal/testenv/cluster"
)

// server is the askbridge child process, started and SIGKILLed on the same
// data directory and the same addresses.
type server struct {
	bin      string
	env      []string
	httpAddr string
	log      io.Writer

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// errExited is a child that exited before it was ready.
var errExited = errors.New("askbridge serve exited before it was ready")

// freePort reserves a loopback port long enough to learn its number.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// childEnv is this process's environment without its ASK_ settings, for
// a child configured by the run alone.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ASK_") {
			env = append(env, kv)
		}
	}
	return env
}

// newServer is the single-node service: embedded NATS at natsPort.
func newServer(bin, dataDir, sync string, natsPort, httpPort int, log io.Writer) *server {
	httpAddr := fmt.Sprintf("127.0.0.1:%d", httpPort)
	env := append(childEnv(),
		"ASK_DATA_DIR="+dataDir,
		"ASK_HTTP_ADDR="+httpAddr,
		fmt.Sprintf("ASK_NATS_LISTEN=127.0.0.1:%d", natsPort),
		"ASK_OPERATORS=cli:torture",
		"ASK_NATS_SYNC="+sync,
		"ASK_LOG_LEVEL=warn",
	)
	return &server{bin: bin, env: env, httpAddr: httpAddr, log: log}
}

// start starts the child and waits until GET /readyz answers 200.
func (s *server) start(ctx context.Context, readyWithin time.Duration) error {
	cmd := exec.Command(s.bin, "serve")
	cmd.Env = s.env
	cmd.Stdout, cmd.Stderr = s.log, s.log
	// Its own process group, so the kill reaches everything it started; and
	// killed with us if we die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s serve: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	rctx, cancel := context.WithTimeout(ctx, readyWithin)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, "http://"+s.httpAddr+"/readyz", nil)
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("%w: %v", errExited, cmd.ProcessState)
		case <-rctx.Done():
			s.kill()
			return fmt.Errorf("askbridge serve was not ready within %v", readyWithin)
		case <-tick.C:
		}
	}
}

// kill sends SIGKILL to the child's process group and reaps it.
func (s *server) kill() {
	s.signal(syscall.SIGKILL, 0)
}

// stop asks the child to stop (SIGTERM) and kills it after grace.
func (s *server) stop(grace time.Duration) {
	s.signal(syscall.SIGTERM, grace)
}

func (s *server) signal(sig syscall.Signal, grace time.Duration) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd, s.done = nil, nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cluster.SignalGroup(cmd, done, sig, grace)
}
