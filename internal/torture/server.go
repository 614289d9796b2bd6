package torture

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
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

	// gen counts the kills and stops: a request that fails while it
	// changes was cut off by one.
	gen atomic.Int64

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// errExited is a child that exited before it was ready.
var errExited = errors.New("askbridge serve exited before it was ready")

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
func newServer(bin, dataDir, sync string, natsPort, httpPort int, slackURL string, log io.Writer) *server {
	httpAddr := fmt.Sprintf("127.0.0.1:%d", httpPort)
	env := append(childEnv(),
		"ASK_DATA_DIR="+dataDir,
		"ASK_HTTP_ADDR="+httpAddr,
		fmt.Sprintf("ASK_NATS_LISTEN=127.0.0.1:%d", natsPort),
		"ASK_NATS_SYNC="+sync,
	)
	env = append(env, serviceEnv(slackURL)...)
	return &server{bin: bin, env: env, httpAddr: httpAddr, log: log}
}

// serviceEnv is what every service of a run is configured with: who
// answers, and Slack (the fake one) with the run's signing secret. Its log
// level is warn unless the run's own ASK_LOG_LEVEL says otherwise.
func serviceEnv(slackURL string) []string {
	return []string{
		"ASK_OPERATORS=" + cliIdentity + "," + clickIdentity,
		"ASK_LOG_LEVEL=" + cmp.Or(os.Getenv("ASK_LOG_LEVEL"), "warn"),
		"ASK_SLACK_BOT_TOKEN=xoxb-torture",
		"ASK_SLACK_SIGNING_SECRET=" + slackSecret,
		"ASK_SLACK_API_URL=" + slackURL,
	}
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
	// Its timeout only detects a hang: /readyz bounds its own checks at 3 s.
	client := &http.Client{Timeout: 5 * time.Second}
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
	s.gen.Add(1)
	cluster.SignalGroup(cmd, done, sig, grace)
}

// prefixed writes each whole line written to it to w with prefix before
// it: the replicas share one log, and each line says whose it is.
type prefixed struct {
	w      io.Writer
	prefix string

	mu   sync.Mutex
	part []byte // a line not ended yet
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.part = append(p.part, b...)
	var out []byte
	for {
		i := bytes.IndexByte(p.part, '\n')
		if i < 0 {
			break
		}
		out = append(append(out, p.prefix...), p.part[:i+1]...)
		p.part = p.part[i+1:]
	}
	if len(out) > 0 {
		if _, err := p.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}
