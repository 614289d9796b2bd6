package jsstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv/poll"
	"github.com/askbridge/askbridge/store/record"
)

// replicaServer starts a JetStream server for replicas to share; open
// opens one more replica on it, on a connection of its own.
func replicaServer(t *testing.T) (open func() *Store) {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(ns.Shutdown)
	return func() *Store {
		t.Helper()
		nc, err := nats.Connect(ns.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		s, err := Open(context.Background(), nc, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// TestReplicasFireEachDueStepOnce: three replicas run the ladder's loop at
// once over the same due steps (read what is due, fire each as a round):
// every step is taken by exactly one of them, and each round's nudge is
// written once.
func TestReplicasFireEachDueStepOnce(t *testing.T) {
	t.Parallel()
	open := replicaServer(t)
	replicas := []*Store{open(), open(), open()}
	ctx := context.Background()
	const questions = 20
	for i := range questions {
		mustAsk(t, replicas[i%3], newQ("job-1", fmt.Sprint("q-", i), 1))
	}
	now := t0.Add(2 * time.Hour)
	for i, r := range replicas {
		if due, err := r.DueSteps(ctx, now, 100); err != nil || len(due) != questions {
			t.Fatalf("replica %d: due steps = %d, %v; want every question's reminder", i, len(due), err)
		}
	}
	var mu sync.Mutex
	fired := map[int64]int{}
	var wg sync.WaitGroup
	for _, r := range replicas {
		wg.Go(func() {
			for {
				due, err := r.DueSteps(ctx, now, 100)
				if err != nil {
					t.Error(err)
					return
				}
				if len(due) == 0 {
					return
				}
				for _, d := range due {
					err := r.FireRound(ctx, []record.RoundStep{{DueStep: d, Reason: "reminded"}}, now,
						[]record.Message{{Subject: "ask.v1.event.acme.job-1", Data: fmt.Appendf(nil, "nudge %d", d.Question)}})
					switch {
					case err == nil:
						mu.Lock()
						fired[d.Question]++
						mu.Unlock()
					case !errors.Is(err, record.ErrStepGone):
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if len(fired) != questions {
		t.Fatalf("%d questions' reminders fired, want %d", len(fired), questions)
	}
	for q, n := range fired {
		if n != 1 {
			t.Errorf("question %d's reminder fired %d times", q, n)
		}
	}
	nudges := map[string]int{}
	for _, m := range outboxOf(t, replicas[0]) {
		nudges[m]++
	}
	for q := range fired {
		if n := nudges[fmt.Sprintf("ask.v1.event.acme.job-1 nudge %d", q)]; n != 1 {
			t.Errorf("question %d's nudge is in the outbox %d times", q, n)
		}
	}
	for i, r := range replicas {
		next, ok, err := r.NextDue(ctx)
		if err != nil || !ok || !next.Equal(t0.Add(4*time.Hour)) {
			t.Errorf("replica %d: next due after the rounds = %v %v, %v; want the timeouts", i, next, ok, err)
		}
		queue, err := r.JobQueue(ctx, "acme", "job-1")
		if err != nil || len(queue) != questions || queue[0].Staleness != 1 {
			t.Errorf("replica %d: queue after the rounds = %d questions, %v", i, len(queue), err)
		}
	}
}

// TestDueStepWhileNoReplicaRuns: a step written while no replica watched
// is due to a replica opened later, and a replica's watch follows what
// another replica writes.
func TestDueStepWhileNoReplicaRuns(t *testing.T) {
	t.Parallel()
	open := replicaServer(t)
	ctx := context.Background()
	a := open()
	mustAsk(t, a, newQ("job-1", "q-1", 1))
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.NextDue(ctx); err == nil {
		t.Fatalf("a closed store's NextDue answered")
	}
	b := open()
	due, err := b.DueSteps(ctx, t0.Add(time.Hour), 100)
	if err != nil || len(due) != 1 || due[0].Target != bridge.TargetAnswerers || !due[0].Due.Equal(t0.Add(time.Hour)) {
		t.Fatalf("due steps of a replica opened after = %+v, %v", due, err)
	}
	// b watches now; c's writes are in b's next read at once.
	c := open()
	later := newQ("job-2", "q-1", 1)
	for i := range later.Steps {
		later.Steps[i].Due = later.Steps[i].Due.Add(-30 * time.Minute)
	}
	mustAsk(t, c, later)
	if next, ok, err := b.NextDue(ctx); err != nil || !ok || !next.Equal(t0.Add(30*time.Minute)) {
		t.Fatalf("next due after another replica's ask = %v %v, %v; want t0+30m", next, ok, err)
	}
	if _, err := c.Cancel(ctx, record.JobCancel{Tenant: "acme", JobID: "job-2", At: t0}); err != nil {
		t.Fatal(err)
	}
	if next, ok, err := b.NextDue(ctx); err != nil || !ok || !next.Equal(t0.Add(time.Hour)) {
		t.Fatalf("next due after another replica's cancel = %v %v, %v; want t0+1h", next, ok, err)
	}
}

// TestMarkSentOnAnotherReplica: rows published by one replica's relay
// may be marked sent by another's, which never read them; a mark through
// a revision past other keys deletes only outbox rows.
func TestMarkSentOnAnotherReplica(t *testing.T) {
	t.Parallel()
	open := replicaServer(t)
	ctx := context.Background()
	a, b := open(), open()
	res := mustAsk(t, a, newQ("job-1", "q-1", 1))
	if err := a.Enqueue(ctx, []record.Message{{Subject: "ask.v1.event.acme.job-1", Data: []byte("more")}}); err != nil {
		t.Fatal(err)
	}
	rows, err := b.Unsent(ctx, 0, 10, time.Time{})
	if err != nil || len(rows) != 2 {
		t.Fatalf("unsent = %+v, %v", rows, err)
	}
	_, docRev, _, err := a.get(ctx, keyQuestion(res.Record.ID))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.MarkSentThrough(ctx, max(rows[1].ID, int64(docRev)), t0); err != nil {
		t.Fatalf("MarkSent on the other replica: %v", err)
	}
	if rows, err := b.Unsent(ctx, 0, 10, time.Time{}); err != nil || len(rows) != 0 {
		t.Fatalf("unsent after marking = %+v, %v", rows, err)
	}
	if err := b.MarkSentThrough(ctx, rows[1].ID, t0); err != nil {
		t.Fatalf("MarkSent again: %v", err)
	}
	if r, err := b.Get(ctx, res.Record.ID); err != nil || r.State != bridge.StatePending {
		t.Fatalf("the question after marking its revision sent = %+v, %v", r, err)
	}
}

// TestDueWatchAfterServerRestart: after the server a replica watches the
// due steps on restarts (a NATS node killed and back), the replica's next
// read finds a step written since within seconds, not once its client
// notices the watch's consumer gone.
func TestDueWatchAfterServerRestart(t *testing.T) {
	t.Parallel()
	opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true}
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	nc, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx := context.Background()
	s, err := Open(ctx, nc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	mustAsk(t, s, newQ("job-1", "q-1", 1))
	if next, ok, err := s.NextDue(ctx); err != nil || !ok || !next.Equal(t0.Add(time.Hour)) {
		t.Fatalf("next due = %v %v, %v; want t0+1h", next, ok, err)
	}
	again := *opts
	again.Port = ns.Addr().(*net.TCPAddr).Port
	ns.Shutdown()
	ns.WaitForShutdown()
	if ns, err = server.NewServer(&again); err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start again")
	}
	early := newQ("job-2", "q-1", 1)
	early.Steps[0].Due = t0.Add(10 * time.Minute)
	poll.CheckFor(t, poll.Patience, 20*time.Millisecond, func() error {
		_, err := s.AskMany(ctx, []record.NewQuestion{early})
		return err
	})
	wait, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	if next, ok, err := s.NextDue(wait); err != nil || !ok || !next.Equal(t0.Add(10*time.Minute)) {
		t.Fatalf("next due after the restart = %v %v, %v; want t0+10m", next, ok, err)
	}
}
