package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestFirstAcknowledgedAnswerWins checks that of two clicks on one question,
// the one the stream acknowledged first decides it, although a replica
// took it and died before deciding it while another replica holds the
// later one: the later click waits, and once the first comes back (as it
// does after the consumer's ack wait) the first answers and the later one
// is refused.
func TestFirstAcknowledgedAnswerWins(t *testing.T) {
	t.Parallel()
	for _, o := range replicaStores {
		t.Run(o.Store, func(t *testing.T) {
			t.Parallel()
			logs := &testenv.LockedBuffer{}
			o.Roles = roles
			o.Logger = slog.New(slog.NewTextHandler(logs, nil))
			env := testenv.Start(t, o)
			ctx := context.Background()
			q := choiceQuestion("job-order")
			ch := ask(t, env, q)
			events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-order")
			env.StopRuntime()

			// The replica that takes "red" and dies holding it.
			attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: 1, AttemptID: "first-red",
				Answer: json.RawMessage(`"red"`), By: "slack:UOP"})
			held := takeAttempt(ctx, t, env)
			if !strings.Contains(string(held.Data()), "first-red") {
				t.Fatalf("the dead replica took %s", held.Data())
			}
			attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: 1, AttemptID: "then-blue",
				Answer: json.RawMessage(`"blue"`), By: "slack:UOP"})
			env.StartReplica(t)

			testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
				if s := show(t, env, "slack:UADMIN", q.JobID, q.QuestionID); s.Question == nil || s.Question.State != bridge.StatePending {
					t.Fatalf("while the first click is held, the later one decided the question: %+v", s.Question)
				}
				if !strings.Contains(logs.String(), "waits for an earlier one") {
					return fmt.Errorf("the later click has not been taken yet; log:\n%s", logs)
				}
				return nil
			})
			// The dead replica's message comes back to the living one.
			if err := held.Nak(); err != nil {
				t.Fatalf("hand back the first click: %v", err)
			}
			if out := outcome(t, ch); out.Outcome != bridge.OutcomeAnswered || string(out.Answer) != `"red"` {
				t.Fatalf("outcome = %+v, want the first acknowledged click, red", out)
			}
			if ev := refusalFor(t, events, "then-blue"); ev.Reason != bridge.RefusedNotPending {
				t.Fatalf("the later click: %+v", ev)
			}
		})
	}
}

// takeAttempt takes the next attempt off the runtime's answers consumer as
// a replica would, and does not acknowledge it.
func takeAttempt(ctx context.Context, t *testing.T, env *testenv.Env) jetstream.Msg {
	t.Helper()
	cons, err := env.NATS.JS.Consumer(ctx, bridge.StreamAnswers, "runtime-answers")
	if err != nil {
		t.Fatalf("answers consumer: %v", err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(testenv.Patience))
	if err != nil {
		t.Fatalf("take an attempt: %v", err)
	}
	return msg
}

// TestAttemptWaitsForAnEarlierOneOnlySoLong checks that an earlier attempt
// held undecided past the consumer's ack wait (by a consumer that neither
// acknowledges nor dies) does not hold its question for ever: the later
// attempt is handed back some 30 times, half a second apart, and then
// decided.
func TestAttemptWaitsForAnEarlierOneOnlySoLong(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles, Store: testenv.StoreSQLite, Shared: true, AttemptWaits: 3})
	ctx := context.Background()
	q := choiceQuestion("job-stuck")
	ch := ask(t, env, q)
	env.StopRuntime()
	attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: 1, AttemptID: "stuck-red",
		Answer: json.RawMessage(`"red"`), By: "slack:UOP"})
	held := takeAttempt(ctx, t, env)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // keeps the first attempt from ever coming back
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				_ = held.InProgress()
			}
		}
	}()
	attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: 1, AttemptID: "then-blue",
		Answer: json.RawMessage(`"blue"`), By: "slack:UOP"})
	env.StartReplica(t)
	if out := outcome(t, ch); out.Outcome != bridge.OutcomeAnswered || string(out.Answer) != `"blue"` {
		t.Fatalf("outcome = %+v, want blue once the wait for the stuck red ran out", out)
	}
}
