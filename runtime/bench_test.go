package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// BenchmarkAnswerPath measures answers decided per second through the
// durable path: an attempt published to JetStream (fsync on every write),
// decided by the runtime in SQLite (synchronous=FULL, group commit), and
// the resume published back through the outbox. Questions are asked
// before the timer starts.
func BenchmarkAnswerPath(b *testing.B) {
	env := testenv.Start(b, testenv.Options{Roles: roles, SyncAlways: os.Getenv("BENCH_SYNC") != "0", Served: true})
	ctx := context.Background()
	nc := env.NATS.Conn
	var resumed atomic.Int64
	sub, err := nc.Subscribe("ask.v1.resume.bench.>", func(*nats.Msg) { resumed.Add(1) })
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()

	for i := range b.N {
		q := &bridge.Question{Tenant: "bench", JobID: fmt.Sprintf("job-%d", i), QuestionID: "q", TaskVersion: 1,
			Question: "Which colour?", Choices: []string{"red", "blue"}}
		if err := env.Agent.Publish(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	testenv.CheckFor(b, 5*time.Minute, 20*time.Millisecond, func() error {
		n, err := env.Store.CountByState(ctx)
		if err != nil || n[bridge.StatePending] != int64(b.N) {
			return fmt.Errorf("%d of %d asked, %v", n[bridge.StatePending], b.N, err)
		}
		return nil
	})

	js := env.NATS.JS
	b.ResetTimer()
	start := time.Now()
	futures := make([]jetstream.PubAckFuture, 0, b.N)
	for i := range b.N {
		a := bridge.AnswerAttempt{Tenant: "bench", JobID: fmt.Sprintf("job-%d", i), QuestionID: "q", TaskVersion: 1,
			AttemptID: fmt.Sprintf("b-%d", i), Answer: json.RawMessage(`"blue"`), By: "slack:UOP"}
		data, _ := json.Marshal(a)
		f, err := js.PublishAsync(bridge.AnswerSubject(a.Tenant, a.JobID), data, jetstream.WithMsgID("attempt-"+a.AttemptID))
		if err != nil {
			b.Fatal(err)
		}
		futures = append(futures, f)
		if len(futures) == 2000 {
			waitAcks(b, futures)
			futures = futures[:0]
		}
	}
	waitAcks(b, futures)
	testenv.CheckFor(b, 5*time.Minute, time.Millisecond, func() error {
		if n := resumed.Load(); n != int64(b.N) {
			return fmt.Errorf("%d of %d resumed", n, b.N)
		}
		return nil
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "answers/s")
}

func waitAcks(b *testing.B, futures []jetstream.PubAckFuture) {
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			b.Fatal(err)
		}
	}
}
