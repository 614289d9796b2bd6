package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

// The MCP front door end to end: the Go SDK's client speaks to a real
// `askbridge mcp` subprocess over stdio, which reaches the service (in
// process, on embedded NATS, with the fake Slack and Discord of race_world_test.go)
// through NATS, as a desktop assistant or a coding agent would.

// mcpBin is the askbridge binary TestMCP built for its subtests.
var mcpBin string

// buildAskbridge builds the binary into dir, as a client would run it.
func buildAskbridge(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "askbridge")
	if out, err := exec.Command("go", "build", "-o", path, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return path
}

// mcpProc is one `askbridge mcp` subprocess and the client session on it.
type mcpProc struct {
	t   *testing.T
	cmd *exec.Cmd
	cs  *mcp.ClientSession

	mu       sync.Mutex
	progress []string // the messages of progress notifications, in order
	reset    func()   // restarts the idle timeout of the call in flight
	calls    atomic.Int64
}

func startMCP(t *testing.T, s *service, env ...string) *mcpProc {
	t.Helper()
	p := &mcpProc{t: t}
	p.cmd = exec.Command(mcpBin, "mcp")
	p.cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"ASK_NATS_URL=" + s.natsURL(), "ASK_NATS_CREDS=" + mintCreds(t, s.cfg, "agent", "--tenant", "acme"), "ASK_MCP_TENANT=acme", "ASK_MCP_PROGRESS=300ms", "ASK_LOG_LEVEL=warn",
	}, env...)
	p.cmd.Stderr = testWriter{t}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			p.mu.Lock()
			p.progress = append(p.progress, req.Params.Message)
			reset := p.reset
			p.mu.Unlock()
			if reset != nil {
				reset()
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: p.cmd, TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatalf("connect to askbridge mcp: %v", err)
	}
	p.cs = cs
	t.Cleanup(func() { _ = cs.Close() })
	return p
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Logf("askbridge mcp: %s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// call calls a tool with a progress token, failing the call as a client
// would when no progress came for idle (a timeout reset by progress).
func (p *mcpProc) call(name string, args map[string]any, idle time.Duration) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	timer := time.AfterFunc(idle, func() { cancel(fmt.Errorf("no progress for %s", idle)) })
	defer timer.Stop()
	p.mu.Lock()
	p.reset = func() { timer.Reset(idle) }
	p.mu.Unlock()
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	params.SetProgressToken(fmt.Sprintf("tok-%d", p.calls.Add(1)))
	res, err := p.cs.CallTool(ctx, params)
	if err != nil && context.Cause(ctx) != nil && ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return res, err
}

// callAsync runs call on its own goroutine.
func (p *mcpProc) callAsync(name string, args map[string]any, idle time.Duration) <-chan mcpResult {
	ch := make(chan mcpResult, 1)
	go func() {
		res, err := p.call(name, args, idle)
		ch <- mcpResult{res, err}
	}()
	return ch
}

type mcpResult struct {
	res *mcp.CallToolResult
	err error
}

func waitResult(t *testing.T, ch <-chan mcpResult) *mcp.CallToolResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("tool call: %v", r.err)
		}
		return r.res
	case <-time.After(60 * time.Second):
		t.Fatal("no tool result")
	}
	return nil
}

func resultText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

var progressIDs = regexp.MustCompile(`question (\S+) in job (\S+) `)

// waitingFor is the question and job the progress notifications name.
func (p *mcpProc) waitingFor() (question, job string) {
	p.t.Helper()
	testenv.CheckFor(p.t, testenv.Patience, 20*time.Millisecond, func() error {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, m := range p.progress {
			if s := progressIDs.FindStringSubmatch(m); s != nil {
				question, job = s[1], s[2]
				return nil
			}
		}
		return errors.New("no progress notification names the question")
	})
	return question, job
}

// slackCard waits for the Slack card of a question and returns its ts.
func (r *race) slackCard(job, question string) string {
	r.t.Helper()
	block := fmt.Sprintf(`"block_id":"ask.acme.%s.%s.0"`, job, question)
	var ts string
	testenv.CheckFor(r.t, testenv.Patience, 20*time.Millisecond, func() error {
		for _, c := range r.Calls("chat.postMessage") {
			if c.Form.Get("thread_ts") != "" && strings.Contains(c.Form.Get("blocks"), block) {
				ts = c.TS
				return nil
			}
		}
		return fmt.Errorf("no Slack card of %s", question)
	})
	return ts
}

