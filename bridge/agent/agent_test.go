package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
	"github.com/askbridge/askbridge/store/record"
)

func countPublishes(t *testing.T, nc *nats.Conn, subject string) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	sub, err := nc.Subscribe(subject, func(*nats.Msg) { n.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &n
}

func question(job string) *bridge.Question {
	return &bridge.Question{Tenant: "acme", JobID: job, QuestionID: "q-1", TaskVersion: 1,
		Question: "Which colour?", Choices: []string{"red", "blue"}}
}

// With no runtime to record it, Ask keeps publishing its question.
func TestAskRepublishesUntilRecorded(t *testing.T) {
	t.Parallel()
	n, err := bridge.ConnectNATS(context.Background(), bridge.NATSOptions{Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	published := countPublishes(t, n.Conn, bridge.QuestionSubject("acme", "job-lost"))
	ids := testenv.Published(t, n.Conn, bridge.QuestionSubject("acme", "job-lost"))
	c, err := agent.New(n.Conn)
	if err != nil {
		t.Fatal(err)
	}
	c.Republish = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 550*time.Millisecond)
	defer cancel()
	if _, err := c.Ask(ctx, question("job-lost")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ask without a runtime: %v", err)
	}
	if got := published.Load(); got < 3 {
		t.Fatalf("published %d times in 550ms, want a publish every 100ms", got)
	}
	// One Ask is one question: its publishes share one message id, so the
	// stream keeps one copy however often it publishes.
	if got := ids.Count(t); got != 1 {
		t.Fatalf("Ask published its question under %d message ids, want 1", got)
	}
}

// Once the runtime recorded the question, Ask stops publishing it.
func TestAskStopsRepublishingOnceRecorded(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: runtime.Roles{Operators: []string{"cli:kevin"}}})
	published := countPublishes(t, env.NATS.Conn, bridge.QuestionSubject("acme", "job-ok"))
	asked := countPublishes(t, env.NATS.Conn, bridge.EventSubject("acme", "job-ok"))
	c, err := agent.New(env.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	c.Republish = 50 * time.Millisecond
	done := make(chan *agent.Outcome, 1)
	go func() {
		out, err := c.Ask(context.Background(), question("job-ok"))
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	// Wait until it is recorded and announced (the agent learns it so),
	// then until it stops: ten republish periods go by without a publish.
	// (A machine may be too busy to tick for that long, but not for the
	// whole of testenv.Patience while the agent keeps publishing.)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if _, err := env.Store.Find(context.Background(), record.Key{Tenant: "acme", JobID: "job-ok", QuestionID: "q-1"}); err != nil {
			return err
		}
		if asked.Load() == 0 {
			return errors.New("recorded, not yet announced")
		}
		return nil
	})
	last, changed := published.Load(), time.Now()
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		now := time.Now()
		if n := published.Load(); n != last {
			last, changed = n, now
		}
		if quiet := changed.Add(10 * c.Republish); now.Before(quiet) {
			return fmt.Errorf("the question recorded, the agent still published it (%d times so far)", last)
		}
		return nil
	})
	if err := env.Attempt(context.Background(), bridge.AnswerAttempt{Tenant: "acme", JobID: "job-ok", QuestionID: "q-1",
		AttemptID: "a1", Answer: json.RawMessage(`"red"`), By: "cli:kevin"}); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-done:
		if out == nil || out.Text != "The answer: red" {
			t.Fatalf("outcome %+v", out)
		}
	case <-time.After(testenv.Patience):
		t.Fatal("no outcome")
	}
}

