package main

import (
	"context"
	"fmt"
	"net/http"
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

// callEnd is how an MCP call ended: "" for a failed call (an error, or a
// result marked as one) with its text in failure, else the answer's text.
type callEnd struct{ answer, failure string }

// waitingMCPCall starts a service serving /mcp and an approve_tool_use
// call on it that waits for a person (Bash is not auto-allowed), and
// returns once the call's question is asked: the service, and where the
// call's end arrives. With stream, the client also keeps the stream of
// server messages open, as MCP clients do by default.
func waitingMCPCall(t *testing.T, stream bool) (*service, <-chan callEnd) {
	t.Helper()
	const token = "mcp-test-token-0123456789"
	s, _ := startPolicyService(t, func(c *config.Config) { c.MCPToken, c.MCPTenant = token, "acme" })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	client := mcp.NewClient(&mcp.Implementation{Name: "http-agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + s.Addr() + "/mcp", DisableStandaloneSSE: !stream,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	nc, err := nats.Connect(s.natsURL(), s.nats.Admin())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	events := testenv.Published(t, nc, bridge.EventSubject("acme", "job-1"))
	done := make(chan callEnd, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "approve_tool_use", Arguments: map[string]any{
			"tool_name": "Bash", "input": map[string]any{"command": "make deploy"}, "job_id": "job-1", "tool_use_id": "toolu_1"}})
		switch {
		case err != nil:
			done <- callEnd{failure: err.Error()}
		case res.IsError:
			done <- callEnd{failure: resultText(res)}
		default:
			done <- callEnd{answer: resultText(res)}
		}
	}()
	waitAsked(t, events, done, "Bash")
	return s, done
}

// stopWithin stops s with ctx and fails if the stop does not return.
func stopWithin(t *testing.T, s *service, ctx context.Context, why string) {
	t.Helper()
	stopped := make(chan struct{})
	go func() {
		s.stop(ctx)
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(testenv.Patience):
		t.Fatal(why)
	}
}

// callEnded returns how the waiting call ended, failing if it goes on.
func callEnded(t *testing.T, done <-chan callEnd) callEnd {
	t.Helper()
	select {
	case e := <-done:
		return e
	case <-time.After(testenv.Patience):
		t.Fatal("the waiting call goes on after the service stopped")
	}
	return callEnd{}
}

// TestStopEndsWaitingMCPCallsSayingHowToWaitAgain: a stop ends an MCP call
// waiting for a person at once, as a failed call whose text says its
// question stays open and how to wait for it again, instead of holding the
// stop until its grace runs out.
func TestStopEndsWaitingMCPCallsSayingHowToWaitAgain(t *testing.T) {
	t.Parallel()
	s, done := waitingMCPCall(t, false)
	stopWithin(t, s, context.Background(), "the stop waits for the call waiting for a person")
	e := callEnded(t, done)
	if e.answer != "" {
		t.Fatalf("the waiting call answered %s when the service stopped; want a failed call", e.answer)
	}
	for _, want := range []string{"askbridge is stopping", `question_id "tu-toolu_1"`, `job_id "job-1"`, "stays open"} {
		if !strings.Contains(e.failure, want) {
			t.Errorf("the failed call says %q; want it to say %q", e.failure, want)
		}
	}
}

// TestStopIsNotHeldByOpenSessions: a client's stream of server messages,
// open for its whole session, ends when the service stops, and so does its
// waiting call (a client that reads the stream's end first fails the call
// itself); the stop does not wait for its grace to run out.
func TestStopIsNotHeldByOpenSessions(t *testing.T) {
	t.Parallel()
	s, done := waitingMCPCall(t, true)
	stopWithin(t, s, context.Background(), "the stop waits for the open session's stream")
	if e := callEnded(t, done); e.answer != "" {
		t.Errorf("the waiting call answered %s when the service stopped; want a failed call", e.answer)
	}
}

// TestStopEndsWaitingCallsWhenTheGraceRunsOut: a stop whose grace
// (ASK_SHUTDOWN_GRACE) has already run out ends anyway, and so does an MCP
// call waiting for a person, as a failed call the agent may make again,
// not as an answer.
func TestStopEndsWaitingCallsWhenTheGraceRunsOut(t *testing.T) {
	t.Parallel()
	s, done := waitingMCPCall(t, true)
	graceOver, over := context.WithCancel(context.Background())
	over()
	stopWithin(t, s, graceOver, "the stop waits for the waiting call after its grace ran out")
	if e := callEnded(t, done); e.answer != "" {
		t.Errorf("the waiting call answered %s when the service stopped; want a failed call", e.answer)
	}
}

// waitAsked waits until events holds the question a waiting MCP call
// asked about tool, and fails if the call ends (done) first.
func waitAsked[T any](t *testing.T, events *testenv.Publications, done <-chan T, tool string) {
	t.Helper()
	testenv.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		select {
		case got := <-done:
			t.Fatalf("the call about %s ended (%+v) before anyone answered", tool, got)
		default:
		}
		if events.Count(t) == 0 {
			return fmt.Errorf("no question asked about %s", tool)
		}
		return nil
	})
}

// testMCPSignalledMidWait: `askbridge mcp` told to stop (SIGTERM) while a
// call waits for a person ends the call as a failed call that says its
// question stays open and how to wait for it again, and exits;
// the question stays pending for the next call to wait on.
func testMCPSignalledMidWait(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	p := startMCP(t, r.s)
	ch := p.callAsync("ask_user", map[string]any{"question": "Which colour?", "choices": []string{"red", "blue"}, "question_id": "q-term"}, time.Minute)
	qid, job := p.waitingFor()
	r.cards(mcpQ(job, qid))
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var res mcpResult
	select {
	case res = <-ch:
	case <-time.After(testenv.Patience):
		t.Fatal("the waiting call goes on after askbridge mcp was told to stop")
	}
	if res.err != nil {
		t.Fatalf("the waiting call failed as a lost connection (%v); want a failed call saying how to wait again", res.err)
	}
	text := resultText(res.res)
	if !res.res.IsError {
		t.Fatalf("the waiting call answered %q when askbridge mcp stopped; want a failed call", text)
	}
	for _, want := range []string{"askbridge is stopping", fmt.Sprintf("question_id %q", qid), fmt.Sprintf("job_id %q", job), "stays open"} {
		if !strings.Contains(text, want) {
			t.Errorf("the failed call says %q; want it to say %q", text, want)
		}
	}
	// The client's transport waits for the process; the session ends
	// once it has exited.
	ended := make(chan error, 1)
	go func() { ended <- p.cs.Wait() }()
	select {
	case <-ended:
	case <-time.After(testenv.Patience):
		t.Fatal("askbridge mcp did not exit after SIGTERM")
	}
	var v bridge.ShowReply
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
	defer cancel()
	if err := bridge.Request(ctx, r.s.nats.Conn, bridge.APIShow, bridge.ShowRequest{Tenant: "acme", JobID: job, QuestionID: qid}, &v); err != nil || v.Question == nil || v.Question.State != bridge.StatePending {
		t.Errorf("after askbridge mcp stopped, question %s is %+v (%v); want it still pending", qid, v.Question, err)
	}
}
