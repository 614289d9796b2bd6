package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

// decidedAttempt publishes an attempt's raw body as a client of nc would,
// with the runtime told to say on nc's own inbox what became of it, and
// returns that decision: its type and text.
func decidedAttempt(t *testing.T, nc *nats.Conn, tenant, job, msgID, body string) (string, string) {
	t.Helper()
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
	defer cancel()
	msg := &nats.Msg{Subject: bridge.AnswerSubject(tenant, job), Data: []byte(body), Header: nats.Header{bridge.HeaderDecidedTo: []string{inbox}}}
	if _, err := js.PublishMsg(ctx, msg, jetstream.WithMsgID(msgID)); err != nil {
		t.Fatalf("publish %s: %v", body, err)
	}
	m, err := sub.NextMsgWithContext(ctx)
	if err != nil {
		t.Fatalf("no decision on %s: %v", body, err)
	}
	return m.Header.Get(bridge.HeaderDecision), m.Header.Get(bridge.HeaderDecisionText)
}

// TestPersonCannotClaimRolesInAnyCase: encoding/json reads "Roles",
// "ROLES" and "roleſ" as roles, so the intake drops a claimed field
// whatever its case. A person with no role answers nothing and lists
// nothing by claiming admin so.
func TestPersonCannotClaimRolesInAnyCase(t *testing.T) {
	t.Parallel()
	s, cfg := startTestService(t, func(c *config.Config) { c.Operators = []string{"cli:kevin"} })
	admin := agentFor(t, s)
	kevin, _, _ := testCLI(s, "cli:kevin")
	claims := []string{`"Roles":["admin"]`, `"ROLES":["owner"]`, `"roleſ":["admin"]`}
	for i := range claims {
		q := "q-" + string(rune('a'+i))
		askAsync(t, admin, &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: q, Question: "Which colour?", Choices: []string{"red", "blue"}})
		waitPending(t, kevin, "job-1", q)
	}
	mallory := connectAs(t, s, mintCreds(t, cfg, "person", "--as", "cli:mallory"))
	for i, claim := range claims {
		q := "q-" + string(rune('a'+i))
		body := `{"tenant":"acme","job_id":"job-1","question_id":"` + q + `","attempt_id":"m-` + q + `","action":"answer","answer":"red",` + claim + `}`
		typ, text := decidedAttempt(t, mallory, "acme", "job-1", "attempt-m-"+q, body)
		if typ != bridge.EventRefused || !strings.Contains(text, "cli:mallory is not one of its answerers and has no operator, admin or owner role") {
			t.Errorf("cli:mallory claiming %s: %s %q, want refused", claim, typ, text)
		}
	}
	for _, claim := range claims {
		var list bridge.ListReply
		if err := bridge.Request(context.Background(), mallory, bridge.APIList, json.RawMessage(`{`+claim+`}`), &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Questions) != 0 || len(list.Roles) != 0 {
			t.Errorf("cli:mallory claiming %s listed %d questions with roles %v", claim, len(list.Questions), list.Roles)
		}
	}
}

