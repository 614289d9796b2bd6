package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestSIGHUPWithoutAPolicyKeepsServing sends a real SIGHUP to askbridge
// serve without ASK_POLICY (a closed terminal, a supervisor's reload): it
// says there is no policy to re-read and keeps serving, and a SIGTERM
// then stops it cleanly.
func TestSIGHUPWithoutAPolicyKeepsServing(t *testing.T) {
	t.Parallel()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "ASKBRIDGE_TEST_AS_MAIN=1", "ASK_DATA_DIR="+filepath.Join(t.TempDir(), "data"),
		"ASK_HTTP_ADDR=127.0.0.1:0", "ASK_NATS_LISTEN=127.0.0.1:0")
	logs := &testenv.LockedBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waitLog := func(want string) {
		t.Helper()
		testenv.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
			select {
			case err := <-exited:
				t.Fatalf("askbridge serve exited (%v) before %q:\n%s", err, want, logs)
			default:
			}
			if !strings.Contains(logs.String(), want) {
				return fmt.Errorf("no %q in the log:\n%s", want, logs)
			}
			return nil
		})
	}
	waitLog(`msg="askbridge serving"`)
	m := regexp.MustCompile(`msg="askbridge serving" http=(\S+)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no HTTP address in the log:\n%s", logs)
	}
	for range 2 {
		_ = cmd.Process.Signal(syscall.SIGHUP)
	}
	waitLog(`msg="SIGHUP: ASK_POLICY is not set; no policy to re-read"`)
	resp, err := http.Get("http://" + m[1] + "/healthz")
	if err != nil {
		t.Fatalf("/healthz after SIGHUP: %v\n%s", err, logs)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz after SIGHUP: %d", resp.StatusCode)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("askbridge serve after SIGHUPs and a SIGTERM: %v\n%s", err, logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("askbridge serve did not stop on SIGTERM:\n%s", logs)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("an ERROR line:\n%s", logs)
	}
}

// TestPolicyReloadReplacesMCPAutoAllow checks what SIGHUP does
// (reloadPolicy, which the signal calls) to the MCP front door: the
// policy's mcp.auto_allow is re-read with it. A tool the new list names
// is allowed at once; one only the old list named now asks a person; a
// bad list keeps the one in force.
func TestPolicyReloadReplacesMCPAutoAllow(t *testing.T) {
	t.Parallel()
	const token = "mcp-test-token-0123456789"
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, onePolicy+"mcp:\n  auto_allow: [Read]\n")
	s, logs := startPolicyService(t, func(c *config.Config) { c.Policy, c.MCPToken, c.MCPTenant = path, token, "acme" })
	client := mcp.NewClient(&mcp.Implementation{Name: "http-agent", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + s.Addr() + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	use := func(ctx context.Context, tool, job string) (string, error) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "approve_tool_use", Arguments: map[string]any{
			"tool_name": tool, "input": map[string]any{"file_path": "/src/main.go", "pattern": "*.go"}, "job_id": job, "tool_use_id": "toolu_" + job}})
		if err != nil {
			return "", err
		}
		var p struct{ Behavior string }
		if err := json.Unmarshal([]byte(resultText(res)), &p); err != nil {
			return "", fmt.Errorf("not the permission JSON: %q", resultText(res))
		}
		return p.Behavior, nil
	}
	if got, err := use(ctx, "Read", "job-r1"); err != nil || got != "allow" {
		t.Fatalf("Read at start: %q, %v; want allowed by mcp.auto_allow", got, err)
	}

	writeFile(t, path, onePolicy+"mcp:\n  auto_allow: [Glob]\n")
	s.reloadPolicy()
	if !strings.Contains(logs.String(), `msg="policy reloaded"`) {
		t.Fatalf("the reload is not logged:\n%s", logs)
	}
	if got, err := use(ctx, "Glob", "job-g1"); err != nil || got != "allow" {
		t.Errorf("Glob after the reload: %q, %v; want allowed by the new mcp.auto_allow", got, err)
	}
	// Read is no longer allowed by itself: a person is asked.
	nc, err := nats.Connect(s.natsURL(), s.nats.Admin())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	events := testenv.Published(t, nc, bridge.EventSubject("acme", "job-r2"))
	waiting, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan string, 1)
	go func() {
		got, err := use(waiting, "Read", "job-r2")
		done <- fmt.Sprint(got, err)
	}()
	waitAsked(t, events, done, "Read")
	// The agent cancels its question, and the waiting call ends on the
	// server too. (Cancelling the call's context alone notifies the server
	// in the background, and a session closed before that notification
	// leaves the server's handler waiting, and the service's stop with it.)
	if err := bridge.Publish(ctx, s.nats.JS, bridge.CancelSubject("acme", "job-r2"), "cancel-job-r2",
		bridge.Cancel{Tenant: "acme", JobID: "job-r2"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(testenv.Patience):
		t.Fatal("the waiting call did not end once its question was cancelled")
	}

	writeFile(t, path, onePolicy+"mcp:\n  auto_allow: [\"Bash(\"]\n")
	s.reloadPolicy()
	if !strings.Contains(logs.String(), `msg="policy not reloaded; the policy in force is kept"`) {
		t.Errorf("a bad auto_allow is not logged:\n%s", logs)
	}
	if got, err := use(ctx, "Glob", "job-g2"); err != nil || got != "allow" {
		t.Errorf("Glob after a bad file: %q, %v; want allowed by the list in force", got, err)
	}
}
