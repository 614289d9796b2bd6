package runtime_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/internal/testenv/testmain"
	"github.com/askbridge/askbridge/runtime"
	"github.com/askbridge/askbridge/store"
)

// TestMain runs eight tests at once: they wait on NATS, SQLite's commits
// and timers far more than they compute (see testmain.Run).
func TestMain(m *testing.M) { testmain.Main(m, 8) }

var roles = runtime.Roles{
	Owners:    []string{"slack:UOWNER"},
	Admins:    []string{"slack:UADMIN"},
	Operators: []string{"cli:kevin", "slack:UOP"},
	Readers:   []string{"slack:UREADER"},
}

func choiceQuestion(job string) *bridge.Question {
	return &bridge.Question{
		Tenant: "acme", JobID: job, QuestionID: "q-1", TaskVersion: 1,
		Question: "Which colour should the report use?", Choices: []string{"red", "blue"},
		Timeout: "1h",
	}
}

// ask publishes q and returns a channel with its outcome.
func ask(t *testing.T, env *testenv.Env, q *bridge.Question) <-chan *bridge.Resume {
	t.Helper()
	ch := make(chan *bridge.Resume, 1)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
	if err := env.Agent.Publish(ctx, q); err != nil {
		t.Fatalf("publish question: %v", err)
	}
	go func() {
		defer cancel()
		out, err := env.Agent.Await(ctx, q.Tenant, q.JobID, q.QuestionID)
		if err != nil {
			// The test stopped the service (a restart test) or timed out;
			// outcome reports a missing outcome.
			close(ch)
			return
		}
		ch <- out
	}()
	waitState(t, env, q, bridge.StatePending)
	return ch
}

func waitState(t *testing.T, env *testenv.Env, q *bridge.Question, state string) {
	t.Helper()
	waitStateFor(t, env, q, state, testenv.Patience)
}

// waitStateFor is waitState for a question whose state follows a backlog.
func waitStateFor(t *testing.T, env *testenv.Env, q *bridge.Question, state string, wait time.Duration) {
	t.Helper()
	testenv.CheckFor(t, wait, 10*time.Millisecond, func() error {
		reply := showIn(t, env, "slack:UADMIN", cmp.Or(q.Tenant, "acme"), q.JobID, q.QuestionID)
		if reply.Question == nil {
			return fmt.Errorf("question not visible yet: %s", reply.Error)
		}
		if reply.Question.State != state {
			return fmt.Errorf("state %s, want %s", reply.Question.State, state)
		}
		return nil
	})
}

func show(t *testing.T, env *testenv.Env, as, job, qid string) bridge.ShowReply {
	t.Helper()
	return showIn(t, env, as, "acme", job, qid)
}

// showIn is show of a question of tenant.
func showIn(t *testing.T, env *testenv.Env, as, tenant, job, qid string) bridge.ShowReply {
	t.Helper()
	data, _ := json.Marshal(bridge.ShowRequest{As: as, Tenant: tenant, JobID: job, QuestionID: qid})
	msg, err := env.NATS.Conn.Request(bridge.APIShow, data, 5*time.Second)
	if err != nil {
		t.Fatalf("show: %v", err)
	}
	var reply bridge.ShowReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		t.Fatalf("show reply: %v", err)
	}
	return reply
}

func attempt(t *testing.T, env *testenv.Env, a bridge.AnswerAttempt) {
	t.Helper()
	if a.Tenant == "" {
		a.Tenant = "acme"
	}
	if err := env.Attempt(context.Background(), a); err != nil {
		t.Fatalf("attempt: %v", err)
	}
}

func outcome(t *testing.T, ch <-chan *bridge.Resume) *bridge.Resume {
	t.Helper()
	select {
	case out, ok := <-ch:
		if !ok {
			t.Fatal("no outcome")
		}
		return out
	case <-time.After(testenv.Patience):
		t.Fatal("timed out waiting for the outcome")
	}
	return nil
}

// refusalFor waits for the refused event of one attempt.
func refusalFor(t *testing.T, events *testenv.Recorder, attemptID string) bridge.Event {
	t.Helper()
	var found bridge.Event
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, ev := range events.Events() {
			if ev.Type == bridge.EventRefused && ev.AttemptID == attemptID {
				found = ev
				return nil
			}
		}
		var got []string
		for _, ev := range events.Events() {
			got = append(got, ev.AttemptID+": "+ev.Text)
		}
		return fmt.Errorf("no refusal for %s in %s", attemptID, strings.Join(got, "; "))
	})
	return found
}

