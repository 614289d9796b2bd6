package jsstore

import (
	"context"
	"maps"
	"testing"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// TestTallyOfAReplicaStartedLate: a replica whose tally starts after
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