// TestAgentCancelNamesNoPerson: a cancel's by, roles and reply_to are a
// front-end's to say (a person's /ask cancel); an agent's, with or
// without --acts-for, is the agent's own whatever its body names, so it
// records no one's name and sends no refusal to anyone.
func TestAgentCancelNamesNoPerson(t *testing.T) {
	t.Parallel()
	s, cfg := startTestService(t, func(c *config.Config) { c.Operators, c.Admins = []string{"cli:kevin"}, []string{"cli:root"} })
	admin := agentFor(t, s)
	kevin, _, _ := testCLI(s, "cli:kevin")
	for _, q := range []string{"q-1", "q-2", "q-3", "q-4"} {
		askAsync(t, admin, &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: q, Question: "Which colour?", Choices: []string{"red", "blue"}})
		waitPending(t, kevin, "job-1", q)
	}
	bot, err := agent.New(connectAs(t, s, mintCreds(t, cfg, "agent", "--tenant", "acme", "--name", "bot")))
	if err != nil {
		t.Fatal(err)
	}
	acting, err := agent.New(connectAs(t, s, mintCreds(t, cfg, "agent", "--tenant", "acme", "--name", "acting-bot", "--acts-for", "cli:kevin")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
	defer cancel()
	forged := []struct {
		a *agent.Client
		c bridge.Cancel
	}{
		{bot, bridge.Cancel{QuestionID: "q-1", By: "cli:root", Roles: []string{"admin"}}},
		{bot, bridge.Cancel{QuestionID: "q-2", By: "cli:mallory", ReplyTo: map[string]string{"slack": "C0VICTIM"}}},
		{acting, bridge.Cancel{QuestionID: "q-3", By: "cli:root", Roles: []string{"owner"}}},
	}
	for _, f := range forged {
		f.c.Tenant, f.c.JobID = "acme", "job-1"
		if d, err := f.a.Cancel(ctx, f.c); err != nil || d.Ended != 1 {
			t.Errorf("cancel of %s naming %s: %+v, %v; want it ended as the agent's", f.c.QuestionID, f.c.By, d, err)
		}
	}
	// A raw body, its key in capitals (encoding/json reads BY as by).
	raw := connectAs(t, s, mintCreds(t, cfg, "agent", "--tenant", "acme", "--name", "raw-bot"))
	inbox := raw.NewInbox()
	sub, err := raw.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(raw)
	if err != nil {
		t.Fatal(err)
	}
	msg := &nats.Msg{Subject: bridge.CancelSubject("acme", "job-1"), Header: nats.Header{bridge.HeaderDecidedTo: []string{inbox}},
		Data: []byte(`{"tenant":"acme","job_id":"job-1","question_id":"q-4","BY":"cli:root","Reply_To":{"slack":"C0VICTIM"}}`)}
	if _, err := js.PublishMsg(ctx, msg, jetstream.WithMsgID("cancel-raw-q-4")); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsgWithContext(ctx); err != nil || !strings.Contains(string(m.Data), `"ended":1`) {
		t.Errorf("raw cancel of q-4: %v, %v", m, err)
	}
	for _, q := range []string{"q-1", "q-2", "q-3", "q-4"} {
		var v bridge.ShowReply
		if err := bridge.Request(ctx, s.nats.Conn, bridge.APIShow, bridge.ShowRequest{Tenant: "acme", JobID: "job-1", QuestionID: q}, &v); err != nil || v.Question == nil {
			t.Fatalf("show %s: %+v, %v", q, v, err)
		}
		if v.Question.State != bridge.StateCancelled || v.Question.By != "" {
			t.Errorf("%s is %s by %q, want cancelled by no one named", q, v.Question.State, v.Question.By)
		}
		for _, e := range v.Audit {
			if e.By != "" && e.To == bridge.StateCancelled {
				t.Errorf("%s's audit says cancelled by %s", q, e.By)
			}
		}
	}
}

// TestAnotherTenantCannotTakeAQuestionsMessageID: an agent of tenant evil
// publishes first, on its own subject, with the Nats-Msg-Id acme's
// question would have had under the old scheme
// (q.<tenant>.<job>.<question>.<version>); ASK_QUESTIONS deduplicates
// across subjects, yet acme's question is asked and answered.
func TestAnotherTenantCannotTakeAQuestionsMessageID(t *testing.T) {
	t.Parallel()
	s, cfg := startTestService(t, func(c *config.Config) { c.Operators = []string{"cli:kevin"} })
	evil := connectAs(t, s, mintCreds(t, cfg, "agent", "--tenant", "evil"))
	js, err := jetstream.New(evil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
	defer cancel()
	decoy, _ := json.Marshal(bridge.Question{Tenant: "evil", JobID: "job-9", QuestionID: "q-1", TaskVersion: 1, Question: "Decoy?"})
	if _, err := js.Publish(ctx, bridge.QuestionSubject("evil", "job-9"), decoy, jetstream.WithMsgID("q.acme.job-1.q-1.1")); err != nil {
		t.Fatal(err)
	}
	victim, err := agent.New(connectAs(t, s, mintCreds(t, cfg, "agent", "--tenant", "acme")))
	if err != nil {
		t.Fatal(err)
	}
	ch := askAsync(t, victim, &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 1,
		Question: "Which colour?", Choices: []string{"red", "blue"}})
	kevin, _, errOut := testCLI(s, "cli:kevin")
	waitPending(t, kevin, "job-1", "q-1")
	if code := kevin.answer(ctx, []string{"--tenant", "acme", "job-1", "q-1", "blue"}); code != exitOK {
		t.Fatalf("answer: exit %d: %s", code, errOut)
	}
	if out := waitOutcome(t, ch); out.Text != "The answer: blue" {
		t.Fatalf("outcome %+v", out)
	}
}

// TestPersonCannotTakeAFrontEndsMessageID: a person publishes first, with
// their credential, under the Nats-Msg-Id a chat front-end will give a
// click (attempt-discord-<interaction id>, which a person can guess); the
// intake keeps each credential's ids apart, so the click still counts.
func TestPersonCannotTakeAFrontEndsMessageID(t *testing.T) {
	t.Parallel()
	s, cfg := startTestService(t, func(c *config.Config) { c.Operators = []string{"cli:kevin"} })
	ch := askAsync(t, agentFor(t, s), &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", Question: "Which colour?", Choices: []string{"red", "blue"}})
	kevin, _, _ := testCLI(s, "cli:kevin")
	waitPending(t, kevin, "job-1", "q-1")
	mallory := connectAs(t, s, mintCreds(t, cfg, "person", "--as", "cli:mallory"))
	const id = "attempt-discord-1183020211551338566"
	body := `{"tenant":"acme","job_id":"job-1","question_id":"q-1","attempt_id":"m-1","action":"answer","answer":"red"}`
	if typ, _ := decidedAttempt(t, mallory, "acme", "job-1", id, body); typ != bridge.EventRefused {
		t.Fatalf("cli:mallory's attempt: %s, want refused", typ)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
	defer cancel()
	click := bridge.AnswerAttempt{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", AttemptID: "discord-1183020211551338566",
		Action: bridge.ActionAnswer, Answer: json.RawMessage(`"blue"`), By: "cli:kevin", Via: bridge.PlatformDiscord}
	if err := bridge.Publish(ctx, s.nats.JS, bridge.AnswerSubject("acme", "job-1"), id, click); err != nil {
		t.Fatal(err)
	}
	if out := waitOutcome(t, ch); out.Text != "The answer: blue" || out.By != "cli:kevin" {
		t.Fatalf("outcome %+v, want kevin's click", out)
	}
}