// openSlackModal clicks a card's form button (its action id and value
// are action) as user until the form opens, and returns its views.open.
// A person told to try again clicks again, with a new trigger id: the
// service asks the runtime who may answer with a second of its budget,
// which a busy machine can outlast.
func (r *race) openSlackModal(user, trigger, cardTS, block, action string) raceCall {
	r.t.Helper()
	for try := 1; ; try++ {
		trig := fmt.Sprintf("%s-%d", trigger, try)
		r.signedSlack(r.slackClick(user, trig, cardTS, block, action, action), nil)
		var opened raceCall
		again := false
		testenv.CheckFor(r.t, testenv.Patience, 20*time.Millisecond, func() error {
			for _, c := range r.Calls("views.open") {
				if c.JSON["trigger_id"] == trig {
					opened = c
					return nil
				}
			}
			for _, c := range r.Calls("response_url") {
				if c.Path == "/response/"+trig && strings.Contains(fmt.Sprint(c.JSON["text"]), formTryAgain) {
					again = true
					return nil
				}
			}
			return fmt.Errorf("no modal opened for %s's click %s, nor were they told to try again", user, trig)
		})
		if !again {
			return opened
		}
		if try == 5 {
			r.t.Fatalf("%s was told to try again five times: the form never opened", user)
		}
		r.t.Logf("%s was told to try again after click %s; clicking again", user, trig)
	}
}

// formTryAgain is what a person is told when the service could not ask
// the runtime in time whether they may answer (bots/slack, bots/discord).
const formTryAgain = "askbridge could not open the form just now. Please try again in a moment."

// slackCards counts the cards posted for a question.
func (r *race) slackCards(job, question string) int {
	block := fmt.Sprintf(`"block_id":"ask.acme.%s.%s.0"`, job, question)
	n := 0
	for _, c := range r.Calls("chat.postMessage") {
		if c.Form.Get("thread_ts") != "" && strings.Contains(c.Form.Get("blocks"), block) {
			n++
		}
	}
	return n
}

func mcpQ(job, question string) *bridge.Question {
	return &bridge.Question{Tenant: "acme", JobID: job, QuestionID: question}
}

func TestMCP(t *testing.T) {
	t.Parallel()
	// Built once for the subtests; the directory goes when they all ended.
	mcpBin = buildAskbridge(t, t.TempDir())
	t.Run("ToolsList", testMCPToolsList)
	t.Run("AskUserChoices", testMCPAskUserChoices)
	t.Run("AskUserFields", testMCPAskUserFields)
	t.Run("LongWaitAndRestart", testMCPLongWaitAndRestart)
	t.Run("StreamableHTTP", testMCPStreamableHTTP)
	t.Run("ApprovalAndExecute", testMCPApprovalAndExecute)
	t.Run("ApproveToolUse", testMCPApproveToolUse)
	t.Run("SignalledMidWait", testMCPSignalledMidWait)
}

func testMCPToolsList(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	p := startMCP(t, r.s)
	res, err := p.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]string{}
	for _, tool := range res.Tools {
		b, _ := json.Marshal(tool.InputSchema)
		schemas[tool.Name] = string(b)
	}
	for name, want := range map[string][]string{
		"ask_user":         {`"required":["question"]`, `"choices"`, `"enum":["text","number","choice","multi-choice","date","toggle"]`, `"question_id"`, `"on_timeout"`},
		"request_approval": {`"required":["action","summary"]`, `"arguments"`, `"currency"`, `"expires_at"`},
		"check_action":     {`"required":["tool"]`, `"proposal_id"`, `"execute"`},
		"approve_tool_use": {`"required":["tool_name","input"]`, `"tool_use_id"`},
	} {
		got, ok := schemas[name]
		if !ok {
			t.Errorf("tools/list has no %s: %v", name, schemas)
			continue
		}
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s's schema lacks %s: %s", name, w, got)
			}
		}
	}
	if len(res.Tools) != 4 {
		t.Errorf("%d tools, want 4", len(res.Tools))
	}
	// The binary says which build it is, and every tool says when to use it.
	if v := p.cs.InitializeResult().ServerInfo.Version; v == "" || v == "(devel)" {
		t.Errorf("serverInfo.version %q, want the build's version", v)
	}
	for _, tool := range res.Tools {
		if !strings.Contains(tool.Description, "Use when") && !strings.Contains(tool.Description, "Use before") &&
			!strings.Contains(tool.Description, "Use right before") && !strings.Contains(tool.Description, "Not for the model to call") {
			t.Errorf("%s's description says not when to use it: %s", tool.Name, tool.Description)
		}
	}
}

