package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestStopEndsWaitingCallsWhenTheGraceRunsOut: an MCP call waiting for a
// person holds its connection open; once the stop's grace
// (ASK_SHUTDOWN_GRACE) has run out the stop ends anyway, and so does the
// call, as a failed call the agent may make again, not as an answer.
func TestStopEndsWaitingCallsWhenTheGraceRunsOut(t *testing.T) {
	t.Parallel()
	const token = "mcp-test-token-0123456789"
	s, _ := startPolicyService(t, func(c *config.Config) { c.MCPToken, c.MCPTenant = token, "acme" })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "http-agent", Version: "1"}, nil)
	// No reconnects: the server stops for good, and a session that tried
	// again would take seconds to close.
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + s.Addr() + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	nc, err := nats.Connect(s.natsURL(), s.nats.Admin())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	events := testenv.Published(t, nc, bridge.EventSubject("acme", "job-1"))
	// done gets "" for a failed call, the answer's text for any other.
	done := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "approve_tool_use", Arguments: map[string]any{
			"tool_name": "Bash", "input": map[string]any{"command": "make deploy"}, "job_id": "job-1", "tool_use_id": "toolu_1"}})
		if err != nil || res.IsError {
			done <- ""
			return
		}
		done <- resultText(res)
	}()
	waitAsked(t, events, done, "Bash")
	graceOver, over := context.WithCancel(context.Background())
	over()
	stopped := make(chan struct{})
	go func() {
		s.stop(graceOver)
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(testenv.Patience):
		t.Fatal("the stop waits for the waiting call after its grace ran out")
	}
	select {
	case got := <-done:
		if got != "" {
			t.Errorf("the waiting call answered %s when the service stopped; want a failed call", got)
		}
	case <-time.After(testenv.Patience):
		t.Fatal("the waiting call goes on after the service stopped")
	}
}

// waitAsked waits until events holds the question a waiting MCP call
// asked about tool, and fails if the call (done) ends first.
func waitAsked(t *testing.T, events *testenv.Publications, done <-chan string, tool string) {
	t.Helper()
	testenv.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		select {
		case got := <-done:
			t.Fatalf("the call about %s ended (%q) before anyone answered", tool, got)
		default:
		}
		if events.Count(t) == 0 {
			return fmt.Errorf("no question asked about %s", tool)
		}
		return nil
	})
}
