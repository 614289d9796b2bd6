package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
	"github.com/askbridge/askbridge/store"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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
	testenv.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		reply := show(t, env, "slack:UADMIN", q.JobID, q.QuestionID)
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
	data, _ := json.Marshal(bridge.ShowRequest{As: as, Tenant: "acme", JobID: job, QuestionID: qid})
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
	case <-time.After(20 * time.Second):
		t.Fatal("timed out waiting for the outcome")
	}
	return nil
}

// refusalFor waits for the refused event of one attempt.
func refusalFor(t *testing.T, events *testenv.Recorder, attemptID string) bridge.Event {
	t.Helper()
	var found bridge.Event
	testenv.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
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

func TestConcurrentAnswersResumeOnce(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-c")
	ch := ask(t, env, choiceQuestion("job-c"))
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			attempt(t, env, bridge.AnswerAttempt{JobID: "job-c", QuestionID: "q-1", AttemptID: fmt.Sprintf("c%d", i),
				Answer: json.RawMessage(`"blue"`), By: "slack:UOP"})
		}()
	}
	wg.Wait()
	outcome(t, ch)
	// Every attempt is decided: one answer and 49 refusals.
	testenv.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		refused := strings.Count(events.EventTypes(), bridge.EventRefused)
		if refused != 49 {
			return fmt.Errorf("%d refusals", refused)
		}
		return nil
	})
	if n := testenv.StreamCount(t, env.NATS, bridge.StreamResumes, "ask.v1.resume.acme.job-c"); n != 1 {
		t.Fatalf("%d resumes, want 1", n)
	}
	if got := strings.Count(events.EventTypes(), bridge.EventAnswered); got != 1 {
		t.Fatalf("%d answered events: %s", got, events.EventTypes())
	}
	if got := counters(t, env, "askbridge_answer_attempts_total"); got != "via=cli 0; via=console 0; via=discord 0; via=other 0; via=slack 50" {
		t.Fatalf("askbridge_answer_attempts_total: %s", got)
	}
}

func TestSameAttemptTwiceIsOneAttempt(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-d")
	ch := ask(t, env, choiceQuestion("job-d"))
	a := bridge.AnswerAttempt{Tenant: "acme", JobID: "job-d", QuestionID: "q-1", AttemptID: "same", Answer: json.RawMessage(`"red"`), By: "slack:UOP"}
	// Published twice with different message ids, as a retried interaction
	// arriving after JetStream's duplicate window would be.
	for i := range 2 {
		if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.AnswerSubject("acme", "job-d"), fmt.Sprintf("x-%d", i), a); err != nil {
			t.Fatal(err)
		}
	}
	outcome(t, ch)
	// A later marker attempt proves both copies were processed.
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-d", QuestionID: "q-1", AttemptID: "marker", Answer: json.RawMessage(`"red"`), By: "slack:UOP"})
	refusalFor(t, events, "marker")
	if types := events.EventTypes(); types != "asked,answered,refused" {
		t.Fatalf("events = %s", types)
	}
}

