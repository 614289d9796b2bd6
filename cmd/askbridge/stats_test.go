package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
	"github.com/askbridge/askbridge/store/record"
)

// clarifyScript drives twenty questions with known outcomes on an injected
// clock: each step happens at its minute, and is applied before the next.
type clarifyScript struct {
	t     *testing.T
	env   *testenv.Env
	clock *testenv.Clock
	t0    time.Time
	qs    map[string]*bridge.Question
}

func (s *clarifyScript) at(minute int) {
	s.t.Helper()
	if d := s.t0.Add(time.Duration(minute) * time.Minute).Sub(s.clock.Now()); d > 0 {
		s.clock.Advance(d)
	}
}

// ask asks question id of tenant/job for agent; mf is its missing_field.
func (s *clarifyScript) ask(minute int, tenant, agent, job, id, mf, timeout string, blocks ...string) {
	s.t.Helper()
	s.at(minute)
	q := &bridge.Question{Tenant: tenant, JobID: job, QuestionID: id, TaskVersion: 1, Agent: agent, MissingField: mf,
		Question: "Which colour should the report use?", Choices: []string{"red", "blue"}, Timeout: timeout, BlockedTools: blocks}
	s.qs[id] = q
	if err := s.env.Agent.Publish(context.Background(), q); err != nil {
		s.t.Fatal(err)
	}
	testenv.CheckFor(s.t, testenv.Patience, 5*time.Millisecond, func() error {
		_, err := s.env.Store.Find(context.Background(), record.Key{Tenant: tenant, JobID: job, QuestionID: id})
		return err
	})
}

// settle ends question id at minute by publishing on subject, and waits for its outcome.
func (s *clarifyScript) settle(minute int, id, subject string, msg any, want string) {
	s.t.Helper()
	s.at(minute)
	if err := bridge.Publish(context.Background(), s.env.NATS.JS, subject, "script-"+id+"-"+want, msg); err != nil {
		s.t.Fatal(err)
	}
	s.outcome(id, want)
}

func (s *clarifyScript) outcome(id, want string) {
	s.t.Helper()
	q := s.qs[id]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := s.env.Agent.Await(ctx, q.Tenant, q.JobID, id)
	if err != nil || out.Outcome != want {
		s.t.Fatalf("%s: outcome %+v (%v), want %s", id, out, err, want)
	}
}

func (s *clarifyScript) answer(minute int, id string) {
	q := s.qs[id]
	s.settle(minute, id, bridge.AnswerSubject(q.Tenant, q.JobID), bridge.AnswerAttempt{Tenant: q.Tenant, JobID: q.JobID, QuestionID: id,
		AttemptID: "a-" + id, Action: bridge.ActionAnswer, Answer: json.RawMessage(`"red"`), By: "cli:admin"}, bridge.OutcomeAnswered)
}

func (s *clarifyScript) decline(minute int, id string) {
	q := s.qs[id]
	s.settle(minute, id, bridge.AnswerSubject(q.Tenant, q.JobID), bridge.AnswerAttempt{Tenant: q.Tenant, JobID: q.JobID, QuestionID: id,
		AttemptID: "d-" + id, Action: bridge.ActionDecline, Comment: "ask someone else", By: "cli:admin"}, bridge.OutcomeDeclined)
}

func (s *clarifyScript) cancel(minute int, id string, c bridge.Cancel) {
	q := s.qs[id]
	c.Tenant, c.JobID = q.Tenant, q.JobID
	s.settle(minute, id, bridge.CancelSubject(q.Tenant, q.JobID), c, bridge.OutcomeCanceled)
}

func (s *clarifyScript) gate(tenant, job, tool, want string) {
	s.t.Helper()
	reply, err := s.env.Agent.Gate(context.Background(), tenant, job, 1, tool)
	if err != nil || reply.Code != want {
		s.t.Fatalf("gate %s/%s %s: %+v (%v), want %s", tenant, job, tool, reply, err, want)
	}
}

