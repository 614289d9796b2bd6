package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/policy"
	"github.com/askbridge/askbridge/store/record"
)

func gate(t *testing.T, env *testenv.Env, job string, version int64, tool string) bridge.GateReply {
	t.Helper()
	reply, err := env.Agent.Gate(context.Background(), "acme", job, version, tool)
	if err != nil {
		t.Fatalf("gate %s: %v", tool, err)
	}
	return reply
}

// gateLog is a job's gate decisions as the job log holds them: tool=code.
func gateLog(t *testing.T, env *testenv.Env, job string) []string {
	t.Helper()
	entries, err := env.Store.JobLog(context.Background(), "acme", job)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Kind != record.LogGate {
			continue
		}
		var b struct{ Tool, Code string }
		if err := json.Unmarshal(e.Body, &b); err != nil {
			t.Fatalf("gate log body %s: %v", e.Body, err)
		}
		out = append(out, b.Tool+"="+b.Code)
	}
	return out
}

func TestGateRefusesWhileAQuestionWaits(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	const job = "job-gate"
	if r := gate(t, env, job, 3, "send_report"); !r.Allowed || r.Code != bridge.GateAllowed {
		t.Fatalf("a job never seen: %+v", r)
	}
	date := choiceQuestion(job)
	date.QuestionID, date.TaskVersion, date.MissingField = "q-75eaf712", 3, "send_date"
	date.BlockedTools = []string{"send_report"}
	dateOut := ask(t, env, date)
	closed := choiceQuestion(job)
	closed.QuestionID, closed.TaskVersion = "q-2", 3
	closed.Question = "Which of the two customers should the reply go to?"
	closed.AllowedTools = []string{"lookup_order", "draft_reply"}
	closedOut := ask(t, env, closed)

	r := gate(t, env, job, 3, "send_report")
	want := bridge.GateReply{Code: bridge.GateBlockedByQuestion, QuestionID: "q-75eaf712",
		Reason: "question q-75eaf712 (send_date) is waiting and blocks send_report"}
	if r.Allowed || r.Code != want.Code || r.QuestionID != want.QuestionID || r.Reason != want.Reason {
		t.Fatalf("blocked tool: %+v, want %+v", r, want)
	}
	r = gate(t, env, job, 3, "refund")
	if r.Allowed || r.Code != bridge.GateBlockedByQuestion || r.QuestionID != "q-2" ||
		r.Reason != `question q-2 ("Which of the two customers should the reply go…") is waiting and blocks refund: only lookup_order, draft_reply may run while it waits` {
		t.Fatalf("a tool outside allowed_tools: %+v", r)
	}
	if r = gate(t, env, job, 3, "lookup_order"); !r.Allowed {
		t.Fatalf("a tool both questions leave open: %+v", r)
	}

	attempt(t, env, bridge.AnswerAttempt{JobID: job, QuestionID: "q-75eaf712", TaskVersion: 3, AttemptID: "a-1",
		Action: bridge.ActionAnswer, Answer: json.RawMessage(`"red"`), By: "slack:UOP"})
	outcome(t, dateOut)
	if r = gate(t, env, job, 3, "send_report"); r.Allowed || r.QuestionID != "q-2" {
		t.Fatalf("send_report with q-2 still closing the surface: %+v", r)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: job, QuestionID: "q-2", TaskVersion: 3, AttemptID: "a-2",
		Action: bridge.ActionAnswer, Answer: json.RawMessage(`"blue"`), By: "slack:UOP"})
	outcome(t, closedOut)
	if r = gate(t, env, job, 3, "send_report"); !r.Allowed || r.Code != bridge.GateAllowed {
		t.Fatalf("after both answers: %+v", r)
	}

	// A version bump: a request of the old version is stale, whatever it asks.
	if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.CancelSubject("acme", job), "bump-4",
		bridge.Cancel{Tenant: "acme", JobID: job, TaskVersion: 4}); err != nil {
		t.Fatal(err)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if r := gate(t, env, job, 3, "lookup_order"); r.Code != bridge.GateStaleVersion {
			return fmt.Errorf("after the bump: %+v", r)
		}
		return nil
	})
	r = gate(t, env, job, 3, "lookup_order")
	if r.Allowed || r.Reason != "task version 3 is older than the job's task version 4: the job changed since; plan again before acting" {
		t.Fatalf("stale: %+v", r)
	}
	if r = gate(t, env, job, 4, "send_report"); !r.Allowed {
		t.Fatalf("the new version: %+v", r)
	}

	got := strings.Join(gateLog(t, env, job), " ")
	if !strings.HasPrefix(got, "send_report=allowed send_report=blocked_by_question refund=blocked_by_question lookup_order=allowed send_report=blocked_by_question send_report=allowed ") ||
		!strings.HasSuffix(got, " lookup_order=stale_version lookup_order=stale_version send_report=allowed") {
		t.Fatalf("job log: %s", got)
	}
}

