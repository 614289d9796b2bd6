package jsstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// TestTallyOfAReplicaStartedLate: a replica whose view starts after
// questions moved (the index holds their old state keys' delete markers)
// counts what the documents hold, and follows what another replica
// decides after.
func TestTallyOfAReplicaStartedLate(t *testing.T) {
	t.Parallel()
	open := replicaServer(t)
	a := open()
	ctx := context.Background()
	var ids []int64
	for _, job := range []string{"job-1", "job-2", "job-3"} {
		ids = append(ids, mustAsk(t, a, newQ(job, "q-1", 1)).Record.ID)
	}
	decide := func(s *Store, q int64) {
		t.Helper()
		if errs, err := s.Decide(ctx, []record.Decision{answer(q, "red")}); err != nil || errs[0] != nil {
			t.Fatalf("answer question %d: %v %v", q, errs, err)
		}
	}
	want := func(s *Store, counts map[string]int64) {
		t.Helper()
		if got, err := s.CountByState(ctx); err != nil || !maps.Equal(got, counts) {
			t.Fatalf("counts = %v, %v; want %v", got, err, counts)
		}
	}
	want(a, map[string]int64{bridge.StatePending: 3})
	decide(a, ids[0])
	b := open()
	want(b, map[string]int64{bridge.StatePending: 2, bridge.StateAnswered: 1})
	decide(a, ids[1])
	decide(a, ids[2])
	want(b, map[string]int64{bridge.StateAnswered: 3})
	want(a, map[string]int64{bridge.StateAnswered: 3})
	checkIndexes(t, b)
}

// clarifyOf shows what ClarifyQuestions reads on s since t0.
func clarifyOf(t *testing.T, s *Store) []string {
	t.Helper()
	qs, err := s.ClarifyQuestions(context.Background(), "", t0)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, q := range qs {
		out = append(out, fmt.Sprintf("%s/%s %s %s %s settled=%v", q.JobID, q.QuestionID, q.Agent, q.MissingField, q.State, q.SettledAt.Sub(q.AskedAt)))
	}
	return out
}

// withAgent is newQ asked by agent for field.
func withAgent(job, agent, field string) record.NewQuestion {
	nq := newQ(job, "q-1", 1)
	nq.Body = []byte(`{"question":"Which?","agent":"` + agent + `","missing_field":"` + field + `"}`)
	return nq
}

// TestStateViewFollowsAnotherReplica: what the clarification measures
// read of a question, on a replica that did not write it, follows its
// delegation to another body and its answer; the count by state stays
// one question.
func TestStateViewFollowsAnotherReplica(t *testing.T) {
	t.Parallel()
	open := replicaServer(t)
	a, b := open(), open()
	ctx := context.Background()
	q := mustAsk(t, a, withAgent("job-1", "billing", "order_id")).Record.ID
	never := time.Time{}.Sub(t0)
	check := func(want string, counts map[string]int64) {
		t.Helper()
		if got := clarifyOf(t, b); !slices.Equal(got, []string{want}) {
			t.Errorf("replica b reads %q, want %q", got, want)
		}
		if got, err := b.CountByState(ctx); err != nil || !maps.Equal(got, counts) {
			t.Errorf("replica b counts %v, %v; want %v", got, err, counts)
		}
	}
	check(fmt.Sprintf("job-1/q-1 billing order_id pending settled=%v", never), map[string]int64{bridge.StatePending: 1})
	delegate := record.Decision{Delegate: &record.Delegation{AttemptID: "d-1", Question: q, By: "slack:U1", Via: "slack",
		Reason: "delegated", At: t0, Body: []byte(`{"question":"Which?","agent":"billing-v2","missing_field":"amount"}`)}}
	if errs, err := a.Decide(ctx, []record.Decision{delegate}); err != nil || errs[0] != nil {
		t.Fatalf("delegate: %v %v", errs, err)
	}
	check(fmt.Sprintf("job-1/q-1 billing-v2 amount pending settled=%v", never), map[string]int64{bridge.StatePending: 1})
	answered := answer(q, "red")
	answered.Settle.At = t0.Add(10 * time.Minute)
	if errs, err := a.Decide(ctx, []record.Decision{answered}); err != nil || errs[0] != nil {
		t.Fatalf("answer: %v %v", errs, err)
	}
	check("job-1/q-1 billing-v2 amount answered settled=10m0s", map[string]int64{bridge.StateAnswered: 1})
	checkIndexes(t, b)
}

// TestStateViewLearnsWhatOldIndexKeysLack: a record whose state index
// keys were written before they held the measures' facts (empty values)
// is measured from the questions' documents, by a replica that starts on
// it, and a question answered after has its facts in its new key.
func TestStateViewLearnsWhatOldIndexKeysLack(t *testing.T) {
	t.Parallel()
	open := replicaServer(t)
	a := open()
	ctx := context.Background()
	var ids []int64
	for _, job := range []string{"job-1", "job-2"} {
		r := mustAsk(t, a, withAgent(job, "support", "colour")).Record
		if _, err := a.kv.Put(ctx, keyState(r.Tenant, r.State, r.JobID, r.ID), nil); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	b := open()
	never := time.Time{}.Sub(t0)
	want := []string{
		fmt.Sprintf("job-1/q-1 support colour pending settled=%v", never),
		fmt.Sprintf("job-2/q-1 support colour pending settled=%v", never),
	}
	if got := clarifyOf(t, b); !slices.Equal(got, want) {
		t.Errorf("replica b reads %q, want %q", got, want)
	}
	answered := answer(ids[1], "red")
	answered.Settle.At = t0.Add(time.Hour)
	if errs, err := a.Decide(ctx, []record.Decision{answered}); err != nil || errs[0] != nil {
		t.Fatalf("answer: %v %v", errs, err)
	}
	want[1] = "job-2/q-1 support colour answered settled=1h0m0s"
	for _, s := range []*Store{b, open()} {
		if got := clarifyOf(t, s); !slices.Equal(got, want) {
			t.Errorf("after the answer a replica reads %q, want %q", got, want)
		}
	}
	if got, err := b.CountByState(ctx); err != nil || !maps.Equal(got, map[string]int64{bridge.StatePending: 1, bridge.StateAnswered: 1}) {
		t.Errorf("counts %v, %v", got, err)
	}
}