// runClarifyScript plays the twenty questions; the comments say what
// each counts as. Minutes are from the start.
func runClarifyScript(t *testing.T, env *testenv.Env, clock *testenv.Clock) {
	s := &clarifyScript{t: t, env: env, clock: clock, t0: clock.Now(), qs: map[string]*bridge.Question{}}
	// acme/support, job a1: Q2 repeats ship_date (answered at 2) and reopens (3 minutes after it).
	s.ask(0, "acme", "support", "a1", "q01", "ship_date", "4h")
	s.ask(0, "acme", "billing", "b1", "q10", "amount", "4h")
	s.ask(0, "globex", "support", "g1", "q16", "size", "4h")
	s.ask(0, "globex", "support", "g2", "q19", "", "4h")
	s.ask(1, "acme", "support", "a2", "q04", "ship_date", "4h") // another job: no repeat
	s.answer(1, "q16")                                          // 60 s
	s.ask(2, "acme", "support", "a3", "q07", "", "4h")
	s.ask(2, "globex", "support", "g2", "q20", "", "4h") // asked before q19's answer: no reopen
	s.answer(2, "q01")                                   // 120 s
	s.ask(3, "acme", "support", "a3", "q08", "", "4h", "send_report")
	s.decline(3, "q10")
	s.answer(3, "q19")                                          // 180 s
	s.answer(4, "q04")                                          // 180 s
	s.ask(4, "acme", "billing", "b1", "q11", "amount", "4h")    // amount was declined, not answered: no repeat
	s.ask(5, "acme", "support", "a1", "q02", "ship_date", "4h") // repeat, reopen
	s.ask(5, "acme", "billing", "b2", "q14", "", "4h")          //
	s.cancel(5, "q20", bridge.Cancel{TaskVersion: 2})           // superseded
	s.answer(6, "q02")                                          // 60 s
	s.cancel(6, "q14", bridge.Cancel{Reason: "not needed"})     // cancelled
	s.ask(6, "acme", "billing", "b2", "q15", "", "4h")          //
	s.ask(7, "globex", "support", "g1", "q18", "", "4h")        // reopen (6 minutes after q16's answer)
	s.decline(8, "q18")                                         //
	s.answer(9, "q11")                                          // 300 s
	s.ask(9, "acme", "billing", "b1", "q12", "amount", "30m")   // repeat, reopen (0 minutes); times out at 39
	s.ask(10, "acme", "billing", "b1", "q13", "", "4h")         // reopen
	s.answer(11, "q13")                                         // 60 s
	s.answer(12, "q07")                                         // 600 s
	s.ask(13, "acme", "support", "a3", "q09", "", "4h")         // reopen
	s.ask(14, "acme", "support", "a2", "q05", "tone", "4h")     // reopen: exactly 10 minutes after q04's answer
	s.answer(14, "q09")                                         // 60 s
	s.cancel(15, "q05", bridge.Cancel{QuestionID: "q05", Status: bridge.CancelRetired, Reason: "the topic changed"})
	s.ask(15, "acme", "support", "a2", "q06", "ship_date", "30m")     // repeat, no reopen (11 minutes); times out at 45
	s.answer(16, "q15")                                               // 600 s
	s.ask(20, "acme", "support", "a1", "q03", "copies", "4h")         // 14 minutes after q02's answer: no reopen
	s.decline(21, "q03")                                              //
	s.ask(30, "globex", "support", "g1", "q17", "size", "4h", "ship") // repeat, no reopen (29 minutes)
	s.gate("acme", "a3", "send_report", bridge.GateBlockedByQuestion)
	s.gate("acme", "a3", "send_report", bridge.GateBlockedByQuestion)
	s.gate("acme", "a3", "read_file", bridge.GateAllowed)
	s.gate("globex", "g1", "ship", bridge.GateBlockedByQuestion)
	s.at(39)
	s.outcome("q12", bridge.OutcomeTimedOut)
	s.at(45)
	s.outcome("q06", bridge.OutcomeTimedOut)
	s.at(50)
}

