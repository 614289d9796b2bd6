package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

// startRefundService runs the service with the refund policy of
// docs/safety.md: two named approvers, the owner forbidden to approve.
func startRefundService(t *testing.T) (*service, string) {
	t.Helper()
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	rule := "tenants:\n  acme:\n    actions:\n      refund: {require_approval: true, required_approvals: 2, forbid_self_approval: true, max_amount: 500, currency: USD, approvers: [\"cli:alice\", \"cli:bob\", \"cli:carol\"]}\n"
	if err := os.WriteFile(policyFile, []byte(rule), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := startTestService(t, func(c *config.Config) {
		c.Operators, c.Policy = []string{"cli:alice", "cli:bob", "cli:carol"}, policyFile
	})
	return s, "job-refund-4471"
}

func refundQuestion(job, owner string) *bridge.Question {
	amount := 240.0
	return &bridge.Question{Tenant: "acme", JobID: job, QuestionID: "q-refund", TaskVersion: 1, Kind: bridge.KindApproval,
		Question: "Approve this refund?", Owner: owner,
		Proposal: &bridge.Proposal{ID: "pr_8f2a", Action: "refund", Summary: []string{"Refund $240 to Jane D."},
			Arguments: json.RawMessage(`{"order":4471,"amount":240}`), Amount: &amount, Currency: "USD"}}
}

// TestForgedSelfApprovalFailsAtTheBus is the attack of a prompt-injected
// agent: it asks for approval of a refund, reads who may approve from its
// own asked event, publishes their approvals with its credential, and
// executes through the gate. The approvals are refused by NATS, nothing
// is recorded, and the gate never allows the execution.
func TestForgedSelfApprovalFailsAtTheBus(t *testing.T) {
	t.Parallel()
	s, job := startRefundService(t)
	nc := connectAs(t, s, mintCreds(t, s.cfg, "agent", "--tenant", "acme", "--name", "refund-bot"))
	a, err := agent.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan bridge.Event, 4)
	sub, err := nc.Subscribe(bridge.EventSubject("acme", job), func(m *nats.Msg) {
		var ev bridge.Event
		if json.Unmarshal(m.Data, &ev) == nil && ev.Type == bridge.EventAsked {
			asked <- ev
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	ch := askAsync(t, a, refundQuestion(job, "cli:carol"))
	var ev bridge.Event
	select {
	case ev = <-asked:
	case <-time.After(time.Minute):
		t.Fatal("no asked event reached the agent")
	}
	if ev.Proposal == nil || len(ev.Proposal.MayApprove) == 0 {
		t.Fatalf("the asked event names no approvers: %+v", ev.Proposal)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, by := range append(ev.Proposal.MayApprove, "cli:made-up") {
		data, _ := json.Marshal(bridge.AnswerAttempt{Tenant: "acme", JobID: job, QuestionID: "q-refund", AttemptID: "forged-" + by,
			Action: bridge.ActionApprove, By: by, Roles: []string{"admin"}})
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := js.Publish(pctx, bridge.AnswerSubject("acme", job), data)
		pcancel()
		if err == nil {
			t.Fatalf("approval %d (by %s) was accepted by the bus", i, by)
		}
	}
	g, err := a.Execute(ctx, "acme", job, 1, "refund", "pr_8f2a")
	if err != nil {
		t.Fatal(err)
	}
	if g.Allowed || g.Code != bridge.GateApprovalPending {
		t.Fatalf("execute after the forged approvals: %+v, want approval_pending", g)
	}
	trace, out, errOut := testCLI(s, "")
	if code := trace.trace(ctx, []string{"--tenant", "acme", job}); code != exitOK {
		t.Fatalf("trace: %s", errOut)
	}
	if strings.Contains(out.String(), "approved by") || strings.Contains(out.String(), "executed") {
		t.Fatalf("the trace records an approval or execution:\n%s", out)
	}
	select {
	case got := <-ch:
		t.Fatalf("the job resumed: %+v", got)
	default:
	}
}

// TestActsForBindsTheOwner: a credential made with --acts-for asks every
// question for that owner, whatever the body names, and the owner may not
// approve its proposals.
func TestActsForBindsTheOwner(t *testing.T) {
	t.Parallel()
	s, job := startRefundService(t)
	nc := connectAs(t, s, mintCreds(t, s.cfg, "agent", "--tenant", "acme", "--acts-for", "cli:carol"))
	a, err := agent.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	askAsync(t, a, refundQuestion(job, "cli:nobody")) // the body names another owner
	alice, _, _ := testCLI(s, "cli:alice")
	waitPending(t, alice, job, "q-refund")
	ctx := context.Background()
	var v bridge.ShowReply
	if err := bridge.Request(ctx, s.nats.Conn, bridge.APIShow, bridge.ShowRequest{Tenant: "acme", JobID: job, QuestionID: "q-refund"}, &v); err != nil || v.Question == nil || v.Question.Question == nil {
		t.Fatalf("show: %+v, %v", v, err)
	}
	if owner := v.Question.Question.Owner; owner != "cli:carol" {
		t.Fatalf("owner %q, want cli:carol from the credential", owner)
	}
	carol, _, errOut := testCLI(s, "cli:carol")
	if code := carol.answer(ctx, []string{"--tenant", "acme", job, "q-refund", "approve"}); code != exitError ||
		!strings.Contains(errOut.String(), "cli:carol is the owner of the job it acts for") {
		t.Fatalf("the owner's approval: exit %d, %q", code, errOut.String())
	}
}

// TestRevokedCredentialsEndWithoutARestart: revoking a credential closes
// its open connection and refuses new ones, while the service runs.
func TestRevokedCredentialsEndWithoutARestart(t *testing.T) {
	t.Parallel()
	s, cfg := startTestService(t, nil)
	creds := mintCreds(t, cfg, "agent", "--tenant", "acme", "--name", "old-bot")
	closed := make(chan struct{})
	opts := mustCreds(t, creds)
	nc, err := nats.Connect(s.natsURL(), append(opts, nats.NoReconnect(), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var list, errOut strings.Builder
	lc := &cli{stdout: &list, stderr: &errOut, dataDir: cfg.DataDir}
	if code := lc.credsCmd(context.Background(), []string{"list"}); code != exitOK || !strings.Contains(list.String(), "old-bot") {
		t.Fatalf("creds list: exit %d: %s%s", code, list.String(), errOut.String())
	}
	if strings.Contains(list.String(), "SU") || strings.Contains(list.String(), "eyJ") {
		t.Fatalf("creds list shows a secret:\n%s", list.String())
	}
	var out strings.Builder
	rc := &cli{stdout: &out, stderr: &errOut, dataDir: cfg.DataDir}
	if code := rc.credsCmd(context.Background(), []string{"revoke", "old-bot"}); code != exitOK {
		t.Fatalf("revoke: exit %d: %s", code, errOut.String())
	}
	select {
	case <-closed:
	case <-time.After(time.Minute): // a hang detector; the service re-reads the register every second
		t.Fatal("the revoked credential's connection stayed open")
	}
	if _, err := nats.Connect(s.natsURL(), opts...); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("connect with a revoked credential: %v", err)
	}
	list.Reset()
	if lc.credsCmd(context.Background(), []string{"list"}); strings.Contains(list.String(), "old-bot") {
		t.Fatalf("creds list shows a revoked credential:\n%s", list.String())
	}
	if code := rc.credsCmd(context.Background(), []string{"revoke", "no-such"}); code != exitError ||
		!strings.Contains(errOut.String(), `no credential named "no-such"`) {
		t.Fatalf("revoke of an unknown name: exit %d, %q", code, errOut.String())
	}
}

// TestExpiredCredentialsAreRefused: NATS closes a credential's connection
// at its expiry and refuses it after.
func TestExpiredCredentialsAreRefused(t *testing.T) {
	t.Parallel()
	s, cfg := startTestService(t, nil)
	creds := mintCreds(t, cfg, "agent", "--tenant", "acme", "--expires", "3s")
	opts := mustCreds(t, creds)
	closed := make(chan struct{})
	nc, err := nats.Connect(s.natsURL(), append(opts, nats.NoReconnect(), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))...)
	if err != nil {
		t.Skipf("the credential expired before the test connected on a slow machine: %v", err)
	}
	defer nc.Close()
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("the expired credential's connection stayed open")
	}
	testenv.CheckFor(t, time.Minute, 100*time.Millisecond, func() error {
		if _, err := nats.Connect(s.natsURL(), opts...); err == nil {
			return errors.New("an expired credential connected")
		}
		return nil
	})
}
