package jsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// twoReplicas opens two stores on one server, each on a connection of its
// own: two askbridge replicas sharing the record. The record is in memory,
// for speed: these tests are about the races, not the disk.
func twoReplicas(t *testing.T) (*Store, *Store) {
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
	var out [2]*Store
	for i := range out {
		nc, err := nats.Connect(ns.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		if out[i], err = Open(context.Background(), nc, Options{Memory: true}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { out[i].Close() })
	}
	return out[0], out[1]
}

// atOnce runs a and b at the same moment and waits for both.
func atOnce(a, b func()) {
	var start, done sync.WaitGroup
	start.Add(1)
	done.Add(2)
	for _, f := range []func(){a, b} {
		go func() {
			defer done.Done()
			start.Wait()
			f()
		}()
	}
	start.Done()
	done.Wait()
}

// TestTwoReplicasAskOneQuestion: two replicas recording the same question
// at once record it once: one is Asked, the other Duplicate, and there is
// one question, one announcement.
func TestTwoReplicasAskOneQuestion(t *testing.T) {
	t.Parallel()
	a, b := twoReplicas(t)
	ctx := context.Background()
	const rounds = 20
	for i := range rounds {
		nq := newQ("job-1", fmt.Sprint("q-", i), 1)
		var ra, rb []*record.AskResult
		var ea, eb error
		atOnce(func() { ra, ea = a.AskMany(ctx, []record.NewQuestion{nq}) },
			func() { rb, eb = b.AskMany(ctx, []record.NewQuestion{nq}) })
		if ea != nil || eb != nil {
			t.Fatalf("round %d: %v, %v", i, ea, eb)
		}
		statuses := []record.AskStatus{ra[0].Status, rb[0].Status}
		slices.Sort(statuses)
		if statuses[0] != record.Asked || statuses[1] != record.Duplicate {
			t.Fatalf("round %d: statuses %v, want one Asked and one Duplicate", i, statuses)
		}
		asked := ra[0]
		if asked.Status != record.Asked {
			asked = rb[0]
		}
		if r, err := b.Find(ctx, nq.Key); err != nil || r.ID != asked.Record.ID {
			t.Fatalf("round %d: find = %+v, %v; want question %d", i, r, err, asked.Record.ID)
		}
	}
	qs, err := a.JobQuestions(ctx, "acme", "job-1")
	if err != nil || len(qs) != rounds {
		t.Fatalf("job-1 has %d questions (%v), want %d", len(qs), err, rounds)
	}
	if out := outboxOf(t, a); len(out) != rounds {
		t.Fatalf("%d announcements, want %d: %q", len(out), rounds, out)
	}
	if n, err := b.CountByState(ctx); err != nil || n[bridge.StatePending] != rounds {
		t.Fatalf("counts = %v, %v", n, err)
	}
	checkIndexes(t, a)
}

// TestVersionBumpRacingAnAsk: a bump to version 2 and an ask at version 1,
// on two replicas at once: either the bump came first (the ask is Stale)
// or the ask did (the bump supersedes it). No question is left pending
// below the job's version.
func TestVersionBumpRacingAnAsk(t *testing.T) {
	t.Parallel()
	a, b := twoReplicas(t)
	ctx := context.Background()
	orders := map[string]int{}
	for i := range 20 {
		job := fmt.Sprint("job-", i)
		mustAsk(t, a, newQ(job, "q-first", 1))
		var res []*record.AskResult
		var ended []record.Record
		var eAsk, eBump error
		atOnce(func() { res, eAsk = a.AskMany(ctx, []record.NewQuestion{newQ(job, "q-late", 1)}) },
			func() {
				ended, eBump = b.Cancel(ctx, record.JobCancel{Tenant: "acme", JobID: job, NewVersion: 2, At: t0})
			})
		if eAsk != nil || eBump != nil {
			t.Fatalf("%s: %v, %v", job, eAsk, eBump)
		}
		var endedIDs []string
		for _, r := range ended {
			endedIDs = append(endedIDs, r.QuestionID)
		}
		slices.Sort(endedIDs)
		switch res[0].Status {
		case record.Stale:
			orders["bump first"]++
			if !slices.Equal(endedIDs, []string{"q-first"}) || res[0].JobVersion != 2 {
				t.Fatalf("%s: the ask was Stale at version %d; the bump ended %q", job, res[0].JobVersion, endedIDs)
			}
		case record.Asked:
			orders["ask first"]++
			if !slices.Equal(endedIDs, []string{"q-first", "q-late"}) {
				t.Fatalf("%s: the ask came first, but the bump ended %q", job, endedIDs)
			}
		default:
			t.Fatalf("%s: ask = %+v", job, res[0])
		}
		pending, err := a.List(ctx, record.ListFilter{Tenant: "acme", JobID: job, State: bridge.StatePending})
		if err != nil || len(pending) != 0 {
			t.Fatalf("%s: pending after the bump = %+v, %v", job, pending, err)
		}
	}
	t.Logf("orders: %v", orders)
	checkIndexes(t, a)
}

// TestCancelRacingAnAsk: a cancel of a job and an ask in it, on two
// replicas at once: the question is cancelled exactly when the cancel
// says it ended it, and the state index agrees with the question.
func TestCancelRacingAnAsk(t *testing.T) {
	t.Parallel()
	a, b := twoReplicas(t)
	ctx := context.Background()
	for i := range 20 {
		job := fmt.Sprint("job-", i)
		mustAsk(t, a, newQ(job, "q-first", 1))
		var res []*record.AskResult
		var ended []record.Record
		var eAsk, eCancel error
		atOnce(func() { res, eAsk = a.AskMany(ctx, []record.NewQuestion{newQ(job, "q-late", 1)}) },
			func() { ended, eCancel = b.Cancel(ctx, record.JobCancel{Tenant: "acme", JobID: job, At: t0}) })
		if eAsk != nil || eCancel != nil || res[0].Status != record.Asked {
			t.Fatalf("%s: %v, %v, %+v", job, eAsk, eCancel, res)
		}
		cancelledLate := slices.ContainsFunc(ended, func(r record.Record) bool { return r.QuestionID == "q-late" })
		late, err := b.Get(ctx, res[0].Record.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: bridge.StateCancelled, false: bridge.StatePending}[cancelledLate]; late.State != want {
			t.Fatalf("%s: q-late is %s, the cancel ended %d questions", job, late.State, len(ended))
		}
		listed, err := a.List(ctx, record.ListFilter{Tenant: "acme", JobID: job, State: late.State})
		if err != nil || !slices.ContainsFunc(listed, func(r record.Record) bool { return r.ID == late.ID }) {
			t.Fatalf("%s: q-late (%s) is not listed in its state: %+v, %v", job, late.State, listed, err)
		}
	}
	n, err := a.CountByState(ctx)
	if err != nil || n[bridge.StatePending]+n[bridge.StateCancelled] != 40 || n[bridge.StateCancelled] < 20 {
		t.Fatalf("counts = %v, %v; want 40 questions, each first one cancelled", n, err)
	}
	checkIndexes(t, a)
}

// TestEndingMoreThanOneBatch: a version bump ending more questions than
// one atomic batch takes ends them all, announced in order; so does a
// cancel, whose key is then applied once.
func TestEndingMoreThanOneBatch(t *testing.T) {
	t.Parallel()
	// In memory: on one file-stored replica every atomic batch makes and
	// syncs a file store of its own, and this test commits hundreds.
	s, err := Open(context.Background(), startNATS(t), Options{Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	const n = 210 // five keys each to end: more than maxBatch
	var nqs []record.NewQuestion
	for i := range n {
		nqs = append(nqs, newQ("job-1", fmt.Sprintf("q-%03d", i), 1), newQ("job-2", fmt.Sprintf("q-%03d", i), 1))
	}
	if _, err := s.AskMany(ctx, nqs); err != nil {
		t.Fatal(err)
	}
	res := mustAsk(t, s, newQ("job-1", "q-next", 2))
	if res.Status != record.Asked || len(res.Superseded) != n {
		t.Fatalf("ask at version 2: %v, %d superseded; want %d", res.Status, len(res.Superseded), n)
	}
	out := outboxOf(t, s)
	var superseded []string
	for _, m := range out {
		if qid, ok := strings.CutPrefix(m, "ask.v1.resume.acme.job-1 superseded "); ok {
			superseded = append(superseded, qid)
		}
	}
	if len(superseded) != n || !slices.IsSorted(superseded) || out[len(out)-1] != "ask.v1.event.acme.job-1 asked" {
		t.Fatalf("%d superseded announced (sorted %v), last %q", len(superseded), slices.IsSorted(superseded), out[len(out)-1])
	}
	c := record.JobCancel{Tenant: "acme", JobID: "job-2", At: t0, Key: "cancel.1",
		Outbox: func(r *record.Record) []record.Message {
			return []record.Message{{Subject: "x", Data: []byte(r.QuestionID)}}
		}}
	ended, err := s.Cancel(ctx, c)
	if err != nil || len(ended) != n {
		t.Fatalf("cancel of job-2 ended %d, %v; want %d", len(ended), err, n)
	}
	if _, err := s.Cancel(ctx, c); !errors.Is(err, record.ErrDuplicate) {
		t.Fatalf("the cancel again: %v, want ErrDuplicate", err)
	}
	counts, err := s.CountByState(ctx)
	want := map[string]int64{bridge.StatePending: 1, bridge.StateSuperseded: n, bridge.StateCancelled: n}
	if err != nil || fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("counts = %v, %v; want %v", counts, err, want)
	}
	if due := dueOf(t, s); len(due) != 1 || due[res.Record.ID].Index != 0 {
		t.Fatalf("%d due keys, want q-next's only", len(due))
	}
	checkIndexes(t, s)
}

// TestTwoReplicasAskOverlappingBatches: two replicas asking the same
// questions at once, in batches of many jobs in opposite orders, record
// each once: a batch that lost a race asks its questions again one by one.
func TestTwoReplicasAskOverlappingBatches(t *testing.T) {
	t.Parallel()
	a, b := twoReplicas(t)
	ctx := context.Background()
	for round := range 5 {
		var forward, backward []record.NewQuestion
		for j := range 12 {
			forward = append(forward, newQ(fmt.Sprintf("job-%d-%d", round, j), "q-1", 1))
		}
		// A newer version of job 0's question: it supersedes version 1.
		forward = append(forward, newQ(fmt.Sprintf("job-%d-0", round), "q-1", 2))
		for _, nq := range slices.Backward(forward) {
			backward = append(backward, nq)
		}
		var ra, rb []*record.AskResult
		var ea, eb error
		atOnce(func() { ra, ea = a.AskMany(ctx, forward) }, func() { rb, eb = b.AskMany(ctx, backward) })
		if ea != nil || eb != nil {
			t.Fatalf("round %d: %v, %v", round, ea, eb)
		}
		asked := 0
		for i := range forward {
			x, y := ra[i].Status, rb[len(forward)-1-i].Status
			if x == record.Asked {
				asked++
			}
			if y == record.Asked {
				asked++
			}
			if x == record.Asked && y == record.Asked {
				t.Fatalf("round %d: %s asked on both replicas", round, forward[i].Key)
			}
		}
		// Version 1 of job 0 may be Stale on the replica that reads it
		// after version 2: then it was asked nowhere.
		if asked != len(forward) && asked != len(forward)-1 {
			t.Fatalf("round %d: %d questions asked of %d", round, asked, len(forward))
		}
	}
	counts, err := a.CountByState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all := counts[bridge.StatePending] + counts[bridge.StateSuperseded]
	if counts[bridge.StatePending] != 5*12 || all < 5*12 || all > 5*13 {
		t.Fatalf("counts = %v; want every job's latest question pending, once", counts)
	}
	if out := outboxOf(t, b); int64(len(out)) != all+counts[bridge.StateSuperseded] {
		t.Fatalf("%d announcements for %d questions, %d superseded", len(out), all, counts[bridge.StateSuperseded])
	}
	checkIndexes(t, a)
}
