package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

var migrateRoles = runtime.Roles{Operators: []string{"slack:UOP"}}

// TestMigrateIntoJetStream moves a single node's record, with history, a
// pending question and its ladder still to come, into JetStream with
// askbridge migrate; askbridge on the JetStream record then sends the
// pending question's reminder once and takes its answer.
func TestMigrateIntoJetStream(t *testing.T) {
	ctx := context.Background()
	clock := testenv.NewClock()
	single := testenv.Start(t, testenv.Options{Roles: migrateRoles, Clock: clock})
	done := migrateQuestion("job-done")
	waiting := migrateQuestion("job-wait")
	doneOutcome := askAndWait(t, single, done)
	askAndWait(t, single, waiting)
	answerMigrated(t, single, done, "red")
	if out := receive(t, doneOutcome); out.Outcome != bridge.OutcomeAnswered {
		t.Fatalf("before the move: %+v", out)
	}
	single.Stop()

	cluster := testenv.StartExternalNATS(t)
	t.Setenv("ASK_DATA_DIR", single.Dir)
	t.Setenv("ASK_NATS_URL", cluster.URL())
	var stdout, stderr bytes.Buffer
	if code := run([]string{"migrate", "--to", "jetstream"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("migrate exit %d: %s", code, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "Moved 2 questions (1 pending), 2 jobs, 0 proposals") {
		t.Errorf("migrate said %q", stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"migrate", "--to", "jetstream"}, &stdout, &stderr); code != exitError ||
		!strings.Contains(stderr.String(), "already holds questions") {
		t.Errorf("a second migrate: exit %d, %q; want 1 naming the record already there", code, stderr.String())
	}

	moved := testenv.Start(t, testenv.Options{Roles: migrateRoles, Clock: clock, Store: testenv.StoreJetStream, NATSURL: cluster.URL()})
	events := moved.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-wait")
	history := show(t, moved, done)
	if history.Question == nil || history.Question.State != bridge.StateAnswered || len(history.Audit) != 2 {
		t.Errorf("the answered question after the move: %+v", history)
	}
	clock.AdvanceUntil(t, time.Minute, testenv.Patience, func() error {
		if n := strings.Count(events.EventTypes(), "reminded"); n == 0 {
			return errors.New("no reminder yet")
		}
		return nil
	})
	waitingOutcome := awaitOutcome(ctx, t, moved, waiting)
	answerMigrated(t, moved, waiting, "blue")
	out := receive(t, waitingOutcome)
	if out.Outcome != bridge.OutcomeAnswered || string(out.Answer) != `"blue"` {
		t.Fatalf("the pending question answered after the move: %+v", out)
	}
	// Each step of the ladder fired once (the clock may have passed more
	// than the first), then the answer.
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		evs := events.Events()
		if len(evs) < 2 || evs[0].Type != "reminded" || evs[len(evs)-1].Type != "answered" {
			return fmt.Errorf("events after the move = %s, want reminders then the answer", events.EventTypes())
		}
		steps := map[string]bool{}
		for _, ev := range evs[:len(evs)-1] {
			if steps[ev.Step] {
				return fmt.Errorf("step %s fired twice: %s", ev.Step, events.EventTypes())
			}
			steps[ev.Step] = true
		}
		return nil
	})
}

func migrateQuestion(job string) *bridge.Question {
	return &bridge.Question{Tenant: "acme", JobID: job, QuestionID: "q-1", TaskVersion: 1,
		Question: "Which colour?", Choices: []string{"red", "blue"}, Timeout: "2h", Answerers: []string{"slack:UOP"}}
}

// askAndWait publishes q, waits until it is pending, and returns its
// outcome to come.
func askAndWait(t *testing.T, env *testenv.Env, q *bridge.Question) <-chan *bridge.Resume {
	t.Helper()
	ctx := context.Background()
	if err := env.Agent.Publish(ctx, q); err != nil {
		t.Fatal(err)
	}
	ch := awaitOutcome(ctx, t, env, q)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if r := show(t, env, q); r.Question == nil || r.Question.State != bridge.StatePending {
			return fmt.Errorf("not pending: %+v", r)
		}
		return nil
	})
	return ch
}

func awaitOutcome(ctx context.Context, t *testing.T, env *testenv.Env, q *bridge.Question) <-chan *bridge.Resume {
	ch := make(chan *bridge.Resume, 1)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	go func() {
		defer cancel()
		out, err := env.Agent.Await(ctx, q.Tenant, q.JobID, q.QuestionID)
		if err != nil {
			close(ch)
			return
		}
		ch <- out
	}()
	return ch
}

func receive(t *testing.T, ch <-chan *bridge.Resume) *bridge.Resume {
	t.Helper()
	out, ok := <-ch
	if !ok {
		t.Fatal("no outcome")
	}
	return out
}

func answerMigrated(t *testing.T, env *testenv.Env, q *bridge.Question, answer string) {
	t.Helper()
	a := bridge.AnswerAttempt{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion,
		AttemptID: "m-" + q.JobID, Answer: json.RawMessage(`"` + answer + `"`), By: "slack:UOP"}
	if err := env.Attempt(context.Background(), a); err != nil {
		t.Fatal(err)
	}
}

func show(t *testing.T, env *testenv.Env, q *bridge.Question) bridge.ShowReply {
	t.Helper()
	data, _ := json.Marshal(bridge.ShowRequest{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, As: "slack:UOP"})
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