func TestAnswerAndDecline(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	ch := ask(t, env, choiceQuestion("job-a"))
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-a", QuestionID: "q-1", AttemptID: "a1", Answer: json.RawMessage(`"blue"`), By: "cli:kevin", Via: "cli"})
	out := outcome(t, ch)
	if out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: blue" || string(out.Answer) != `"blue"` || out.By != "cli:kevin" {
		t.Fatalf("outcome = %+v", out)
	}

	ch = ask(t, env, choiceQuestion("job-b"))
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-b", QuestionID: "q-1", AttemptID: "b1", Action: bridge.ActionDecline, Comment: "ask Ana", By: "cli:kevin", Via: "cli"})
	out = outcome(t, ch)
	if out.Outcome != bridge.OutcomeDeclined || out.Text != "cli:kevin declined to answer: ask Ana." {
		t.Fatalf("outcome = %+v", out)
	}
}

func TestTypedFieldsRefusedThenAnswered(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-t")
	one, nine := 1.0, 9.0
	q := &bridge.Question{
		Tenant: "acme", JobID: "job-t", QuestionID: "q-t", TaskVersion: 3,
		Question: "When should I send the report, and how many copies?",
		Fields: []bridge.Field{
			{Name: "on", Kind: bridge.FieldDate, Label: "Send on", Required: true},
			{Name: "copies", Kind: bridge.FieldNumber, Integer: true, Min: &one, Max: &nine},
		},
	}
	ch := ask(t, env, q)
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-t", QuestionID: "q-t", TaskVersion: 3, AttemptID: "t1",
		Answer: json.RawMessage(`{"on":"2026-10-20","copies":12}`), By: "slack:UOP"})
	ev := refusalFor(t, events, "t1")
	if ev.Text != "copies: must be at most 9" || ev.Reason != bridge.RefusedInvalid || ev.FieldErrors["copies"] != "must be at most 9" || ev.To != "slack:UOP" {
		t.Fatalf("refusal = %+v", ev)
	}
	waitState(t, env, q, bridge.StatePending)
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-t", QuestionID: "q-t", TaskVersion: 3, AttemptID: "t2",
		Answer: json.RawMessage(`{"copies":"2","on":"2026-10-20"}`), By: "slack:UOP"})
	out := outcome(t, ch)
	if out.Text != `The answer: {"on":"2026-10-20","copies":2}` || string(out.Answer) != `{"on":"2026-10-20","copies":2}` {
		t.Fatalf("outcome = %+v", out)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.>")
	q := choiceQuestion("job-r")
	q.Answerers = []string{"slack:UANA"}
	ch := ask(t, env, q)

	cases := []struct {
		name, id   string
		a          bridge.AnswerAttempt
		reason     string
		textPrefix string
	}{
		{"stranger", "r1", bridge.AnswerAttempt{Answer: json.RawMessage(`"red"`), By: "slack:USTRANGER"},
			bridge.RefusedForbidden, "You can't answer this question: slack:USTRANGER is not one of its answerers"},
		{"reader", "r2", bridge.AnswerAttempt{Answer: json.RawMessage(`"red"`), By: "slack:UREADER"},
			bridge.RefusedForbidden, "You can't answer this question: slack:UREADER is a reader: it may see that the question waits, but not answer or decline it."},
		{"unknown question", "r4", bridge.AnswerAttempt{QuestionID: "q-nope", Answer: json.RawMessage(`"red"`), By: "slack:UANA"},
			bridge.RefusedUnknown, "There is no question"},
		{"stale card", "r5", bridge.AnswerAttempt{TaskVersion: 7, Answer: json.RawMessage(`"red"`), By: "slack:UANA"},
			bridge.RefusedStale, "This answer is stale: it belongs to task version 7, and the task is now at version 1."},
		{"not a choice", "r6", bridge.AnswerAttempt{Answer: json.RawMessage(`"green"`), By: "slack:UANA"},
			bridge.RefusedInvalid, "answer: must be one of: red, blue"},
		{"approve to a question", "r7", bridge.AnswerAttempt{Action: bridge.ActionApprove, By: "slack:UANA"},
			bridge.RefusedWrongKind, "This is a question, not an approval"},
		{"decline with an answer", "r8", bridge.AnswerAttempt{Action: bridge.ActionDecline, Answer: json.RawMessage(`"red"`), By: "slack:UANA"},
			bridge.RefusedWrongKind, "A decline can't carry an answer"},
		{"no identity", "r9", bridge.AnswerAttempt{Answer: json.RawMessage(`"red"`)},
			bridge.RefusedForbidden, `You can't answer this question: by: "" must be slack:<user>`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := c.a
			a.JobID, a.AttemptID = "job-r", c.id
			if a.QuestionID == "" {
				a.QuestionID = "q-1"
			}
			attempt(t, env, a)
			ev := refusalFor(t, events, c.id)
			if ev.Reason != c.reason || !strings.HasPrefix(ev.Text, c.textPrefix) || ev.To != a.By {
				t.Fatalf("refusal = reason %q text %q to %q; want %q %q", ev.Reason, ev.Text, ev.To, c.reason, c.textPrefix)
			}
		})
	}
	waitState(t, env, q, bridge.StatePending)

	// The named answerer settles it; a second answer is told who was first.
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-r", QuestionID: "q-1", AttemptID: "ok", Answer: json.RawMessage(`"Red "`), By: "slack:UANA", ByName: "ana"})
	out := outcome(t, ch)
	if out.Text != "The answer: red" {
		t.Fatalf("outcome = %+v", out)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-r", QuestionID: "q-1", AttemptID: "late", Answer: json.RawMessage(`"blue"`), By: "slack:UADMIN"})
	ev := refusalFor(t, events, "late")
	if ev.Reason != bridge.RefusedNotPending || !strings.HasPrefix(ev.Text, "This question was already answered by slack:UANA (ana) at ") {
		t.Fatalf("late refusal = %+v", ev)
	}
	// Someone with no role learns nothing of it: not who answered, not
	// when, not the task's version.
	for _, a := range []bridge.AnswerAttempt{
		{AttemptID: "late-stranger", Answer: json.RawMessage(`"blue"`), By: "slack:USTRANGER"},
		{AttemptID: "stale-stranger", TaskVersion: 7, Answer: json.RawMessage(`"blue"`), By: "slack:USTRANGER"},
	} {
		a.JobID, a.QuestionID = "job-r", "q-1"
		attempt(t, env, a)
		ev := refusalFor(t, events, a.AttemptID)
		if ev.Reason != bridge.RefusedForbidden || ev.Text != "You can't answer this question: slack:USTRANGER is not one of its answerers and has no operator, admin or owner role." {
			t.Fatalf("%s: refusal = %s %q", a.AttemptID, ev.Reason, ev.Text)
		}
	}
}