func TestGatePolicyAndBadRequests(t *testing.T) {
	t.Parallel()
	var pol policy.Holder
	pol.Store(&policy.Policy{Tenants: map[string]policy.Tenant{"acme": {Actions: map[string]policy.Rule{
		"delete_records": {RequireApproval: true}, "refund": {RequiredApprovals: 2}}}}})
	env := testenv.Start(t, testenv.Options{Roles: roles, Policy: &pol})
	r := gate(t, env, "job-new", 1, "delete_records")
	if r.Allowed || r.Code != bridge.GateApprovalRequired ||
		r.Reason != "delete_records needs an approved proposal in tenant acme: ask for approval of a proposal whose action is delete_records, then execute it by its proposal_id" {
		t.Fatalf("a gated tool on a job never seen: %+v", r)
	}
	if r = gate(t, env, "job-new", 1, "refund"); !r.Allowed {
		t.Fatalf("a rule without require_approval gates nothing: %+v", r)
	}
	for _, c := range []struct{ subject, body, reason string }{
		{bridge.GateSubject("acme", "job-new"), `{"tool": "x", "job_id": "job-other"}`, `job_id: "job-other" is not the subject's job "job-new"`},
		{bridge.GateSubject("acme", "job-new"), `{"task_version": "1", "tool": "send_report"}`, "task_version: must be a whole number, not text"},
		{bridge.GateSubject("acme", "job-new"), `{"task_version": 1}`, "tool: is empty: name a tool, such as send_report"},
		{bridge.PrefixGate + ".acme.job=1", `{"tool": "x"}`, "subject: must be ask.v1.gate.<tenant>.<job>, each 1 to 64 letters, digits, '-' or '_'"},
	} {
		msg, err := env.NATS.Conn.Request(c.subject, []byte(c.body), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var got bridge.GateReply
		if err := json.Unmarshal(msg.Data, &got); err != nil || got.Allowed || got.Code != bridge.GateInvalid || got.Reason != c.reason {
			t.Errorf("%s %s: %s", c.subject, c.body, msg.Data)
		}
	}
	want := "delete_records=approval_required refund=allowed x=invalid send_report=invalid =invalid"
	if got := strings.Join(gateLog(t, env, "job-new"), " "); got != want {
		t.Fatalf("job log: %s, want %s", got, want)
	}
	// Counted by code, the request on a bad subject too; every code is a
	// series from the start.
	got := counters(t, env, "askbridge_gate_decisions_total")
	for _, want := range []string{"code=allowed 1", "code=approval_required 1", "code=invalid 4", "code=proposal_executed 0", "code=unavailable 0"} {
		if !strings.Contains(got, want) {
			t.Errorf("askbridge_gate_decisions_total lacks %q: %s", want, got)
		}
	}
}

// seedProposals asks an approval in job and records proposals beside it,
// each in the state given.
func seedProposals(t *testing.T, env *testenv.Env, job string, ps ...record.Proposal) {
	t.Helper()
	q := &bridge.Question{Tenant: "acme", JobID: job, QuestionID: "q-approve", TaskVersion: 1, Kind: bridge.KindApproval,
		Question: "May I refund order 4471?", Proposal: &bridge.Proposal{ID: "pr-asked", Action: "refund", Summary: []string{"Refund $240"}}}
	ask(t, env, q)
	rec, err := env.Store.Find(context.Background(), record.Key{Tenant: "acme", JobID: job, QuestionID: q.QuestionID})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		p.Tenant = "acme"
		if p.JobID == "" {
			p.JobID = job
		}
		if p.Action == "" {
			p.Action = "refund"
		}
		if p.IdempotencyKey == "" {
			p.IdempotencyKey = "ik-" + p.ID
		}
		p.Question, p.RecordedAt = rec.ID, time.Now()
		if err := env.Store.SeedProposal(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
}

func TestGateProposals(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock})
	const job = "job-pr"
	executedAt := time.UnixMilli(1_790_000_000_000).UTC()
	seedProposals(t, env, job,
		record.Proposal{ID: "pr-ok", State: bridge.ProposalApproved, Arguments: json.RawMessage(`{"order":4471,"amount":240}`),
			ExpiresAt: clock.Now().Add(time.Hour)},
		record.Proposal{ID: "pr-wait", State: bridge.ProposalPending},
		record.Proposal{ID: "pr-no", State: bridge.ProposalDenied},
		record.Proposal{ID: "pr-old", State: bridge.ProposalExpired, ExpiresAt: executedAt},
		record.Proposal{ID: "pr-done", State: bridge.ProposalExecuted, ExecutedAt: executedAt},
		record.Proposal{ID: "pr-other", State: bridge.ProposalApproved, JobID: "job-else"},
	)
	execute := func(tool, id string) bridge.GateReply {
		t.Helper()
		r, err := env.Agent.Execute(context.Background(), "acme", job, 1, tool, id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, c := range []struct{ tool, id, code, reason string }{
		{"refund", "pr-none", bridge.GateUnknownProposal, "tenant acme has no proposal pr-none"},
		{"send_report", "pr-ok", bridge.GateProposalMismatch, "proposal pr-ok is for refund in job job-pr, not send_report in job job-pr"},
		{"refund", "pr-other", bridge.GateProposalMismatch, "proposal pr-other is for refund in job job-else, not refund in job job-pr"},
		{"refund", "pr-no", bridge.GateApprovalDenied, "proposal pr-no was denied"},
		{"refund", "pr-old", bridge.GateProposalExpired, "proposal pr-old expired at 2026-09-21T14:13:20Z"},
		{"refund", "pr-wait", bridge.GateApprovalPending, "proposal pr-wait is waiting for approval"},
		{"refund", "pr-done", bridge.GateProposalExecuted, "proposal pr-done was executed at 2026-09-21T14:13:20Z and is single use: look up that execution by its idempotency key"},
	} {
		r := execute(c.tool, c.id)
		if r.Allowed || r.Code != c.code || r.Reason != c.reason || r.ProposalID != c.id {
			t.Errorf("execute %s %s: %+v, want %s: %s", c.tool, c.id, r, c.code, c.reason)
		}
	}
	if r := execute("refund", "pr-done"); r.IdempotencyKey != "ik-pr-done" || !r.ExecutedAt.Equal(executedAt) {
		t.Errorf("an executed proposal's key and time: %+v", r)
	}

	// Asked without execute, an approved proposal is allowed and stays approved.
	ask := bridge.GateRequest{TaskVersion: 1, Tool: "refund", ProposalID: "pr-ok"}
	var r bridge.GateReply
	if err := bridge.Request(context.Background(), env.NATS.Conn, bridge.GateSubject("acme", job), ask, &r); err != nil {
		t.Fatal(err)
	}
	if !r.Allowed || string(r.Arguments) != `{"order":4471,"amount":240}` || r.IdempotencyKey != "ik-pr-ok" {
		t.Fatalf("an approved proposal: %+v", r)
	}
	// Twenty executes at once: one is allowed, the others find it executed.
	var mu sync.Mutex
	codes := map[string]int{}
	var allowed, executed bridge.GateReply
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			r := execute("refund", "pr-ok")
			mu.Lock()
			defer mu.Unlock()
			codes[r.Code]++
			if r.Allowed {
				allowed = r
			} else {
				executed = r
			}
		})
	}
	wg.Wait()
	if codes[bridge.GateAllowed] != 1 || codes[bridge.GateProposalExecuted] != 19 {
		t.Fatalf("20 executes: %v", codes)
	}
	if string(allowed.Arguments) != `{"order":4471,"amount":240}` || allowed.IdempotencyKey != "ik-pr-ok" ||
		executed.IdempotencyKey != "ik-pr-ok" || !executed.ExecutedAt.Equal(clock.Now().UTC().Truncate(time.Millisecond)) {
		t.Fatalf("allowed %+v, then %+v", allowed, executed)
	}
	p, err := env.Store.FindProposal(context.Background(), "acme", "pr-ok")
	if err != nil || p.State != bridge.ProposalExecuted {
		t.Fatalf("the proposal after its execute: %+v, %v", p, err)
	}
	log := gateLog(t, env, job)
	if n := strings.Count(strings.Join(log, " "), "refund=allowed"); n != 2 || len(log) != 8+1+20 {
		t.Fatalf("job log: %d entries, %d allowed: %v", len(log), n, log)
	}
}

