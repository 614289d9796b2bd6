package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/internal/testenv/cluster"
)

// get is a GET's status and body, or the error that stopped it.
func get(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

// TestStartWaitsForAClusterWithoutQuorum starts askbridge serve (this test
// binary as main) against a 3-node NATS cluster two of whose nodes are
// down, so JetStream has no meta leader and every stream call times out,
// as a replica meets a cluster mid-election. The replica waits: it says so
// in its log and on /readyz (503), and stays up; once the nodes are back
// it starts and /readyz answers 200.
func TestStartWaitsForAClusterWithoutQuorum(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a 3-node NATS cluster and the service")
	}
	c := cluster.StartT(t, cluster.Options{})
	c.Kill(1)
	c.Kill(2)
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "ASKBRIDGE_TEST_AS_MAIN=1", "ASK_DATA_DIR="+filepath.Join(t.TempDir(), "data"),
		"ASK_HTTP_ADDR=127.0.0.1:0", "ASK_NATS_URL="+c.URLs(), "ASK_STORE=jetstream", "ASK_NATS_REPLICAS=3")
	logs := &testenv.LockedBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	alive := func() {
		t.Helper()
		select {
		case err := <-exited:
			t.Fatalf("askbridge serve exited (%v) while the cluster had no quorum:\n%s", err, logs)
		default:
		}
	}
	var addr string
	testenv.CheckFor(t, time.Minute, 20*time.Millisecond, func() error {
		alive()
		m := regexp.MustCompile(`msg="http listening; starting" http=(\S+)`).FindStringSubmatch(logs.String())
		if m == nil || !strings.Contains(logs.String(), `msg="waiting for NATS JetStream`) {
			return fmt.Errorf("no wait in the log yet:\n%s", logs)
		}
		addr = m[1]
		return nil
	})
	if !strings.Contains(logs.String(), `step="connect and make its streams"`) {
		t.Errorf("the wait does not say what it waits for:\n%s", logs)
	}
	code, body, err := get("http://" + addr + "/readyz")
	if err != nil || code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "not ready: starting: waiting for NATS JetStream to connect and make its streams: ") {
		t.Fatalf("/readyz while waiting: %d %q %v, want 503 naming the wait", code, body, err)
	}
	if code, body, err := get("http://" + addr + "/healthz"); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz while waiting: %d %q %v, want 200 (alive)", code, body, err)
	}
	alive()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, i := range []int{1, 2} {
		if err := c.Restart(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	testenv.CheckFor(t, 2*time.Minute, 100*time.Millisecond, func() error {
		alive()
		code, body, err := get("http://" + addr + "/readyz")
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("/readyz: %d %q %v", code, body, err)
		}
		return nil
	})
	if !strings.Contains(logs.String(), `msg="askbridge serving"`) {
		t.Errorf("no start in the log:\n%s", logs)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("askbridge serve after SIGTERM: %v\n%s", err, logs)
		}
	case <-time.After(time.Minute):
		t.Fatalf("askbridge serve did not stop on SIGTERM:\n%s", logs)
	}
}

// TestWaitableStartErrors: a start waits out a cluster that is not ready,
// and JetStream not enabled for its account only while a cluster that has
// just started may not have enabled it yet; a setting stops it.
func TestWaitableStartErrors(t *testing.T) {
	t.Parallel()
	notEnabled := fmt.Errorf("stream ASK_QUESTIONS: %w", &jetstream.APIError{Code: 503,
		ErrorCode: jetstream.JSErrCodeJetStreamNotEnabledForAccount, Description: "JetStream not enabled for account"})
	notOn := &jetstream.APIError{Code: 503, ErrorCode: jetstream.JSErrCodeJetStreamNotEnabled, Description: "JetStream not enabled"}
	for _, c := range []struct {
		name  string
		err   error
		since time.Duration
		want  bool
	}{
		{"a timeout", context.DeadlineExceeded, time.Hour, true},
		{"not enabled for the account, at once", notEnabled, 0, true},
		{"not enabled for the account, within the settle", notEnabled, accountSettle - time.Second, true},
		{"not enabled for the account, past the settle", notEnabled, accountSettle, false},
		{"JetStream off on the server", notOn, 0, false},
		{"a bad credential", &bridge.ConnectError{Err: nats.ErrAuthorization}, 0, false},
	} {
		if got := waitable(c.err, c.since); got != c.want {
			t.Errorf("%s: waitable = %v, want %v", c.name, got, c.want)
		}
	}
}