// TestStatsOfTwentyQuestions: twenty questions with known outcomes give
// exactly the expected measures in askbridge stats and on /metrics.
func TestStatsOfTwentyQuestions(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Clock: clock, Roles: runtime.Roles{Admins: []string{"cli:admin"}},
		Clarify: runtime.ClarifyMetrics{Tenants: []string{"acme"}, Agents: []string{"support"}}})
	runClarifyScript(t, env, clock)

	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut, identity: "cli:admin", natsURL: env.URL(), natsOpts: []nats.Option{env.NATS.Admin()}}
	if code := c.stats(context.Background(), nil); code != exitOK {
		t.Fatalf("stats exit %d: %s", code, errOut.String())
	}
	since := clock.Now().Add(-7 * 24 * time.Hour).UTC().Format("2006-01-02 15:04 UTC")
	want := `pending 2
answered 10
declined 3
timed_out 2
cancelled 2
superseded 1
failed 0
outbox backlog N

Clarification, questions asked since ` + since + ` (7d), every tenant:
TENANT AGENT ASKED RESOLVED DECLINED ABANDONED REPEATED REOPENED ANSWER P50 ANSWER P90 GATE REFUSALS
acme billing 6 50.0% 16.7% 16.7% 16.7% 33.3% 5m0s 10m0s -
acme support 9 55.6% 11.1% 11.1% 22.2% 33.3% 2m0s 10m0s blocked_by_question 2
globex support 5 40.0% 20.0% 0.0% 20.0% 20.0% 1m0s 3m0s blocked_by_question 1
all - 20 50.0% 15.0% 10.0% 20.0% 30.0% 2m0s 10m0s blocked_by_question 3
`
	// The relay may not have published the last outcomes yet.
	if got := backlogLine.ReplaceAllString(squeeze(out.String()), "outbox backlog N"); got != want {
		t.Errorf("askbridge stats printed:\n%s\nwant (spacing aside):\n%s", out.String(), want)
	}

	out.Reset()
	if code := c.stats(context.Background(), []string{"--since", "1h", "--tenant", "acme"}); code != exitOK {
		t.Fatalf("stats --tenant exit %d: %s", code, errOut.String())
	}
	wantAcme := "all - 15 53.3% 13.3% 13.3% 20.0% 33.3% 2m0s 10m0s blocked_by_question 2\n"
	if got := squeeze(out.String()); !strings.HasSuffix(got, wantAcme) || !strings.Contains(got, "(1h), tenant acme:\n") || strings.Contains(got, "globex") {
		t.Errorf("askbridge stats --since 1h --tenant acme printed:\n%s\nwant it to end %q", out.String(), wantAcme)
	}

	srv := httptest.NewServer(promhttp.HandlerFor(env.Metrics, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range []string{
		`askbridge_clarification_questions{agent="support",outcome="answered",tenant="acme"} 5`,
		`askbridge_clarification_questions{agent="other",outcome="timed_out",tenant="acme"} 1`,
		`askbridge_clarification_questions{agent="support",outcome="pending",tenant="other"} 1`,
		`askbridge_clarification_questions{agent="support",outcome="superseded",tenant="other"} 1`,
		`askbridge_clarification_rate{agent="support",measure="resolution",tenant="acme"} 0.5555555555555556`,
		`askbridge_clarification_rate{agent="support",measure="reopen",tenant="acme"} 0.3333333333333333`,
		`askbridge_clarification_rate{agent="other",measure="decline",tenant="acme"} 0.16666666666666666`,
		`askbridge_clarification_rate{agent="other",measure="repetition",tenant="acme"} 0.16666666666666666`,
		`askbridge_clarification_rate{agent="support",measure="resolution",tenant="other"} 0.4`,
		`askbridge_clarification_rate{agent="support",measure="abandonment",tenant="other"} 0`,
		`askbridge_clarification_time_to_answer_quantile_seconds{agent="support",quantile="0.5",tenant="acme"} 120`,
		`askbridge_clarification_time_to_answer_quantile_seconds{agent="support",quantile="0.9",tenant="acme"} 600`,
		`askbridge_clarification_time_to_answer_quantile_seconds{agent="other",quantile="0.5",tenant="acme"} 300`,
		`askbridge_clarification_time_to_answer_seconds_bucket{agent="support",tenant="acme",le="60"} 2`,
		`askbridge_clarification_time_to_answer_seconds_bucket{agent="support",tenant="acme",le="300"} 4`,
		`askbridge_clarification_time_to_answer_seconds_count{agent="support",tenant="acme"} 5`,
		`askbridge_clarification_time_to_answer_seconds_sum{agent="support",tenant="acme"} 1020`,
		`askbridge_clarification_gate_refusals{agent="support",code="blocked_by_question",tenant="acme"} 2`,
		`askbridge_clarification_gate_refusals{agent="support",code="blocked_by_question",tenant="other"} 1`,
		`askbridge_clarification_premature_actions_blocked{agent="other",tenant="acme"} 0`,
	} {
		if !strings.Contains(string(body), "\n"+line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	if strings.Contains(string(body), `tenant="globex"`) || strings.Contains(string(body), `agent="billing"`) || strings.Contains(string(body), "job_id") {
		t.Errorf("/metrics names a tenant or agent not configured, or a job:\n%s", grepLines(string(body), "askbridge_clarification"))
	}
}

var backlogLine = regexp.MustCompile(`outbox backlog \d+`)

// squeeze turns every run of spaces into one, line by line.
func squeeze(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		fmt.Fprintln(&b, strings.Join(strings.Fields(line), " "))
	}
	return b.String()
}

func grepLines(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
