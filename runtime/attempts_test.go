package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestConcurrentAnswersResumeOnce(t *testing.T) {
	t.Parallel()
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
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
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
	// The metric is counted after the batch commits, and the relay may
	// publish the batch's events before that.
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := counters(t, env, "askbridge_answer_attempts_total"); got != "via=cli 0; via=console 0; via=discord 0; via=other 0; via=slack 50" {
			return fmt.Errorf("askbridge_answer_attempts_total: %s", got)
		}
		return nil
	})
}

func TestSameAttemptTwiceIsOneAttempt(t *testing.T) {
	t.Parallel()
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

// TestFrontEndToldOnceCommitted checks the runtime tells an attempt's
// bridge.HeaderDecidedTo subject once the decision is committed: the
// question already reads answered, or the refusal is on record, when the
// word arrives. A copy of the attempt in the same or a later batch is
// told too.
func TestFrontEndToldOnceCommitted(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestAttemptWithoutIDAfterTheAnswersStreamIsMadeAnew checks that an
// attempt sent without an attempt_id (named by the runtime from its place
// in the stream) is decided after the answers stream was deleted and made
// anew, whose sequence numbers start again: it is not ignored as the
// attempt that had its number before.
func TestAttemptWithoutIDAfterTheAnswersStreamIsMadeAnew(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	for name, body := range map[string]string{
		"without attempt_id": `{"question_id":"q-1","answer":"red","by":"slack:UOP"}`,
		"with attempt_id":    `{"question_id":"q-1","answer":"red","by":"slack:UOP","attempt_id":"slack-1.2"}`,
	} {
		t.Run(name, func(t *testing.T) {
			// The stream keeps the events it counts.
			env := testenv.Start(t, testenv.Options{Roles: roles, KeepEvents: true})
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
			testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
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
	t.Parallel()
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
