package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/internal/version"
	"github.com/askbridge/askbridge/runtime"
)

// connect is a client session on f over in-memory transports.
func connect(t *testing.T, f *Front) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := f.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "unit-agent"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func text(r *mcp.CallToolResult) string {
	if len(r.Content) == 0 {
		return ""
	}
	tc, _ := r.Content[0].(*mcp.TextContent)
	return tc.Text
}

// TestAnsweredWhileAway: the client's call is cut off, the person answers
// while no call waits, and the call made again with the question's id
// gets that answer at once, from any session, without asking again.
func TestAnsweredWhileAway(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: runtime.Roles{Operators: []string{"slack:UOP"}}})
	f, err := New(env.NATS.Conn, Options{Tenant: "acme", Progress: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{
			"question": "Which colour?", "choices": []string{"red", "blue"}, "question_id": "q-away"}})
		done <- err
	}()
	var job string
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		var reply bridge.ShowReply
		if err := bridge.Request(context.Background(), env.NATS.Conn, bridge.APIShow, bridge.ShowRequest{Tenant: "acme", QuestionID: "q-away"}, &reply); err != nil {
			return err
		}
		if reply.Question == nil || reply.Question.State != bridge.StatePending {
			return errors.New("q-away is not waiting yet")
		}
		job = reply.Question.JobID
		return nil
	})
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned no error")
	}

	a := bridge.AnswerAttempt{Tenant: "acme", JobID: job, QuestionID: "q-away", AttemptID: "away-1", Action: bridge.ActionAnswer,
		Answer: json.RawMessage(`"blue"`), By: "slack:UOP"}
	if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.AnswerSubject("acme", job), "away-1", a); err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer acancel()
	if _, err := env.Agent.Await(actx, "acme", job, "q-away"); err != nil {
		t.Fatal(err)
	}

	other := connect(t, f)
	res, err := other.CallTool(actx, &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{
		"question": "Which colour?", "choices": []string{"red", "blue"}, "question_id": "q-away"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); got != "The answer: blue" {
		t.Fatalf("the call made again: %q", got)
	}
	var list bridge.ListReply
	if err := bridge.Request(actx, env.NATS.Conn, bridge.APIList, bridge.ListRequest{Tenant: "acme", State: "all"}, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Questions) != 1 {
		t.Errorf("%d questions in the tenant, want 1: the call asked again", len(list.Questions))
	}
}

// TestAskRefusedAsTheRuntimeWould: mistakes come back as tool errors in
// the validator's words, naming the field, and nothing is asked.
func TestAskRefusedAsTheRuntimeWould(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{})
	f, err := New(env.NATS.Conn, Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, f)
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"question": "Which?", "choices": []string{"a"}, "fields": []any{map[string]any{"name": "x", "kind": "text"}}},
			"choices and fields: give one or the other, not both"},
		{map[string]any{"question": "When?", "timeout": "soon"}, `timeout: "soon" is not a duration`},
		{map[string]any{"question": "When?", "on_timeout": "panic"}, `on_timeout: must be continue or fail, not "panic"`},
		{map[string]any{"question": "When?", "question_id": "has space"}, `question_id: "has space" must be 1 to 64 letters`},
		{map[string]any{"question": "When?", "colour": "red"}, "colour: is not an argument of ask_user"},
		{map[string]any{"choices": []string{"a", "b"}}, "question: is required"},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user", Arguments: c.args})
		if err != nil {
			t.Fatal(err)
		}
		if got := text(res); !res.IsError || !strings.Contains(got, c.want) {
			t.Errorf("%v: %q (error %v), want a tool error with %q", c.args, got, res.IsError, c.want)
		}
	}
	var list bridge.ListReply
	if err := bridge.Request(context.Background(), env.NATS.Conn, bridge.APIList, bridge.ListRequest{Tenant: "acme", State: "all"}, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Questions) != 0 {
		t.Errorf("%d questions asked", len(list.Questions))
	}
}

// TestServerInfoAndGuidance: a client learns the server's version from
// the build, and each tool's description says when to use it, for
// clients that show the model no server instructions.
func TestServerInfoAndGuidance(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{})
	f, err := New(env.NATS.Conn, Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, f)
	info := cs.InitializeResult().ServerInfo
	if info.Name != "askbridge" || info.Version != version.Number() || info.Version == "" {
		t.Errorf("serverInfo %+v, want askbridge at %q", info, version.Number())
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	guidance := map[string][]string{
		"ask_user":         {"Use when you cannot go on without a decision or a fact only a person has", "do not guess"},
		"request_approval": {"Use before an action with consequences that a person must approve first", "execute it once with check_action"},
		"check_action":     {"Use right before running a tool with consequences", "refused means do not run the tool"},
		"approve_tool_use": {"Not for the model to call", "--permission-prompt-tool"},
	}
	for _, tool := range res.Tools {
		for _, want := range guidance[tool.Name] {
			if !strings.Contains(tool.Description, want) {
				t.Errorf("%s's description lacks %q: %s", tool.Name, want, tool.Description)
			}
		}
		delete(guidance, tool.Name)
	}
	if len(guidance) != 0 {
		t.Errorf("tools/list lacks %v", guidance)
	}

	// A version given in the options is the one clients see.
	named, err := New(env.NATS.Conn, Options{Tenant: "acme", Version: "v9.9.9"})
	if err != nil {
		t.Fatal(err)
	}
	if v := connect(t, named).InitializeResult().ServerInfo.Version; v != "v9.9.9" {
		t.Errorf("serverInfo.version %q, want v9.9.9", v)
	}
}