// Await follows a question asked again under the same id at a later task
// version: the superseded version's outcome is not the question's.
func TestAwaitFollowsTheLatestVersion(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: runtime.Roles{Operators: []string{"cli:kevin"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v1 := question("job-aw")
	if err := env.Agent.Publish(ctx, v1); err != nil {
		t.Fatal(err)
	}
	v2 := question("job-aw")
	v2.TaskVersion = 2
	if err := env.Agent.Publish(ctx, v2); err != nil {
		t.Fatal(err)
	}
	done := make(chan *agent.Outcome, 1)
	go func() {
		out, err := env.Agent.Await(ctx, "acme", "job-aw", "q-1")
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if n := testenv.StreamCount(t, env.NATS, bridge.StreamResumes, bridge.ResumeSubject("acme", "job-aw")); n != 1 {
			return errors.New("version 1 not superseded yet")
		}
		return nil
	})
	select {
	case out := <-done:
		t.Fatalf("Await returned %+v while version 2 waits", out)
	case <-time.After(300 * time.Millisecond):
	}
	if err := env.Attempt(ctx, bridge.AnswerAttempt{Tenant: "acme", JobID: "job-aw", QuestionID: "q-1", TaskVersion: 2,
		AttemptID: "a-1", Answer: json.RawMessage(`"blue"`), By: "cli:kevin"}); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-done:
		if out == nil || out.TaskVersion != 2 || out.Text != "The answer: blue" {
			t.Fatalf("Await = %+v, want version 2's answer", out)
		}
	case <-ctx.Done():
		t.Fatal("Await did not return version 2's outcome")
	}
	// A question superseded by a version asked under another id: that
	// outcome is the question's.
	out, err := env.Agent.Await(ctx, "acme", "job-aw", "q-1")
	if err != nil || out.TaskVersion != 2 {
		t.Fatalf("Await again = %+v, %v", out, err)
	}
	v3 := question("job-aw2")
	if err := env.Agent.Publish(ctx, v3); err != nil {
		t.Fatal(err)
	}
	other := question("job-aw2")
	other.QuestionID, other.TaskVersion = "q-2", 2
	if err := env.Agent.Publish(ctx, other); err != nil {
		t.Fatal(err)
	}
	out, err = env.Agent.Await(ctx, "acme", "job-aw2", "q-1")
	if err != nil || out.Text != "The question was superseded by task version 2." {
		t.Fatalf("Await of a question superseded under another id = %+v, %v", out, err)
	}
}

// Await of a question answered at one version and asked again under the
// same id at a later one waits for the later version's outcome: the
// earlier answer is not the answer to the question the job now asks.
func TestAwaitSkipsTheAnswerOfAnEarlierVersion(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: runtime.Roles{Operators: []string{"cli:kevin"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v1 := question("job-av")
	v1.Choices = []string{"red", "blue"}
	answer := func(version int64, id, choice string) {
		t.Helper()
		if err := env.Attempt(ctx, bridge.AnswerAttempt{Tenant: "acme", JobID: "job-av", QuestionID: "q-1", TaskVersion: version,
			AttemptID: id, Answer: json.RawMessage(`"` + choice + `"`), By: "cli:kevin"}); err != nil {
			t.Fatal(err)
		}
	}
	stored := func(version int64, state string) {
		t.Helper()
		testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
			rec, err := env.Store.Find(ctx, record.Key{Tenant: "acme", JobID: "job-av", QuestionID: "q-1", TaskVersion: version})
			if err != nil || rec.State != state {
				return fmt.Errorf("version %d not %s yet: %v", version, state, err)
			}
			return nil
		})
	}
	if err := env.Agent.Publish(ctx, v1); err != nil {
		t.Fatal(err)
	}
	stored(1, bridge.StatePending)
	answer(1, "av-1", "red")
	stored(1, bridge.StateAnswered)
	v2 := question("job-av")
	v2.TaskVersion, v2.Choices = 2, []string{"red", "blue"}
	if err := env.Agent.Publish(ctx, v2); err != nil {
		t.Fatal(err)
	}
	stored(2, bridge.StatePending)
	done := make(chan *agent.Outcome, 1)
	go func() {
		out, err := env.Agent.Await(ctx, "acme", "job-av", "q-1")
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	select {
	case out := <-done:
		t.Fatalf("Await returned %+v while version 2 waits", out)
	case <-time.After(500 * time.Millisecond):
	}
	answer(2, "av-2", "blue")
	select {
	case out := <-done:
		if out == nil || out.TaskVersion != 2 || out.Text != "The answer: blue" {
			t.Fatalf("Await = %+v, want version 2's answer", out)
		}
	case <-ctx.Done():
		t.Fatal("Await did not return version 2's outcome")
	}
}

// Two questions whose ids run together the same way are two questions:
// job-1/q and job/1-q.
func TestQuestionsWithRunTogetherIDsAreBothAsked(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, b := question("job-1"), question("job")
	a.QuestionID, b.QuestionID = "q", "1-q"
	for _, q := range []*bridge.Question{a, b} {
		if err := env.Agent.Publish(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, q := range []*bridge.Question{a, b} {
			if _, err := env.Store.Find(ctx, record.Key{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion}); err != nil {
				return fmt.Errorf("%s/%s: %v", q.JobID, q.QuestionID, err)
			}
		}
		return nil
	})
}

// Await of a question answered at one version and asked again under the
// same id at a later one, while no runtime runs (it is restarting), does
// not take the earlier version's answer for the question: it waits until
// a runtime can say which version is the latest, and returns that one's.
func TestAwaitWithoutARuntimeWaitsForTheLatestVersion(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: runtime.Roles{Operators: []string{"cli:kevin"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stored := func(env *testenv.Env, version int64, state string) {
		t.Helper()
		testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
			rec, err := env.Store.Find(ctx, record.Key{Tenant: "acme", JobID: "job-nr", QuestionID: "q-1", TaskVersion: version})
			if err != nil || rec.State != state {
				return fmt.Errorf("version %d not %s yet: %v", version, state, err)
			}
			return nil
		})
	}
	v1 := question("job-nr")
	if err := env.Agent.Publish(ctx, v1); err != nil {
		t.Fatal(err)
	}
	stored(env, 1, bridge.StatePending)
	if err := env.Attempt(ctx, bridge.AnswerAttempt{Tenant: "acme", JobID: "job-nr", QuestionID: "q-1", TaskVersion: 1,
		AttemptID: "nr-1", Answer: json.RawMessage(`"red"`), By: "cli:kevin"}); err != nil {
		t.Fatal(err)
	}
	stored(env, 1, bridge.StateAnswered)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if n := testenv.StreamCount(t, env.NATS, bridge.StreamResumes, bridge.ResumeSubject("acme", "job-nr")); n != 1 {
			return errors.New("version 1's answer not on the resume stream yet")
		}
		return nil
	})
	v2 := question("job-nr")
	v2.TaskVersion = 2
	if err := env.Agent.Publish(ctx, v2); err != nil {
		t.Fatal(err)
	}
	stored(env, 2, bridge.StatePending)
	dir := env.Dir
	env.Stop()

	// NATS alone on the same data: the resume stream, and no runtime.
	n, err := bridge.ConnectNATS(ctx, bridge.NATSOptions{Listen: "127.0.0.1:0", StoreDir: filepath.Join(dir, "nats")})
	if err != nil {
		t.Fatal(err)
	}
	c, err := agent.New(n.Conn)
	if err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithTimeout(ctx, time.Second)
	out, err := c.Await(actx, "acme", "job-nr", "q-1")
	acancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Await with no runtime = %+v, %v; want it to wait, not take version 1's answer", out, err)
	}
	n.Close()

	env = testenv.Start(t, testenv.Options{Dir: dir, Roles: runtime.Roles{Operators: []string{"cli:kevin"}}})
	done := make(chan *agent.Outcome, 1)
	go func() {
		out, err := env.Agent.Await(ctx, "acme", "job-nr", "q-1")
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	if err := env.Attempt(ctx, bridge.AnswerAttempt{Tenant: "acme", JobID: "job-nr", QuestionID: "q-1", TaskVersion: 2,
		AttemptID: "nr-2", Answer: json.RawMessage(`"blue"`), By: "cli:kevin"}); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-done:
		if out == nil || out.TaskVersion != 2 || out.Text != "The answer: blue" {
			t.Fatalf("Await = %+v, want version 2's answer", out)
		}
	case <-ctx.Done():
		t.Fatal("Await did not return version 2's outcome")
	}
}