func TestApprovals(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.>")
	approval := func(job string) *bridge.Question {
		// A proposal id is its job's: each job proposes under its own.
		return &bridge.Question{Tenant: "acme", JobID: job, QuestionID: "q-a", TaskVersion: 1, Kind: bridge.KindApproval,
			Question: "May I refund order 1234?", Proposal: &bridge.Proposal{ID: "refund-1234-" + job, Action: "refund", Summary: []string{"Refund 40 EUR to ana@example.com"}}}
	}
	ch := ask(t, env, approval("job-ap"))
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-ap", QuestionID: "q-a", AttemptID: "ap-answer", Answer: json.RawMessage(`"approve"`), By: "slack:UOP"})
	if ev := refusalFor(t, events, "ap-answer"); ev.Reason != bridge.RefusedWrongKind ||
		ev.Text != "This is an approval: approve or deny it, or decline to answer." {
		t.Fatalf("an answer to an approval: %+v", ev)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-ap", QuestionID: "q-a", AttemptID: "ap-ok", Action: bridge.ActionApprove, By: "slack:UOP"})
	if out := outcome(t, ch); out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: approved" || string(out.Answer) != `"approved"` {
		t.Fatalf("approved: %+v", out)
	}

	ch = ask(t, env, approval("job-dn"))
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-dn", QuestionID: "q-a", AttemptID: "dn", Action: bridge.ActionDeny, Comment: "too risky", By: "slack:UOP"})
	if out := outcome(t, ch); out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: denied. Reason: too risky." ||
		string(out.Answer) != `"denied"` || out.Comment != "too risky" {
		t.Fatalf("denied: %+v", out)
	}
}

// TestOneRuntimePerNATS checks two runtimes with their own databases do
// not work on one NATS at once: the second waits for the first's lease and
// gives up while it is renewed; once the first stops, the second (or any
// database) starts at once.
func TestOneRuntimePerNATS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n, err := bridge.ConnectNATS(ctx, bridge.NATSOptions{Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	open := func() *store.Store {
		st, err := store.Open(ctx, filepath.Join(t.TempDir(), "askbridge.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	run := func(st *store.Store) (*runtime.Runtime, context.CancelFunc, <-chan error) {
		rt, err := runtime.New(runtime.Options{NATS: n, Store: st, Roles: roles, LeaseWait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- rt.Run(rctx) }()
		return rt, cancel, done
	}
	first, stopFirst, firstDone := run(open())
	select {
	case <-first.Ready():
	case err := <-firstDone:
		t.Fatalf("first runtime: %v", err)
	}
	_, stopSecond, secondDone := run(open())
	defer stopSecond()
	select {
	case err := <-secondDone:
		if !errors.Is(err, runtime.ErrOtherRuntime) || !strings.Contains(err.Error(), "one runtime per NATS") {
			t.Fatalf("second runtime: %v; want ErrOtherRuntime", err)
		}
	case <-time.After(testenv.Patience):
		t.Fatal("the second runtime ran beside the first")
	}
	// The first stops cleanly and lets its lease go: another database's
	// runtime starts at once.
	stopFirst()
	if err := <-firstDone; err != nil {
		t.Fatalf("first runtime: %v", err)
	}
	third, stopThird, thirdDone := run(open())
	defer stopThird()
	select {
	case <-third.Ready():
	case err := <-thirdDone:
		t.Fatalf("a runtime after the first stopped: %v", err)
	case <-time.After(testenv.Patience):
		t.Fatal("a runtime after the first stopped did not start")
	}
}
