package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
)

func (f *Front) addTools() {
	f.srv.AddTool(&mcp.Tool{
		Name:        "ask_user",
		Title:       "Ask a person",
		Description: askUserDescription,
		InputSchema: mustJSON(askUserSchema),
	}, f.askUser)
	f.srv.AddTool(&mcp.Tool{
		Name:        "request_approval",
		Title:       "Request approval of an action",
		Description: requestApprovalDescription,
		InputSchema: mustJSON(requestApprovalSchema),
	}, f.requestApproval)
	f.srv.AddTool(&mcp.Tool{
		Name:        "check_action",
		Title:       "May I run this tool now?",
		Description: checkActionDescription,
		InputSchema: mustJSON(checkActionSchema),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, IdempotentHint: false},
	}, f.checkAction)
	f.srv.AddTool(&mcp.Tool{
		Name:        "approve_tool_use",
		Title:       "Ask a person to allow a tool use",
		Description: approveToolUseDescription,
		InputSchema: mustJSON(approveToolUseSchema),
	}, f.approveToolUse)
}

// The descriptions say when to use each tool, not only what it does:
// clients that ignore the server's instructions show the model only these.
const (
	askUserDescription = "Use when you cannot go on without a decision or a fact only a person has " +
		"(which option to take, a missing value, a preference, an ambiguous request): do not guess, ask. " +
		"Asks a person in Slack, Discord or the web console and waits for the answer, however long it takes. " +
		"Write the question for someone who has not seen the conversation. " +
		"Give choices for buttons, fields for a typed form, or neither for free text. " +
		"The result is the text to read (The answer: ..., a decline with its reason, or Nobody answered within ...) " +
		"with the outcome as structured content. If the call is cut off, call again with the same question_id to keep waiting."
	requestApprovalDescription = "Use before an action with consequences that a person must approve first " +
		"(spending money, sending to customers, deleting, deploying, anything hard to undo): " +
		"propose it with its exact arguments and wait until a person approves or denies it. " +
		"Approved, execute it once with check_action (tool = the action, proposal_id, execute: true); " +
		"denied, do not run it, and read the reason."
	checkActionDescription = "Use right before running a tool with consequences, every time: askbridge's gate says " +
		"whether the job may call it now. Refused while a question blocks the tool, or when the operator's policy " +
		"requires an approved proposal (then ask with request_approval). Never waits for a person; " +
		"refused means do not run the tool."
	approveToolUseDescription = "Not for the model to call: a coding agent calls it as its permission-prompt tool " +
		"(Claude Code's --permission-prompt-tool) before each tool use its own settings do not allow, " +
		"and a person allows or denies the use in Slack or Discord. " +
		`The result is the JSON text {"behavior":"allow","updatedInput":...} or {"behavior":"deny","message":...}.`
)

// questionKeys are the ask_user arguments that are the question's own.
var questionKeys = []string{"question", "choices", "fields", "timeout", "on_timeout", "answerers", "route", "context", "why_it_matters"}

func (f *Front) askUser(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, err := readArgs(req, append(questionKeys, "question_id", "job_id")...)
	if err != nil {
		return toolError(err), nil
	}
	body := map[string]json.RawMessage{}
	for _, k := range questionKeys {
		if v, ok := a[k]; ok {
			body[k] = v
		}
	}
	q, err := f.question(req, a, body)
	if err != nil {
		return toolError(err), nil
	}
	out, err := f.wait(ctx, req, q)
	if err != nil {
		return toolError(err), nil
	}
	return textResult(out.Text, out, out.Outcome == bridge.OutcomeInvalid), nil
}