func TestInvalidQuestionResumesInvalid(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	q := choiceQuestion("job-i")
	q.Fields = []bridge.Field{{Name: "Bad Name", Kind: "colour"}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := env.Agent.Ask(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if out.Outcome != bridge.OutcomeInvalid || !strings.Contains(out.Text, "choices and fields: give one or the other, not both") ||
		!strings.Contains(out.Text, `fields[0].name: "Bad Name" must be`) {
		t.Fatalf("outcome = %+v", out)
	}
}

// TestOversizedQuestionIsRefusedToItsAsker checks a question too large
// to be read at all (over eight times the size limit, still under NATS's
// payload limit) is refused back naming its question_id and task_version:
// Ask, which waits for that question's outcome, returns the refusal
// instead of waiting until its context ends.
func TestOversizedQuestionIsRefusedToItsAsker(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	q := choiceQuestion("job-big")
	q.TaskVersion = 3
	q.Question = strings.Repeat("x", 8*bridge.MaxQuestionBytes+1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := env.Agent.Ask(ctx, q)
	if err != nil {
		t.Fatalf("Ask of an oversized question: %v", err)
	}
	if out.Outcome != bridge.OutcomeInvalid || out.QuestionID != q.QuestionID || out.TaskVersion != 3 ||
		!strings.Contains(out.Text, "question: is") || !strings.Contains(out.Text, "bytes; at most") {
		t.Fatalf("outcome = %+v", out)
	}
}

func TestNewTaskVersionSupersedes(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-v")
	old := choiceQuestion("job-v")
	ch := ask(t, env, old)
	newer := choiceQuestion("job-v")
	newer.QuestionID, newer.TaskVersion = "q-2", 2
	ch2 := ask(t, env, newer)
	out := outcome(t, ch)
	if out.Outcome != bridge.OutcomeCanceled || out.Text != "The question was superseded by task version 2." {
		t.Fatalf("outcome = %+v", out)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-v", QuestionID: "q-1", TaskVersion: 1, AttemptID: "s1", Answer: json.RawMessage(`"red"`), By: "slack:UOP"})
	ev := refusalFor(t, events, "s1")
	if ev.Reason != bridge.RefusedStale || !strings.Contains(ev.Text, "task version 1") {
		t.Fatalf("refusal = %+v", ev)
	}

	// A cancel with a newer version supersedes q-2 as well.
	if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.CancelSubject("acme", "job-v"), "cancel-1",
		bridge.Cancel{Tenant: "acme", JobID: "job-v", TaskVersion: 3}); err != nil {
		t.Fatal(err)
	}
	if out := outcome(t, ch2); out.Text != "The question was superseded by task version 3." {
		t.Fatalf("outcome = %+v", out)
	}
}

func TestApprovals(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.>")
	approval := func(job string) *bridge.Question {
		return &bridge.Question{Tenant: "acme", JobID: job, QuestionID: "q-a", TaskVersion: 1, Kind: bridge.KindApproval,
			Question: "May I refund order 1234?", Proposal: &bridge.Proposal{ID: "refund-1234", Summary: []string{"Refund 40 EUR to ana@example.com"}}}
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

// TestFrontEndToldOnceCommitted checks the runtime tells an attempt's
// bridge.HeaderDecidedTo subject once the decision is committed: the
// question already reads answered, or the refusal is on record, when the
// word arrives. A copy of the attempt in the same or a later batch is
// told too.
func TestFrontEndToldOnceCommitted(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	ch := ask(t, env, choiceQuestion("job-n"))
	nc := env.Conn(t)
	inbox := nc.NewInbox()
	told, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	sendTo := func(id, msgID, to string) {
		t.Helper()
		data, _ := json.Marshal(bridge.AnswerAttempt{Tenant: "acme", JobID: "job-n", QuestionID: "q-1", AttemptID: id, Answer: json.RawMessage(`"red"`), By: "slack:UOP"})
		msg := &nats.Msg{Subject: bridge.AnswerSubject("acme", "job-n"), Data: data, Header: nats.Header{bridge.HeaderDecidedTo: []string{to}}}
		if _, err := env.NATS.JS.PublishMsg(context.Background(), msg, jetstream.WithMsgID(msgID)); err != nil {
			t.Fatal(err)
		}
	}
	send := func(id, msgID string) {
		t.Helper()
		sendTo(id, msgID, inbox)
	}
	next := func() string {
		t.Helper()
		m, err := told.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("not told: %v", err)
		}
		return string(m.Data)
	}

	send("n1", "m1")
	if got := next(); got != "n1" {
		t.Fatalf("told %q, want n1", got)
	}
	if st := show(t, env, "slack:UADMIN", "job-n", "q-1").Question.State; st != bridge.StateAnswered {
		t.Fatalf("told before the decision was committed: state %s", st)
	}
	if out := outcome(t, ch); out.Outcome != bridge.OutcomeAnswered {
		t.Fatalf("outcome = %+v", out)
	}
	send("n2", "m2") // refused: already answered
	if got := next(); got != "n2" {
		t.Fatalf("told %q, want n2", got)
	}
	send("n1", "m3") // the first attempt again, as a retry past the duplicate window
	if got := next(); got != "n1" {
		t.Fatalf("told %q, want n1 again", got)
	}

	// A subject outside _INBOX. is never published to: the header comes
	// from whoever published the attempt, not from the runtime.
	evil, err := nc.SubscribeSync("evil.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	sendTo("n3", "m4", "evil.told")
	send("n4", "m5") // decided after n3
	if got := next(); got != "n4" {
		t.Fatalf("told %q, want n4", got)
	}
	if m, err := evil.NextMsg(100 * time.Millisecond); err == nil {
		t.Fatalf("the runtime published %q to %s", m.Data, m.Subject)
	}
}

// TestMalformedAttemptsRefusedToTheirJob checks an attempt whose body
// names another job, or has a value of the wrong type, is refused on the
// job of the subject it came on, naming what was wrong, and holds up
// nothing behind it.
func TestMalformedAttemptsRefusedToTheirJob(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.>")
	q := choiceQuestion("job-m")
	ch := ask(t, env, q)
	subject := bridge.AnswerSubject("acme", "job-m")
	cases := []struct {
		id, body, reason, text string
	}{
		{"bad-tenant", `{"tenant":"ev il","job_id":"job-m","question_id":"q-1","answer":"red","by":"slack:UOP"}`,
			bridge.RefusedUnknown, `tenant and job_id: "ev il"/"job-m" do not match the subject's acme/job-m.`},
		{"other-tenant", `{"tenant":"globex","job_id":"job-m","question_id":"q-1","answer":"red","by":"slack:UOP"}`,
			bridge.RefusedUnknown, `tenant and job_id: "globex"/"job-m" do not match the subject's acme/job-m.`},
		{"version-text", `{"question_id":"q-1","task_version":"1","answer":"red","by":"slack:UOP"}`,
			bridge.RefusedInvalid, "The answer could not be read: task_version: must be a whole number, not text."},
		{"reply-to-number", `{"question_id":"q-1","answer":"red","by":"slack:UOP","reply_to":{"channel_id":1234}}`,
			bridge.RefusedInvalid, "The answer could not be read: reply_to: must be text, not a number."},
		{"roles-text", `{"question_id":"q-1","answer":"red","by":"slack:UOP","roles":"operator"}`,
			bridge.RefusedInvalid, "The answer could not be read: roles: must be a list of text, not text."},
	}
	for _, c := range cases {
		body := strings.Replace(c.body, "{", `{"attempt_id":"`+c.id+`",`, 1)
		if _, err := env.NATS.JS.Publish(context.Background(), subject, []byte(body), jetstream.WithMsgID(c.id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		ev := refusalFor(t, events, c.id)
		if ev.Tenant != "acme" || ev.JobID != "job-m" || ev.Reason != c.reason || ev.Text != c.text {
			t.Errorf("%s: refused on %s/%s, %s: %q; want acme/job-m, %s: %q", c.id, ev.Tenant, ev.JobID, ev.Reason, ev.Text, c.reason, c.text)
		}
	}
	for _, ev := range events.Events() {
		if ev.Tenant != "acme" {
			t.Errorf("event %s on tenant %s, from an attempt on acme's subject", ev.Type, ev.Tenant)
		}
	}
	waitState(t, env, q, bridge.StatePending)
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-m", QuestionID: "q-1", AttemptID: "good", Answer: json.RawMessage(`"blue"`), By: "slack:UOP"})
	if out := outcome(t, ch); out.Text != "The answer: blue" {
		t.Fatalf("outcome = %+v", out)
	}
}

// TestListPagesReachEveryVisibleQuestion follows ask.v1.api.list's next
// cursor, with questions the identity may not see between the ones it
// may, for every page size: each visible question is listed once.
func TestListPagesReachEveryVisibleQuestion(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	var want []string
	for i := range 7 {
		q := choiceQuestion(fmt.Sprintf("job-pg%d", i))
		q.Answerers = []string{"slack:UPAGER"}
		if i == 2 || i == 5 {
			q.Answerers = []string{"slack:UOTHER"}
		} else {
			want = append(want, q.JobID)
		}
		ask(t, env, q)
		waitState(t, env, q, bridge.StatePending)
	}
	for limit := 1; limit <= 8; limit++ {
		var got []string
		after := ""
		for page := 0; ; page++ {
			if page > 10 {
				t.Fatalf("limit %d: more than 10 pages", limit)
			}
			req, _ := json.Marshal(bridge.ListRequest{As: "slack:UPAGER", Tenant: "acme", Limit: limit, After: after})
			msg, err := env.NATS.Conn.Request(bridge.APIList, req, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var reply bridge.ListReply
			if err := json.Unmarshal(msg.Data, &reply); err != nil || reply.Error != "" {
				t.Fatalf("list: %v %s", err, reply.Error)
			}
			if len(reply.Questions) > limit {
				t.Fatalf("limit %d: a page of %d", limit, len(reply.Questions))
			}
			for _, v := range reply.Questions {
				got = append(got, v.JobID)
			}
			if after = reply.Next; after == "" {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: following next listed %v, want %v", limit, got, want)
		}
	}
}

// TestCancelRightAfterAskingEndsTheQuestion checks a cancel published
// right after its question ends it, although questions and cancels reach
// the runtime through separate consumers; a version bump right after a
// question supersedes it.
func TestCancelRightAfterAskingEndsTheQuestion(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	resumes := env.Record(t, bridge.StreamResumes, "ask.v1.resume.acme.>")
	ctx := context.Background()
	const n = 40
	want := map[string]string{}
	for i := range n {
		q := choiceQuestion(fmt.Sprintf("job-cx%d", i))
		if err := env.Agent.Publish(ctx, q); err != nil {
			t.Fatal(err)
		}
		c := bridge.Cancel{Tenant: "acme", JobID: q.JobID, Reason: "not needed"}
		want[q.JobID] = "The question was cancelled: not needed."
		if i%2 == 1 {
			c = bridge.Cancel{Tenant: "acme", JobID: q.JobID, TaskVersion: 2}
			want[q.JobID] = "The question was superseded by task version 2."
		}
		if err := bridge.Publish(ctx, env.NATS.JS, bridge.CancelSubject("acme", q.JobID), "cx-"+q.JobID, c); err != nil {
			t.Fatal(err)
		}
	}
	testenv.CheckFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		if got := len(resumes.Resumes()); got < n {
			return fmt.Errorf("%d of %d questions ended", got, n)
		}
		return nil
	})
	for _, res := range resumes.Resumes() {
		if res.Outcome != bridge.OutcomeCanceled || res.Text != want[res.JobID] {
			t.Errorf("%s: outcome %s %q, want cancelled %q", res.JobID, res.Outcome, res.Text, want[res.JobID])
		}
	}
}

func TestListRefusesAnUnknownState(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	for _, c := range []struct{ state, err string }{
		{"open", `state: must be pending, answered, declined, timed_out, cancelled, superseded, failed or all, not "open"`},
		{"answered", ""},
		{"all", ""},
	} {
		req, _ := json.Marshal(bridge.ListRequest{As: "slack:UADMIN", State: c.state})
		msg, err := env.NATS.Conn.Request(bridge.APIList, req, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var reply bridge.ListReply
		if err := json.Unmarshal(msg.Data, &reply); err != nil || reply.Error != c.err {
			t.Errorf("state %q: error %q (%v), want %q", c.state, reply.Error, err, c.err)
		}
	}
}

// TestQuestionOnABadJobIDIsRefusedBack checks a question published on a
// subject NATS takes but whose job id askbridge does not (too long, not
// ASCII) is refused back on the matching resume subject, naming the id.
func TestQuestionOnABadJobIDIsRefusedBack(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	resumes := env.Record(t, bridge.StreamResumes, "ask.v1.resume.acme.>")
	long := strings.Repeat("j", 65)
	for _, job := range []string{long, "jöb"} {
		q := choiceQuestion(job)
		body, _ := json.Marshal(q)
		if _, err := env.NATS.JS.Publish(context.Background(), bridge.PrefixQuestion+".acme."+job, body); err != nil {
			t.Fatal(err)
		}
	}
	testenv.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if n := len(resumes.Resumes()); n != 2 {
			return fmt.Errorf("%d resumes, want 2", n)
		}
		return nil
	})
	for _, res := range resumes.Resumes() {
		want := fmt.Sprintf("The question was refused: job_id: %q must be 1 to 64 letters, digits, '-' or '_'.", res.JobID)
		if res.Outcome != bridge.OutcomeInvalid || res.Text != want || res.QuestionID != "q-1" || (res.JobID != long && res.JobID != "jöb") {
			t.Errorf("resume %+v\nwant text %q", res, want)
		}
	}
}

// TestCardOfAVersionlessQuestionIsStaleOnceReasked checks a question
// asked without a task version (version 0) and asked again at version 1:
// an attempt from the version-0 card (exact_version) is refused as stale,
// while one that names no version (the CLI) answers the latest.
func TestCardOfAVersionlessQuestionIsStaleOnceReasked(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-v0")
	resumes := env.Record(t, bridge.StreamResumes, bridge.ResumeSubject("acme", "job-v0"))
	v0 := choiceQuestion("job-v0")
	v0.TaskVersion = 0
	ask(t, env, v0)
	waitState(t, env, v0, bridge.StatePending)
	v1 := choiceQuestion("job-v0")
	ch1 := ask(t, env, v1)
	testenv.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		for _, res := range resumes.Resumes() {
			if res.TaskVersion == 0 && res.Text == "The question was superseded by task version 1." {
				return nil
			}
		}
		return fmt.Errorf("version 0 not superseded: %+v", resumes.Resumes())
	})
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-v0", QuestionID: "q-1", ExactVersion: true, AttemptID: "old-card",
		Answer: json.RawMessage(`"red"`), By: "slack:UOP"})
	if ev := refusalFor(t, events, "old-card"); ev.Reason != bridge.RefusedStale ||
		ev.Text != "This answer is stale: it belongs to task version 0, and the task is now at version 1." {
		t.Fatalf("old card's refusal = %+v", ev)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-v0", QuestionID: "q-1", AttemptID: "cli", Answer: json.RawMessage(`"blue"`), By: "slack:UOP"})
	if out := outcome(t, ch1); out.TaskVersion != 1 || out.Text != "The answer: blue" {
		t.Fatalf("version 1 outcome %+v", out)
	}
}

// TestOneRuntimePerNATS checks two runtimes with their own databases do
// not work on one NATS at once: the second waits for the first's lease and
// gives up while it is renewed; once the first stops, the second (or any
// database) starts at once.
func TestOneRuntimePerNATS(t *testing.T) {
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
	case <-time.After(10 * time.Second):
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
	case <-time.After(5 * time.Second):
		t.Fatal("a runtime after the first stopped did not start")
	}
}

// TestShowByIDOnlyWeighsWhatTheAskerMaySee checks a question id used in
// two tenants: an admin of one tenant gets that tenant's question, a
// stranger learns nothing (not that the id is used twice), and someone
// who may see both is asked to name the job.
func TestShowByIDOnlyWeighsWhatTheAskerMaySee(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: runtime.Roles{Admins: []string{"acme/slack:UACME", "slack:UGLOBAL"}}})
	a := choiceQuestion("job-1")
	g := choiceQuestion("job-1")
	g.Tenant = "globex"
	for _, q := range []*bridge.Question{a, g} {
		if err := env.Agent.Publish(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	show := func(t *testing.T, env *testenv.Env, as, _, qid string) bridge.ShowReply {
		t.Helper()
		data, _ := json.Marshal(bridge.ShowRequest{As: as, QuestionID: qid}) // no tenant, no job
		msg, err := env.NATS.Conn.Request(bridge.APIShow, data, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var reply bridge.ShowReply
		if err := json.Unmarshal(msg.Data, &reply); err != nil {
			t.Fatal(err)
		}
		return reply
	}
	testenv.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if r := show(t, env, "", "", "q-1"); !strings.Contains(r.Error, "more than one job") {
			return fmt.Errorf("both not stored yet: %+v", r)
		}
		return nil
	})
	if r := show(t, env, "slack:UACME", "", "q-1"); r.Question == nil || r.Question.Tenant != "acme" {
		t.Errorf("acme's admin: %+v", r)
	}
	if r := show(t, env, "slack:USTRANGER", "", "q-1"); r.Question != nil || r.Error != "There is no question q-1 that you can see." {
		t.Errorf("a stranger: %+v", r)
	}
	if r := show(t, env, "slack:UGLOBAL", "", "q-1"); r.Question != nil || !strings.Contains(r.Error, "used in more than one job you can see") {
		t.Errorf("an admin of both: %+v", r)
	}
}

// TestBumpThenAskKeepsTheNewQuestion checks an agent that asks, bumps the
// task version and at once asks at the new version: the old question is
// superseded and the new one waits, although the new question can reach
// the store before the bump does.
func TestBumpThenAskKeepsTheNewQuestion(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	resumes := env.Record(t, bridge.StreamResumes, "ask.v1.resume.acme.>")
	ctx := context.Background()
	const n = 20
	for i := range n {
		job := fmt.Sprintf("job-bump%d", i)
		if err := env.Agent.Publish(ctx, choiceQuestion(job)); err != nil {
			t.Fatal(err)
		}
		if err := bridge.Publish(ctx, env.NATS.JS, bridge.CancelSubject("acme", job), "bump-"+job, bridge.Cancel{Tenant: "acme", JobID: job, TaskVersion: 2}); err != nil {
			t.Fatal(err)
		}
		q2 := choiceQuestion(job)
		q2.QuestionID, q2.TaskVersion = "q-2", 2
		if err := env.Agent.Publish(ctx, q2); err != nil {
			t.Fatal(err)
		}
	}
	testenv.CheckFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		if got := len(resumes.Resumes()); got < n {
			return fmt.Errorf("%d of %d first questions ended", got, n)
		}
		return nil
	})
	for _, res := range resumes.Resumes() {
		if res.QuestionID != "q-1" || res.Text != "The question was superseded by task version 2." {
			t.Errorf("%s/%s ended: %s %q", res.JobID, res.QuestionID, res.Outcome, res.Text)
		}
	}
	for i := range n {
		if r := show(t, env, "slack:UADMIN", fmt.Sprintf("job-bump%d", i), "q-2"); r.Question == nil || r.Question.State != bridge.StatePending {
			t.Errorf("job-bump%d q-2: %+v", i, r)
		}
	}
}

