// Package mcpfront is askbridge's MCP front door: the tools ask_user,
// request_approval, check_action and approve_tool_use, served over stdio
// (askbridge mcp) and streamable HTTP (/mcp in serve), built on the
// official Go SDK. It speaks to the runtime only over NATS, as any agent
// does (docs/mcp.md; docs/design.md, "The MCP front door").
package mcpfront

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/internal/version"
)

// DefaultProgress is how often a waiting tool call tells the client it is
// still waiting: well under the 60 s most clients give a request.
const DefaultProgress = 15 * time.Second

// SessionTimeout closes an HTTP session that had no request for so long.
const SessionTimeout = time.Hour

// DefaultTenant is the tenant when Options.Tenant is empty.
const DefaultTenant = "default"

// Options configure the front door.
type Options struct {
	// Tenant all questions are asked in (ASK_MCP_TENANT).
	Tenant string
	// Progress is the interval of progress notifications while a call
	// waits for a person; DefaultProgress when zero.
	Progress time.Duration
	// AutoAllow lists the tool uses approve_tool_use allows without asking
	// (ASK_MCP_AUTO_ALLOW, the policy's mcp.auto_allow): "Read",
	// "Bash(git status)", "Bash(npm test:*)".
	AutoAllow []string
	// Version is reported to clients as the server's version
	// (serverInfo.version); the build's (internal/version) when empty.
	Version string
	Logger  *slog.Logger
}

// Front holds the MCP server and the NATS client it asks through.
type Front struct {
	nc  *nats.Conn
	ag  *agent.Client
	o   Options
	srv *mcp.Server

	// rules are the auto-allow rules in force: Options.AutoAllow, replaced
	// by SetAutoAllow.
	rules atomic.Pointer[[]allowRule]

	mu   sync.Mutex
	jobs map[*mcp.ServerSession]string

	// stopping ends with Stop, and streams after it, once the calls it
	// ended have answered (calls).
	stopping, streams context.Context
	stop, endStreams  context.CancelFunc
	calls             inFlight
}