func TestGateProposalExpiresByTheClock(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock})
	const job = "job-exp"
	expires := clock.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	seedProposals(t, env, job,
		record.Proposal{ID: "pr-a", State: bridge.ProposalApproved, ExpiresAt: expires},
		record.Proposal{ID: "pr-p", State: bridge.ProposalPending, ExpiresAt: expires})
	if r, err := env.Agent.Execute(context.Background(), "acme", job, 1, "refund", "pr-p"); err != nil || r.Code != bridge.GateApprovalPending {
		t.Fatalf("before it expires: %+v, %v", r, err)
	}
	clock.Advance(time.Hour)
	for _, id := range []string{"pr-a", "pr-p"} {
		r, err := env.Agent.Execute(context.Background(), "acme", job, 1, "refund", id)
		if err != nil || r.Allowed || r.Code != bridge.GateProposalExpired || r.Reason != "proposal "+id+" expired at "+expires.Format(time.RFC3339) {
			t.Fatalf("%s at its expiry: %+v, %v", id, r, err)
		}
	}
	if p, _ := env.Store.FindProposal(context.Background(), "acme", "pr-a"); p.State != bridge.ProposalApproved {
		t.Fatalf("a refused execute changed the proposal: %+v", p)
	}
}

// TestGateExecutesAnApprovedProposalOnce asks a real approval under a
// policy that gates refund: the gate wants a proposal, then its approval,
// then allows one execute with the approved arguments and the minted key.
func TestGateExecutesAnApprovedProposalOnce(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles, Policy: withPolicy(policy.Rule{RequireApproval: true})})
	const job = "job-gx"
	if r := gate(t, env, job, 1, "refund"); r.Code != bridge.GateApprovalRequired {
		t.Fatalf("refund before any proposal: %+v", r)
	}
	ch := ask(t, env, refundApproval(job, "pr_gx", 240))
	if r, err := env.Agent.Execute(context.Background(), "acme", job, 1, "refund", "pr_gx"); err != nil || r.Code != bridge.GateApprovalPending {
		t.Fatalf("execute while the approval waits: %+v, %v", r, err)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: job, QuestionID: "q-refund", AttemptID: "gx1", Action: bridge.ActionApprove, By: "slack:UOP", ByName: "kevin"})
	if out := outcome(t, ch); string(out.Answer) != `"approved"` {
		t.Fatalf("outcome: %+v", out)
	}
	key := proposalRow(t, env, "pr_gx").IdempotencyKey
	if key == "" {
		t.Fatal("no idempotency key minted")
	}
	if r := gate(t, env, job, 1, "refund"); r.Code != bridge.GateApprovalRequired {
		t.Fatalf("refund naming no proposal, with one approved: %+v", r)
	}
	first, err := env.Agent.Execute(context.Background(), "acme", job, 1, "refund", "pr_gx")
	if err != nil || !first.Allowed || string(first.Arguments) != `{"order":4471,"amount":240}` || first.IdempotencyKey != key {
		t.Fatalf("the first execute: %+v, %v", first, err)
	}
	again, err := env.Agent.Execute(context.Background(), "acme", job, 1, "refund", "pr_gx")
	if err != nil || again.Allowed || again.Code != bridge.GateProposalExecuted || again.IdempotencyKey != key || again.ExecutedAt.IsZero() {
		t.Fatalf("the second execute: %+v, %v", again, err)
	}
	if p := proposalRow(t, env, "pr_gx"); p.State != bridge.ProposalExecuted || !p.ExecutedAt.Equal(again.ExecutedAt) {
		t.Fatalf("the proposal: %+v", p)
	}
}