func testMCPAskUserChoices(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	p := startMCP(t, r.s)
	ch := p.callAsync("ask_user", map[string]any{"question": "Which colour should the report use?", "choices": []string{"red", "blue"}}, time.Minute)
	qid, job := p.waitingFor()
	ts, _ := r.cards(mcpQ(job, qid))
	r.signedSlack(r.slackClick("U0KEV", "trig-mcp-1", ts, "ask.acme."+job+"."+qid+".0", "choice.1", "blue"), nil)
	res := waitResult(t, ch)
	if got := resultText(res); got != "The answer: blue" || res.IsError {
		t.Fatalf("result %q (error %v), want The answer: blue", got, res.IsError)
	}
	var out bridge.Resume
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil || out.Outcome != "answered" || out.By != "slack:U0KEV" || string(out.Answer) != `"blue"` {
		t.Errorf("structured content %s", b)
	}
	// The agent's name is the client's, and the question waited in a job
	// of this session.
	evs := r.events.of(job, qid)
	if len(evs) == 0 || evs[0].Question == nil || evs[0].Question.Agent != "test-agent" {
		t.Errorf("asked event %+v, want agent test-agent", evs)
	}
	if !strings.HasPrefix(job, "mcp-") {
		t.Errorf("job %q, want a job of the session (mcp-...)", job)
	}

	// Later calls of the session act in the same job: the gate's decision
	// is in its trace.
	gate, err := p.call("check_action", map[string]any{"tool": "send_report"}, time.Minute)
	if err != nil || resultText(gate) != "allowed: you may call send_report now" {
		t.Fatalf("check_action: %v %v", resultText(gate), err)
	}
	c, trace, _ := testCLI(r.s, "cli:kevin")
	if code := c.trace(context.Background(), []string{"--tenant", "acme", job}); code != 0 || !strings.Contains(trace.String(), "send_report") {
		t.Errorf("trace of %s (exit %d): %s, want the gate's decision on send_report", job, code, trace)
	}

	// A bad field comes back as a tool error naming it, and asks nothing.
	bad, err := p.call("ask_user", map[string]any{"question": "How many copies?",
		"fields": []any{map[string]any{"name": "copies", "kind": "number", "min": 5, "max": 2}}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(bad); !bad.IsError || got != "copies: min 5 is greater than max 2" { // as docs/mcp.md says
		t.Errorf("bad fields: %q (error %v), want a tool error naming the field", got, bad.IsError)
	}
	bad, _ = p.call("ask_user", map[string]any{"question": "When?", "fields": []any{map[string]any{"name": "on", "kind": "calendar"}}}, time.Minute)
	if got := resultText(bad); !bad.IsError || !strings.HasPrefix(got, "on: kind must be text, number") {
		t.Errorf("bad kind: %q (error %v), want a tool error naming the field", got, bad.IsError)
	}
}

func testMCPAskUserFields(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	p := startMCP(t, r.s)
	ch := p.callAsync("ask_user", map[string]any{"question": "How many copies, and a note?", "job_id": "job-fields", "question_id": "q-form",
		"fields": []any{
			map[string]any{"name": "copies", "kind": "number", "integer": true, "min": 1, "max": 9, "required": true},
			map[string]any{"name": "note", "kind": "text"},
		}}, time.Minute)
	ts := r.slackCard("job-fields", "q-form")
	sub := r.slackSubmit("U0KEV", r.openSlackModal("U0KEV", "trig-form", ts, "ask.acme.job-fields.q-form.0", "answer"), "V1", "h1", "")
	sub["view"].(map[string]any)["state"] = map[string]any{"values": map[string]any{
		"f.copies": map[string]any{"v": map[string]any{"type": "number_input", "value": "2"}},
		"f.note":   map[string]any{"v": map[string]any{"type": "plain_text_input", "value": "two-sided"}},
	}}
	if status, body := r.signedSlack(sub, nil); status != 200 || strings.Contains(body, "errors") {
		t.Fatalf("submission: %d %s", status, body)
	}
	res := waitResult(t, ch)
	if got := resultText(res); got != `The answer: {"copies":2,"note":"two-sided"}` {
		t.Fatalf("result %q", got)
	}
}

func testMCPLongWaitAndRestart(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	first := startMCP(t, r.s)
	ask := map[string]any{"question": "Which colour should the report use?", "choices": []string{"red", "blue"}, "question_id": "q-long"}
	ch := first.callAsync("ask_user", ask, time.Minute)
	qid, job := first.waitingFor()
	r.cards(mcpQ(job, qid))

	// The subprocess dies mid-wait; the client's call ends with it.
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if res := <-ch; res.err == nil {
		t.Fatalf("the call outlived its server: %v", resultText(res.res))
	}

	// A new one, and the same call again: it waits for the same question.
	// The client gives up after 2 s without progress; the answer comes
	// after 5 s.
	second := startMCP(t, r.s)
	start := time.Now()
	ch = second.callAsync("ask_user", ask, testenv.Patience)
	if q2, job2 := second.waitingFor(); q2 != qid || job2 != job {
		t.Fatalf("the second call waits for %s in %s, want %s in %s", q2, job2, qid, job)
	}
	// The wait is the point here: longer than the client's timeout, on
	// the wall clock the client's timeout runs on.
	time.Sleep(5*time.Second - time.Since(start))
	ts, _ := r.cards(mcpQ(job, qid))
	r.signedSlack(r.slackClick("U0KEV", "trig-long", ts, "ask.acme."+job+"."+qid+".0", "choice.1", "blue"), nil)
	res := waitResult(t, ch)
	if got := resultText(res); got != "The answer: blue" {
		t.Fatalf("result %q", got)
	}
	if n := r.slackCards(job, qid); n != 1 {
		t.Errorf("%d cards for %s, want 1: the second call asked again", n, qid)
	}
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		if n := len(r.resume.of(job, qid, 0)); n != 1 {
			return fmt.Errorf("%d resumes, want 1", n)
		}
		return nil
	})
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func testMCPStreamableHTTP(t *testing.T) {
	t.Parallel()
	const token = "mcp-test-token-0123456789"
	r := startRace(t, func(c *config.Config) { c.MCPToken, c.MCPTenant, c.MCPProgress = token, "acme", 300*time.Millisecond })
	endpoint := r.base + "/mcp"
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	for _, auth := range []string{"", "Bearer wrong-token-0123456789", "Bearer " + token + "x", token} {
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), token) {
			t.Errorf("Authorization %q: %d %s, want 401", auth, resp.StatusCode, body)
		}
	}

	var progressed atomic.Int64
	client := mcp.NewClient(&mcp.Implementation{Name: "http-agent", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progressed.Add(1) },
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("connect with the token: %v", err)
	}
	defer cs.Close()
	ch := make(chan mcpResult, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{
			"question": "Which colour?", "choices": []string{"red", "blue"}, "job_id": "job-http", "question_id": "q-http"}}
		params.SetProgressToken("tok-http")
		res, err := cs.CallTool(ctx, params)
		ch <- mcpResult{res, err}
	}()
	ts := r.slackCard("job-http", "q-http")
	// Progress reaches the client over HTTP while it waits.
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		if progressed.Load() < 2 {
			return fmt.Errorf("%d progress notifications over HTTP", progressed.Load())
		}
		return nil
	})
	r.signedSlack(r.slackClick("U0KEV", "trig-http", ts, "ask.acme.job-http.q-http.0", "choice.0", "red"), nil)
	if got := resultText(waitResult(t, ch)); got != "The answer: red" {
		t.Fatalf("result over HTTP %q", got)
	}
}

// TestMCPWithoutService: askbridge mcp says on stderr (stdout is the
// protocol's) that the service is not there, and exits 1.
func TestMCPWithoutService(t *testing.T) {
	t.Parallel()
	var stdout, stderr strings.Builder
	code := run([]string{"mcp", "--nats", "nats://127.0.0.1:1"}, &stdout, &stderr)
	if code != exitError || stdout.Len() != 0 || !strings.Contains(stderr.String(), "askbridge mcp: cannot reach NATS at nats://127.0.0.1:1 (is 'askbridge serve' running?)") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}