// New makes the front door on a NATS connection to a running askbridge.
func New(nc *nats.Conn, o Options) (*Front, error) {
	if o.Tenant == "" {
		o.Tenant = DefaultTenant
	}
	if err := bridge.CheckToken("ASK_MCP_TENANT", o.Tenant); err != nil {
		return nil, err
	}
	if o.Progress <= 0 {
		o.Progress = DefaultProgress
	}
	if o.Version == "" {
		o.Version = version.Number()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ag, err := agent.New(nc)
	if err != nil {
		return nil, err
	}
	f := &Front{nc: nc, ag: ag, o: o, jobs: map[*mcp.ServerSession]string{}}
	f.stopping, f.stop = context.WithCancel(context.Background())
	f.streams, f.endStreams = context.WithCancel(context.Background())
	if err := f.SetAutoAllow(o.AutoAllow); err != nil {
		return nil, err
	}
	f.srv = mcp.NewServer(&mcp.Implementation{Name: "askbridge", Version: o.Version}, &mcp.ServerOptions{
		Logger:       o.Logger,
		Instructions: instructions,
	})
	f.addTools()
	return f, nil
}

// Stop ends the calls waiting for a person, each as a failed call that
// says its question stays open and how to wait for it again, and a call
// made after it the same way, and the clients' streams of server messages
// (Handler): the service calls it as it stops, so that its stop is held
// up neither by people who have not answered yet nor by open sessions.
// It returns once those calls have answered, or when ctx ends.
func (f *Front) Stop(ctx context.Context) {
	f.stop()
	// A client whose stream ends first may fail its calls before it reads
	// their answers.
	f.calls.wait(ctx)
	f.endStreams()
}

// inFlight counts requests being served (calls being answered).
type inFlight struct {
	mu   sync.Mutex
	n    int
	none chan struct{} // closed when n drops to 0
}

func (fl *inFlight) add() {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.n == 0 {
		fl.none = make(chan struct{})
	}
	fl.n++
}

// done counts one served; one more than were added counts nothing.
func (fl *inFlight) done() {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.n == 0 {
		return
	}
	if fl.n--; fl.n == 0 {
		close(fl.none)
	}
}

// wait returns once no request is in flight, or when ctx ends.
func (fl *inFlight) wait(ctx context.Context) {
	fl.mu.Lock()
	if fl.n == 0 {
		fl.mu.Unlock()
		return
	}
	none := fl.none
	fl.mu.Unlock()
	select {
	case <-none:
	case <-ctx.Done():
	}
}

// SetAutoAllow replaces the auto-allow list (Options.AutoAllow), as the
// service does when SIGHUP re-reads the policy's mcp.auto_allow. A list
// with a rule that cannot work is refused whole, and the list in force
// is kept.
func (f *Front) SetAutoAllow(list []string) error {
	rules := make([]allowRule, 0, len(list))
	for _, rule := range list {
		r, err := parseAllowRule(rule)
		if err != nil {
			return err
		}
		rules = append(rules, r)
	}
	f.rules.Store(&rules)
	return nil
}

const instructions = `askbridge asks people in Slack, Discord or a web console and waits for their answer, however long they take. ` +
	`Use ask_user when you need a person's decision or a missing fact, request_approval before an action with consequences, ` +
	`check_action before running such an action. A waiting call sends progress notifications; ` +
	`if the call is cut off, call again with the same question_id to pick up the same question.`

// Server is the MCP server, for a transport to run.
func (f *Front) Server() *mcp.Server { return f.srv }

// Handler serves streamable HTTP for clients that present the bearer
// token; every other request gets 401. The token is compared in constant
// time and never logged.
func (f *Front) Handler(token string) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.srv }, &mcp.StreamableHTTPOptions{
		Logger: f.o.Logger,
		// The service is usually reached through a proxy or a public
		// name; the bearer token is what guards it.
		DisableLocalhostProtection: true,
		// Sessions a client left without closing go after an hour with
		// no request; a call that waits holds its POST open, which keeps
		// its session.
		SessionTimeout: SessionTimeout,
	})
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if token == "" || subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="askbridge"`)
			http.Error(w, "askbridge /mcp needs Authorization: Bearer <ASK_MCP_TOKEN>", http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodGet {
			f.calls.add()
			defer f.calls.done()
			h.ServeHTTP(w, r)
			_ = http.NewResponseController(w).Flush() // the answer goes before Stop ends the streams
			return
		}
		// A client's stream of server messages stays open for its whole
		// session: it ends with Stop, or a stopping server would wait for
		// it until its grace ran out.
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(f.streams, cancel)()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// jobFor is the job a call acts in: the one it names, else its session's
// (made on the session's first call).
func (f *Front) jobFor(req *mcp.CallToolRequest, named string) string {
	if named != "" {
		return named
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if job, ok := f.jobs[req.Session]; ok {
		return job
	}
	if len(f.jobs) > 64 {
		// Forget the jobs of sessions that ended.
		live := map[*mcp.ServerSession]bool{}
		for s := range f.srv.Sessions() {
			live[s] = true
		}
		for s := range f.jobs {
			if !live[s] {
				delete(f.jobs, s)
			}
		}
	}
	job := "mcp-" + randomHex(6)
	f.jobs[req.Session] = job
	return job
}

// agentName is the client's name from its clientInfo.
func agentName(req *mcp.CallToolRequest) string {
	if info := req.ClientInfo(); info != nil {
		if info.Title != "" {
			return info.Title
		}
		return info.Name
	}
	return ""
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// args are a call's arguments by name.
type args map[string]json.RawMessage

// readArgs reads a call's arguments, refusing one the tool does not take
// (a misspelt key would otherwise be dropped without a word).
func readArgs(req *mcp.CallToolRequest, allowed ...string) (args, error) {
	a, err := readAnyArgs(req)
	if err != nil {
		return nil, err
	}
	for k := range a {
		ok := false
		for _, name := range allowed {
			ok = ok || k == name
		}
		if !ok {
			return nil, fmt.Errorf("%s: is not an argument of %s (it takes %s)", k, req.Params.Name, strings.Join(allowed, ", "))
		}
	}
	return a, nil
}

// readAnyArgs reads a call's arguments whatever their keys.
func readAnyArgs(req *mcp.CallToolRequest) (args, error) {
	a := args{}
	raw := req.Params.Arguments
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Errorf("arguments: must be a JSON object")
		}
	}
	return a, nil
}

// str reads a string argument; absent or null is "".
func (a args) str(name string) (string, error) {
	raw, ok := a[name]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s: must be text", name)
	}
	return s, nil
}

// toolError is a result the model reads as a failed call it may retry.
func toolError(err error) *mcp.CallToolResult {
	r := &mcp.CallToolResult{}
	r.SetError(err)
	return r
}

// textResult is a result with text and the structured content beside it.
func textResult(text string, structured any, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: structured,
		IsError:           isError,
	}
}