// question builds the question of a call from body (the question's own
// keys as the call gave them) and checks it as the runtime will, so a
// mistake comes back at once naming the field.
func (f *Front) question(req *mcp.CallToolRequest, a args, body map[string]json.RawMessage) (*bridge.Question, error) {
	job, err := a.str("job_id")
	if err != nil {
		return nil, err
	}
	if job != "" {
		if err := bridge.CheckToken("job_id", job); err != nil {
			return nil, err
		}
	}
	qid, err := a.str("question_id")
	if err != nil {
		return nil, err
	}
	named := qid != ""
	if !named {
		qid = "q-" + randomHex(6)
	}
	set := func(k string, v any) {
		b, _ := json.Marshal(v)
		body[k] = b
	}
	set("tenant", f.o.Tenant)
	set("job_id", f.jobFor(req, job))
	set("question_id", qid)
	if name := agentName(req); name != "" {
		set("agent", bridge.Truncate(name, 100))
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	q, err := bridge.DecodeQuestion(data)
	if err != nil {
		return nil, err
	}
	q.TaskVersion = 0
	if named && job == "" {
		q.JobID = "" // wait looks the question up in the whole tenant
	}
	return q, nil
}

// wait asks q and waits for its outcome, or, when a question of q's id
// was asked before (in q's job, or anywhere in the tenant when q names
// no job), waits for that question's outcome instead: a call made again
// after a reconnect asks nothing twice (agent.Await).
//
// When it attaches, q becomes the question as it was recorded (its job,
// its proposal), so the result names what was asked, not what this call
// would have asked.
func (f *Front) wait(ctx context.Context, req *mcp.CallToolRequest, q *bridge.Question) (*bridge.Resume, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(f.stopping, func() { cancel(errStopping) })()
	out, err := f.waitFor(ctx, req, q)
	if err != nil && errors.Is(context.Cause(ctx), errStopping) {
		in := ""
		if q.JobID != "" {
			in = " in job " + q.JobID
		}
		return nil, fmt.Errorf("askbridge is stopping; question %s%s stays open: %s", q.QuestionID, in, waitAgain(q.JobID, q.QuestionID))
	}
	return out, err
}

// errStopping is why a wait ends when the front door stops (Stop).
var errStopping = errors.New("askbridge is stopping")

// waitAgain says how a call waits again for question qid of job (of any
// job when job is "").
func waitAgain(job, qid string) string {
	if job == "" {
		return fmt.Sprintf("call again with question_id %q to keep waiting for the same answer", qid)
	}
	return fmt.Sprintf("call again with question_id %q and job_id %q to keep waiting for the same answer", qid, job)
}

// waitFor is wait's asking or attaching.
func (f *Front) waitFor(ctx context.Context, req *mcp.CallToolRequest, q *bridge.Question) (*bridge.Resume, error) {
	found, err := f.find(ctx, q.JobID, q.QuestionID)
	if err != nil {
		return nil, err
	}
	if found != nil {
		q.JobID = found.JobID
		if found.Question != nil && found.Question.Proposal != nil {
			q.Proposal = found.Question.Proposal
		}
		stop := f.keepAlive(ctx, req, q.JobID, q.QuestionID)
		defer stop()
		return f.ag.Await(ctx, f.o.Tenant, q.JobID, q.QuestionID)
	}
	if q.JobID == "" {
		q.JobID = f.jobFor(req, "")
	}
	stop := f.keepAlive(ctx, req, q.JobID, q.QuestionID)
	defer stop()
	return f.ag.Ask(ctx, q)
}

// find looks for a recorded question of id, in job or (job empty) in the
// tenant. A question id the call made up itself was never asked.
func (f *Front) find(ctx context.Context, job, id string) (*bridge.QuestionView, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var reply bridge.ShowReply
	err := bridge.Request(rctx, f.nc, bridge.APIShow, bridge.ShowRequest{Tenant: f.o.Tenant, JobID: job, QuestionID: id}, &reply)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("askbridge is not running: nothing answers on NATS at %s", f.nc.ConnectedUrlRedacted())
	case err != nil:
		return nil, fmt.Errorf("askbridge did not answer: %w", err)
	case reply.Question != nil:
		return reply.Question, nil
	case reply.Error == bridge.NoQuestionShown(id):
		return nil, nil
	}
	return nil, fmt.Errorf("question_id: %s", reply.Error)
}

// keepAlive sends progress notifications while a call waits, when the
// client asked for them (a progress token): the first at once, then one
// every Options.Progress, so a client that resets its timeout on progress
// waits as long as the person takes. Each says how to re-attach.
func (f *Front) keepAlive(ctx context.Context, req *mcp.CallToolRequest, job, qid string) (stop func()) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		tick := time.NewTicker(f.o.Progress)
		defer tick.Stop()
		for n := 1; ; n++ {
			msg := fmt.Sprintf("Waiting for a person to answer question %s in job %s (%s so far). If this call is cut off, %s.",
				qid, job, time.Since(start).Round(time.Second), waitAgain(job, qid))
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: msg})
			if err != nil && ctx.Err() == nil {
				f.o.Logger.Debug("mcp progress", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}
