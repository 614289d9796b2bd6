package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/config"
)

// mintCreds runs askbridge creds KIND ARGS... on the service's data
// directory, as its owner would, and returns the .creds file written.
func mintCreds(t *testing.T, cfg *config.Config, kind string, args ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), kind+".creds")
	c, stdout, stderr := &cli{dataDir: cfg.DataDir}, new(strings.Builder), new(strings.Builder)
	c.stdout, c.stderr = stdout, stderr
	if code := c.credsCmd(context.Background(), append(append([]string{kind}, args...), "--out", out)); code != exitOK {
		t.Fatalf("creds %s %v: exit %d: %s", kind, args, code, stderr)
	}
	if !regexp.MustCompile(`^name: \S+\ninbox prefix: _INBOX\.\S+\.\nwritten: `).MatchString(stdout.String()) {
		t.Fatalf("creds %s printed %q", kind, stdout)
	}
	st, err := os.Stat(out)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("creds file %s: %v, mode %v", out, err, st.Mode())
	}
	return out
}

// connectAs connects to the service's NATS with a .creds file, on the
// credential's own inbox prefix, as a client following the docs would.
func connectAs(t *testing.T, s *service, creds string) *nats.Conn {
	t.Helper()
	opts := mustCreds(t, creds)
	// The permission violations the tests provoke are expected; each is
	// asserted where it matters, not printed.
	opts = append(opts, nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	nc, err := nats.Connect(s.natsURL(), opts...)
	if err != nil {
		t.Fatalf("connect with %s: %v", filepath.Base(creds), err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestBusRefusesWithoutCredentials: nothing reaches NATS without a
// credential, and the service's own in-process credential works on no
// TCP connection.
func TestBusRefusesWithoutCredentials(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, nil)
	if _, err := nats.Connect(s.natsURL()); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("connect without credentials: %v, want an authorization violation", err)
	}
	var out, errOut strings.Builder
	c := &cli{stdout: &out, stderr: &errOut, identity: "cli:mallory", natsURL: s.natsURL(), dataDir: t.TempDir()}
	if code := c.list(context.Background(), nil); code != exitError ||
		!strings.Contains(errOut.String(), "askbridge creds person --as cli:mallory --out FILE") {
		t.Fatalf("list without credentials: exit %d, %q", code, errOut.String())
	}
}

// TestAgentCredentialsAskGateAwaitReport: an agent of acme asks, is gated,
// awaits and reports with its credential alone.
func TestAgentCredentialsAskGateAwaitReport(t *testing.T) {
	t.Parallel()
	s, cfg := startTestService(t, func(c *config.Config) { c.Operators = []string{"cli:kevin"} })
	nc := connectAs(t, s, mintCreds(t, cfg, "agent", "--tenant", "acme", "--name", "support-bot"))
	a, err := agent.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	q := &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 1, Question: "Which colour?",
		Choices: []string{"red", "blue"}, BlockedTools: []string{"send_report"}}
	ch := askAsync(t, a, q)
	kevin, _, _ := testCLI(s, "cli:kevin")
	waitPending(t, kevin, "job-1", "q-1")
	ctx := context.Background()
	if g, err := a.Gate(ctx, "acme", "job-1", 1, "send_report"); err != nil || g.Code != bridge.GateBlockedByQuestion {
		t.Fatalf("gate while the question waits: %+v, %v", g, err)
	}
	if code := kevin.answer(ctx, []string{"--tenant", "acme", "job-1", "q-1", "blue"}); code != exitOK {
		t.Fatalf("answer: exit %d", code)
	}
	if out := waitOutcome(t, ch); out.Text != "The answer: blue" {
		t.Fatalf("outcome %+v", out)
	}
	// Await, re-attaching as an agent that restarted, finds it too.
	actx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if out, err := a.Await(actx, "acme", "job-1", "q-1"); err != nil || out.Answer == nil {
		t.Fatalf("await: %+v, %v", out, err)
	}
	if g, err := a.Gate(ctx, "acme", "job-1", 1, "send_report"); err != nil || !g.Allowed {
		t.Fatalf("gate once answered: %+v, %v", g, err)
	}
	if err := a.Notify(ctx, &bridge.Notice{Tenant: "acme", JobID: "job-1", Failure: bridge.Failure{Code: bridge.CodeCapabilityUnavailable,
		Dependency: "crm", Operation: "lookup", OperatorMessage: "no CRM connector"}}); err != nil {
		t.Fatalf("notice: %v", err)
	}
	// A cancel's decision comes back on the agent's own inbox.
	ch2 := askAsync(t, a, &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-2", TaskVersion: 1, Question: "Which size?", Choices: []string{"S", "M"}})
	waitPending(t, kevin, "job-1", "q-2")
	if d, err := a.Retire(actx, "acme", "job-1", "q-2", "the topic changed"); err != nil || d.Ended != 1 {
		t.Fatalf("retire: %+v, %v", d, err)
	}
	if out := waitOutcome(t, ch2); out.Outcome != bridge.EventCancelled {
		t.Fatalf("outcome of the retired question: %+v", out)
	}
}

// TestAgentCredentialsCannotAnswerOrReachFurther: what an agent's
// credential is refused, each at the bus.
func TestAgentCredentialsCannotAnswerOrReachFurther(t *testing.T) {
	t.Parallel()
	s, cfg := startTestService(t, func(c *config.Config) { c.Operators = []string{"cli:kevin"} })
	admin := agentFor(t, s)
	ch := askAsync(t, admin, &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", Question: "Which colour?", Choices: []string{"red", "blue"}})
	kevin, _, _ := testCLI(s, "cli:kevin")
	waitPending(t, kevin, "job-1", "q-1")
	askAsync(t, admin, &bridge.Question{Tenant: "other", JobID: "job-9", QuestionID: "q-9", Question: "Secret of another tenant?", Choices: []string{"a", "b"}})
	waitPending(t, kevin, "job-9", "q-9")

	nc := connectAs(t, s, mintCreds(t, cfg, "agent", "--tenant", "acme"))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	attempt, _ := json.Marshal(bridge.AnswerAttempt{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", AttemptID: "forged-1",
		Action: bridge.ActionAnswer, Answer: json.RawMessage(`"red"`), By: "cli:kevin", Roles: []string{"admin"}})
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 2*time.Second) }
	pctx, pcancel := short()
	if _, err := js.Publish(pctx, bridge.AnswerSubject("acme", "job-1"), attempt); err == nil {
		t.Fatal("an agent published an answer attempt")
	}
	pcancel()
	// Its questions and gate requests go straight into the service
	// account, and its cancels cross the intake: the credential's
	// permissions keep them all in its tenant.
	planted, _ := json.Marshal(bridge.Question{Tenant: "other", JobID: "job-x", QuestionID: "q-x", Question: "Planted?", Choices: []string{"a", "b"}})
	pctx, pcancel = short()
	if _, err := js.Publish(pctx, bridge.QuestionSubject("other", "job-x"), planted); err == nil {
		t.Error("an agent of acme asked in tenant other")
	}
	pcancel()
	cancelOther, _ := json.Marshal(bridge.Cancel{Tenant: "other", JobID: "job-9"})
	pctx, pcancel = short()
	if _, err := js.Publish(pctx, bridge.CancelSubject("other", "job-9"), cancelOther); err == nil {
		t.Error("an agent of acme cancelled a job of tenant other")
	}
	pcancel()
	rctx, rcancel := short()
	if _, err := nc.RequestWithContext(rctx, "ask.v1.gate.other.job-9", []byte(`{"tool":"send_report"}`)); err == nil {
		t.Error("the gate of tenant other answered an agent of acme")
	}
	rcancel()
	for _, subject := range []string{bridge.APIList, bridge.APIStats} {
		rctx, rcancel := short()
		if _, err := nc.RequestWithContext(rctx, subject, []byte(`{}`)); err == nil {
			t.Errorf("%s answered an agent", subject)
		}
		rcancel()
	}
	var show bridge.ShowReply
	if err := bridge.Request(ctx, nc, bridge.APIShow, bridge.ShowRequest{Tenant: "other", JobID: "job-9", QuestionID: "q-9"}, &show); err == nil && show.Question != nil {
		t.Errorf("show of another tenant's question: %+v", show.Question)
	}
	if err := bridge.Request(ctx, nc, bridge.APIShow, bridge.ShowRequest{JobID: "job-9", QuestionID: "q-9"}, &show); err == nil && show.Question != nil {
		t.Errorf("show without a tenant found another tenant's question: %+v", show.Question)
	}
	// What it may not read: TestCredentialsCannotReadFurther.
	sctx, scancel := short()
	if err := js.DeleteStream(sctx, bridge.StreamResumes); err == nil {
		t.Error("an agent deleted the resumes stream")
	}
	scancel()
	kctx, kcancel := short()
	if _, err := js.KeyValue(kctx, "ASK_SECRETS"); err == nil {
		t.Error("an agent opened a key-value bucket")
	}
	kcancel()
	// The forged attempt reached nothing: the question still waits.
	var v bridge.ShowReply
	if err := bridge.Request(ctx, s.nats.Conn, bridge.APIShow, bridge.ShowRequest{Tenant: "acme", JobID: "job-1", QuestionID: "q-1"}, &v); err != nil || v.Question == nil || v.Question.State != bridge.StatePending {
		t.Fatalf("after the forged attempt: %+v, %v", v.Question, err)
	}
	if err := bridge.Request(ctx, s.nats.Conn, bridge.APIShow, bridge.ShowRequest{Tenant: "other", JobID: "job-9", QuestionID: "q-9"}, &v); err != nil || v.Question == nil || v.Question.State != bridge.StatePending {
		t.Fatalf("tenant other's question after the cancel: %+v, %v", v.Question, err)
	}
	var plantedView bridge.ShowReply
	if err := bridge.Request(ctx, s.nats.Conn, bridge.APIShow, bridge.ShowRequest{Tenant: "other", JobID: "job-x", QuestionID: "q-x"}, &plantedView); err == nil && plantedView.Question != nil {
		t.Fatalf("the planted question was recorded: %+v", plantedView.Question)
	}
	select {
	case got := <-ch:
		t.Fatalf("the job resumed: %+v", got)
	default:
	}
}

// TestPersonCredentialsActAsTheirIdentity: an attempt made with a
// person's credential is theirs, whatever by and roles it names.
func TestPersonCredentialsActAsTheirIdentity(t *testing.T) {
	t.Parallel()
	s, cfg := startTestService(t, func(c *config.Config) { c.Operators, c.Admins = []string{"cli:alice"}, []string{"cli:root"} })
	admin := agentFor(t, s)
	ch := askAsync(t, admin, &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", Question: "Which colour?",
		Choices: []string{"red", "blue"}, Answerers: []string{"cli:alice"}})
	root, _, _ := testCLI(s, "cli:root")
	waitPending(t, root, "job-1", "q-1")

	mallory := connectAs(t, s, mintCreds(t, cfg, "person", "--as", "cli:mallory"))
	js, err := jetstream.New(mallory)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	forged, _ := json.Marshal(bridge.AnswerAttempt{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", AttemptID: "m-1",
		Action: bridge.ActionAnswer, Answer: json.RawMessage(`"red"`), By: "cli:root", ByName: "root", Roles: []string{"admin"}})
	if _, err := js.Publish(ctx, bridge.AnswerSubject("acme", "job-1"), forged, jetstream.WithMsgID("attempt-m-1")); err != nil {
		t.Fatalf("a person's attempt was not stored: %v", err)
	}
	var list bridge.ListReply
	if err := bridge.Request(ctx, mallory, bridge.APIList, bridge.ListRequest{As: "cli:root", Roles: []string{"admin"}}, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Questions) != 0 {
		t.Errorf("cli:mallory, claiming cli:root, listed %d questions", len(list.Questions))
	}
	// cli:alice's answer is taken as hers.
	alice := mintCreds(t, cfg, "person", "--as", "cli:alice")
	var out, errOut strings.Builder
	c := &cli{stdout: &out, stderr: &errOut, identity: "cli:root", natsURL: s.natsURL(), creds: alice}
	if code := c.answer(ctx, []string{"--tenant", "acme", "job-1", "q-1", "blue"}); code != exitOK {
		t.Fatalf("alice's answer: exit %d: %s", code, errOut.String())
	}
	res := waitOutcome(t, ch)
	if res.By != "cli:alice" || res.Text != "The answer: blue" {
		t.Fatalf("resume %+v, want blue by cli:alice", res)
	}
	trace, _, errs := testCLI(s, "cli:root")
	if code := trace.trace(ctx, []string{"--tenant", "acme", "job-1"}); code != exitOK {
		t.Fatalf("trace: %s", errs)
	}
}

// TestRevokeSaysWhatAClusterNeeds: the embedded server drops a revoked
// credential by itself; the nodes of a cluster (ASK_NATS_URL) only once
// they are given the accounts again, and revoke says how.
func TestRevokeSaysWhatAClusterNeeds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		natsURL, want, not string
	}{
		{"", "a running service drops its connections within seconds", "nats-config"},
		{"nats://10.0.0.1:4222", "askbridge creds nats-config --out FILE) and reload each node", "drops its connections"},
	} {
		cfg := &config.Config{CLI: config.CLI{DataDir: t.TempDir()}}
		mintCreds(t, cfg, "agent", "--tenant", "acme", "--name", "old-bot")
		var out, errOut strings.Builder
		c := &cli{stdout: &out, stderr: &errOut, dataDir: cfg.DataDir, natsURL: tc.natsURL}
		if code := c.credsCmd(context.Background(), []string{"revoke", "old-bot"}); code != exitOK {
			t.Fatalf("revoke: exit %d: %s", code, errOut.String())
		}
		if got := out.String(); !strings.HasPrefix(got, "revoked: old-bot (") || !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
			t.Errorf("ASK_NATS_URL %q: revoke printed %q, want %q", tc.natsURL, got, tc.want)
		}
	}
}