// TestAPIRequestErrorsNameTheProblem checks that a list or show request
// the runtime cannot read is answered with what is wrong with it, in the
// request's own field names, and that an empty list request is the
// default one.
func TestAPIRequestErrorsNameTheProblem(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	ask(t, env, choiceQuestion("job-apierr"))
	for _, c := range []struct{ subject, body, err string }{
		{bridge.APIList, `{"limit":"50"}`, "list: limit: must be a whole number, not text"},
		{bridge.APIList, `{"after":5}`, "list: after: must be text, not a number"},
		{bridge.APIList, `{"as":5}`, "list: as: must be text, not a number"},
		{bridge.APIList, `[]`, "list: the request is not a JSON object: expected an object, not a list"},
		{bridge.APIList, `{"state":"pending"`, "list: the request is not a JSON object: unexpected end of JSON input (at byte 18)"},
		{bridge.APIList, ``, ""},
		{bridge.APIShow, `{"question_id":"q-1","task_version":"1"}`, "show: task_version: must be a whole number, not text"},
		{bridge.APIShow, `{"question_id":"q-1"} x`, "show: the request is not a JSON object: invalid character 'x' after top-level value (at byte 23)"},
		{bridge.APIShow, ``, "question_id: is required"},
	} {
		msg, err := env.NATS.Conn.Request(c.subject, []byte(c.body), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var reply struct {
			Questions []bridge.QuestionView `json:"questions"`
			Error     string                `json:"error"`
		}
		if err := json.Unmarshal(msg.Data, &reply); err != nil {
			t.Fatal(err)
		}
		if reply.Error != c.err {
			t.Errorf("%s %s: error %q, want %q", c.subject, c.body, reply.Error, c.err)
		}
		if c.subject == bridge.APIList && c.err == "" && len(reply.Questions) != 1 {
			t.Errorf("%s %s: %d questions, want the pending one", c.subject, c.body, len(reply.Questions))
		}
	}
}

// TestInvalidQuestionAfterTheQuestionsStreamIsMadeAnew checks that the
// refusal of an invalid question reaches its agent after the questions
// stream was deleted and made anew (as docs/contract.md tells operators
// to do to make it a work queue), whose sequence numbers start again:
// the refusal of the first invalid question since is not taken for the
// refusal of the first invalid question before.
func TestInvalidQuestionAfterTheQuestionsStreamIsMadeAnew(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	invalid := func(job string) *bridge.Question {
		q := choiceQuestion(job)
		q.OnTimeout = "retry"
		return q
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := env.Agent.Ask(ctx, invalid("job-inv1")); err != nil || out.Outcome != bridge.OutcomeInvalid {
		t.Fatalf("first: %+v, %v", out, err)
	}
	if err := env.NATS.JS.DeleteStream(ctx, bridge.StreamQuestions); err != nil {
		t.Fatal(err)
	}
	dir := env.Dir
	env.Stop()
	env = testenv.Start(t, testenv.Options{Dir: dir, Roles: roles})
	if out, err := env.Agent.Ask(ctx, invalid("job-inv2")); err != nil || out.Outcome != bridge.OutcomeInvalid ||
		!strings.Contains(out.Text, `on_timeout: must be continue or fail, not "retry"`) {
		t.Fatalf("second: %+v, %v", out, err)
	}
}

// TestAttemptWithoutIDAfterTheAnswersStreamIsMadeAnew checks that an
// attempt sent without an attempt_id (named by the runtime from its place
// in the stream) is decided after the answers stream was deleted and made
// anew, whose sequence numbers start again: it is not ignored as the
// attempt that had its number before.
func TestAttemptWithoutIDAfterTheAnswersStreamIsMadeAnew(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	noID := func(job string) {
		t.Helper()
		body := `{"question_id":"q-1","answer":"red","by":"slack:UOP"}`
		if _, err := env.NATS.JS.Publish(context.Background(), bridge.AnswerSubject("acme", job), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	ch := ask(t, env, choiceQuestion("job-noid1"))
	noID("job-noid1")
	if out := outcome(t, ch); out.Text != "The answer: red" {
		t.Fatalf("first: %+v", out)
	}
	if err := env.NATS.JS.DeleteStream(context.Background(), bridge.StreamAnswers); err != nil {
		t.Fatal(err)
	}
	dir := env.Dir
	env.Stop()
	env = testenv.Start(t, testenv.Options{Dir: dir, Roles: roles})
	ch = ask(t, env, choiceQuestion("job-noid2"))
	noID("job-noid2")
	if out := outcome(t, ch); out.Text != "The answer: red" {
		t.Fatalf("second: %+v", out)
	}
}

// TestAttemptHandedOutAgainIsNotDecidedAgain checks an attempt that a
// runtime decided and stopped before acknowledging (killed) is handed out
// again, from the start of the stream, and seen to be decided, not decided
// again: its answerer would be told "This question was already answered
// by" themselves. An attempt without attempt_id is named by its place in
// the stream, which a redelivery keeps.
func TestAttemptHandedOutAgainIsNotDecidedAgain(t *testing.T) {
	for name, body := range map[string]string{
		"without attempt_id": `{"question_id":"q-1","answer":"red","by":"slack:UOP"}`,
		"with attempt_id":    `{"question_id":"q-1","answer":"red","by":"slack:UOP","attempt_id":"slack-1.2"}`,
	} {
		t.Run(name, func(t *testing.T) {
			env := testenv.Start(t, testenv.Options{Roles: roles})
			answer := func(env *testenv.Env, job string) {
				t.Helper()
				if _, err := env.NATS.JS.Publish(context.Background(), bridge.AnswerSubject("acme", job), []byte(body)); err != nil {
					t.Fatal(err)
				}
			}
			ch := ask(t, env, choiceQuestion("job-first"))
			answer(env, "job-first")
			if out := outcome(t, ch); out.Text != "The answer: red" {
				t.Fatalf("first: %+v", out)
			}
			firstEvents := bridge.EventSubject("acme", "job-first")
			// The resume came back; the answered event goes to another stream and
			// may land after it: counted once both events (asked, answered) are in.
			var before uint64
			testenv.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
				if before = testenv.StreamCount(t, env.NATS, bridge.StreamEvents, firstEvents); before < 2 {
					return fmt.Errorf("%d events of the question, want asked and answered", before)
				}
				return nil
			})
			dir := env.Dir
			env.Stop()

			// Its acknowledgement lost: the runtime's consumer hands the stream
			// out again from its start.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			n, err := bridge.ConnectNATS(ctx, bridge.NATSOptions{Listen: "127.0.0.1:0", StoreDir: filepath.Join(dir, "nats")})
			if err != nil {
				t.Fatal(err)
			}
			s, err := n.JS.Stream(ctx, bridge.StreamAnswers)
			if err != nil {
				t.Fatal(err)
			}
			for name := range s.ConsumerNames(ctx).Name() {
				if err := s.DeleteConsumer(ctx, name); err != nil {
					t.Fatal(err)
				}
			}
			n.Close()

			env = testenv.Start(t, testenv.Options{Dir: dir, Roles: roles})
			// An attempt after it in the stream (in another job, so the same
			// attempt_id is another attempt): once it is decided, so is the
			// first one again, and anything its decision sent is out before.
			ch = ask(t, env, choiceQuestion("job-after"))
			answer(env, "job-after")
			if out := outcome(t, ch); out.Text != "The answer: red" {
				t.Fatalf("after: %+v", out)
			}
			if after := testenv.StreamCount(t, env.NATS, bridge.StreamEvents, firstEvents); after != before {
				t.Fatalf("events of the question answered first: %d, then %d after its attempt was handed out again (decided twice)", before, after)
			}
		})
	}
}

// TestSameAttemptIDInAnotherJobIsAnotherAttempt checks attempt ids are
// told apart by job and tenant: a front-end's id reused in another job (a
// hand-written "a-1") answers that job's question instead of being
// ignored as a double click, while the same id twice in one job is still
// one attempt (TestSameAttemptTwiceIsOneAttempt).
func TestSameAttemptIDInAnotherJobIsAnotherAttempt(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Roles: roles})
	other := choiceQuestion("job-id1")
	other.Tenant = "beta"
	qs := []*bridge.Question{choiceQuestion("job-id1"), choiceQuestion("job-id2"), other}
	var outs []<-chan *bridge.Resume
	for _, q := range qs {
		outs = append(outs, ask(t, env, q))
	}
	for i, q := range qs {
		a := bridge.AnswerAttempt{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, AttemptID: "a-1", Answer: json.RawMessage(`"blue"`), By: "cli:kevin"}
		// Message ids of their own: JetStream would drop a second
		// "attempt-a-1" within its duplicate window.
		if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.AnswerSubject(q.Tenant, q.JobID), fmt.Sprintf("m-%d", i), a); err != nil {
			t.Fatal(err)
		}
	}
	for i, ch := range outs {
		if out := outcome(t, ch); out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: blue" {
			t.Errorf("%s/%s: %+v", qs[i].Tenant, qs[i].JobID, out)
		}
	}
}