// Await finds an outcome whose live publish never reached it: it reads
// the outcomes published so far again while it waits, not only at its
// start and after a reconnect.
func TestAwaitFindsAnOutcomeItsSubscriptionMissed(t *testing.T) {
	t.Parallel()
	n, err := bridge.ConnectNATS(context.Background(), bridge.NATSOptions{Listen: "127.0.0.1:0", StoreDir: filepath.Join(t.TempDir(), "nats")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	// The runtime, played: the question at version 1, and its outcome once
	// it is recorded, which is never published where Await listens.
	testenv.FakeShow(t, n.Conn, map[string]string{"q-1": bridge.StatePending})
	var recorded atomic.Bool
	var reads atomic.Int64
	sub, err := n.Conn.Subscribe(bridge.APIResumes, func(m *nats.Msg) {
		reads.Add(1)
		reply := bridge.ResumesReply{Resumes: []bridge.Resume{}}
		if recorded.Load() {
			reply.Resumes = append(reply.Resumes, bridge.Resume{Tenant: "acme", JobID: "job-lost", QuestionID: "q-1", TaskVersion: 1,
				Outcome: bridge.OutcomeAnswered, Text: "The answer: red"})
		}
		data, _ := json.Marshal(reply)
		_ = m.Respond(data)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	c, err := agent.New(n.Conn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
	defer cancel()
	type result struct {
		out *agent.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := c.Await(ctx, "acme", "job-lost", "q-1")
		done <- result{out, err}
	}()
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if reads.Load() == 0 {
			return errors.New("Await has not read the outcomes published so far")
		}
		return nil
	})
	recorded.Store(true)
	r := <-done
	if r.err != nil || r.out.Outcome != bridge.OutcomeAnswered || r.out.Text != "The answer: red" {
		t.Fatalf("Await = %+v, %v; want the answer recorded after its first read", r.out, r.err)
	}
	if n := reads.Load(); n < 2 {
		t.Fatalf("%d reads of the outcomes, want another after the first", n)
	}
}
