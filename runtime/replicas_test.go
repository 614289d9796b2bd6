package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// replicaStores are the shared stores the replica tests run on: SQLite
// shared by the runtimes of one process (testenv.Options.Shared), and the
// JetStream store that replicas in several processes share.
var replicaStores = []testenv.Options{
	{Store: testenv.StoreSQLite, Shared: true},
	{Store: testenv.StoreJetStream},
}

// eachReplicaStore runs test on each shared store, with roles.
func eachReplicaStore(t *testing.T, test func(t *testing.T, o testenv.Options)) {
	for _, o := range replicaStores {
		t.Run(o.Store, func(t *testing.T) {
			t.Parallel()
			o.Roles = roles
			test(t, o)
		})
	}
}

// TestAskedOnOneReplicaAnsweredOnAnother checks that a question one
// replica recorded is answered through another once the first has gone:
// the agent reads exactly one resume, and no replica held a lease that
// would have kept the second from starting.
func TestAskedOnOneReplicaAnsweredOnAnother(t *testing.T) {
	t.Parallel()
	eachReplicaStore(t, func(t *testing.T, o testenv.Options) {
		env := testenv.Start(t, o)
		q := choiceQuestion("job-two")
		ch := ask(t, env, q)
		env.StartReplica(t)
		env.StopRuntime()
		attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: 1, AttemptID: "two-1",
			Answer: json.RawMessage(`"blue"`), By: "slack:UOP"})
		if out := outcome(t, ch); out.Outcome != bridge.OutcomeAnswered || string(out.Answer) != `"blue"` {
			t.Fatalf("outcome = %+v", out)
		}
		waitResumes(t, env, q.JobID, 1)
		if _, err := env.NATS.JS.KeyValue(context.Background(), runtime.RuntimeBucket); !errors.Is(err, jetstream.ErrBucketNotFound) {
			t.Fatalf("a runtime on a shared store made the lease bucket %s: %v", runtime.RuntimeBucket, err)
		}
	})
}

// TestReplicasDecideEachQuestionOnce checks two replicas consuming the same
// consumers at once: questions asked and answered twice concurrently,
// with different answers, each get one outcome and one resume, although
// both replicas' relays publish what either decided.
func TestReplicasDecideEachQuestionOnce(t *testing.T) {
	t.Parallel()
	eachReplicaStore(t, func(t *testing.T, o testenv.Options) {
		env := testenv.Start(t, o)
		env.StartReplica(t)
		const n = 12
		chs := make([]<-chan *bridge.Resume, n)
		for i := range n {
			chs[i] = ask(t, env, choiceQuestion(fmt.Sprintf("job-r%d", i)))
		}
		var wg sync.WaitGroup
		for i := range n {
			for j, answer := range []string{"red", "blue"} {
				wg.Go(func() {
					a := bridge.AnswerAttempt{Tenant: "acme", JobID: fmt.Sprintf("job-r%d", i), QuestionID: "q-1", TaskVersion: 1,
						AttemptID: fmt.Sprintf("r%d-%d", i, j), Answer: json.RawMessage(`"` + answer + `"`), By: "slack:UOP"}
					if err := env.Attempt(context.Background(), a); err != nil {
						t.Errorf("attempt: %v", err)
					}
				})
			}
		}
		wg.Wait()
		for i := range n {
			out := outcome(t, chs[i])
			if out.Outcome != bridge.OutcomeAnswered || (string(out.Answer) != `"red"` && string(out.Answer) != `"blue"`) {
				t.Fatalf("job-r%d: outcome = %+v", i, out)
			}
		}
		for i := range n {
			waitResumes(t, env, fmt.Sprintf("job-r%d", i), 1)
		}
	})
}

// TestStepFiresOnTheReplicaLeft checks a question's timeout, scheduled
// by the replica that recorded it, fires once on another after that one
// has stopped.
func TestStepFiresOnTheReplicaLeft(t *testing.T) {
	t.Parallel()
	eachReplicaStore(t, func(t *testing.T, o testenv.Options) {
		clock := testenv.NewClock()
		o.Clock = clock
		env := testenv.Start(t, o)
		q := choiceQuestion("job-left")
		q.Timeout = "1m"
		ch := ask(t, env, q)
		env.StartReplica(t)
		env.StopRuntime()
		clock.Advance(time.Minute + time.Second)
		if out := outcome(t, ch); out.Outcome != bridge.OutcomeTimedOut {
			t.Fatalf("outcome = %+v", out)
		}
		waitResumes(t, env, q.JobID, 1)
	})
}

// waitResumes waits until the resumes stream holds want resumes of job
// and every replica's relay has published all it will (the outbox is
// empty), then checks it holds exactly that many: both relays publish
// each row, under one message id.
func waitResumes(t *testing.T, env *testenv.Env, job string, want uint64) {
	t.Helper()
	subject := bridge.ResumeSubject("acme", job)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := testenv.StreamCount(t, env.NATS, bridge.StreamResumes, subject); got < want {
			return fmt.Errorf("%d resumes of %s, want %d", got, job, want)
		}
		if n, err := env.RecordStore.OutboxBacklogAfter(context.Background(), 0); err != nil || n > 0 {
			return fmt.Errorf("outbox: %d rows unsent, %v", n, err)
		}
		return nil
	})
	if got := testenv.StreamCount(t, env.NATS, bridge.StreamResumes, subject); got != want {
		t.Fatalf("%d resumes of %s, want %d", got, job, want)
	}
}

// TestOneRelayAmongReplicas checks that replicas sharing the JetStream
// record take turns at the relay: each resume is published once, not once
// per replica, and after the replica publishing stops the other publishes
// what is decided next.
func TestOneRelayAmongReplicas(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Store: testenv.StoreJetStream, Roles: roles})
	env.StartReplica(t)
	var publishes atomic.Int64
	sub, err := env.NATS.Conn.Subscribe(bridge.PrefixResume+".acme.>", func(*nats.Msg) { publishes.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	askAndAnswer := func(jobs ...string) {
		t.Helper()
		for _, job := range jobs {
			ch := ask(t, env, choiceQuestion(job))
			attempt(t, env, bridge.AnswerAttempt{JobID: job, QuestionID: "q-1", TaskVersion: 1, AttemptID: job + "-a",
				Answer: json.RawMessage(`"red"`), By: "slack:UOP"})
			if out := outcome(t, ch); out.Outcome != bridge.OutcomeAnswered {
				t.Fatalf("%s: outcome = %+v", job, out)
			}
			waitResumes(t, env, job, 1)
		}
	}
	askAndAnswer("job-o1", "job-o2", "job-o3")
	env.StopRuntime()
	askAndAnswer("job-o4", "job-o5")
	if err := env.NATS.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := publishes.Load(); n != 5 {
		t.Fatalf("%d resume publishes for 5 resumes; want each published once", n)
	}
}
