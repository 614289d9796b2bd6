package jsstore

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge"
)

// checkIndexes fails the test unless every question's keys agree with its
// document: one state index key, of its state; a due key while it is
// pending with steps left, naming the first; its uniqueness key naming it.
// No index key names a question that is not there.
func checkIndexes(t testing.TB, s *Store) {
	t.Helper()
	ctx := context.Background()
	read := func(filter string) map[string][]byte {
		entries, err := s.list(ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]byte{}
		for _, e := range entries {
			out[e.Key] = e.Value
		}
		return out
	}
	docs, states, dues, uniq := read("q.>"), read("qs.>"), read("due.>"), read("qk.>")
	delete(states, keyStateMark)
	byState := map[string]int64{}
	for key, data := range docs {
		var d questionDoc
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		r := &d.Record
		byState[r.State]++
		d.noteRead()
		facts, _ := json.Marshal(factsOf(&d))
		if k := keyState(r.Tenant, r.State, r.JobID, r.ID); states[k] == nil {
			t.Errorf("question %d (%s) has no state key %s", r.ID, r.State, k)
		} else if !bytes.Equal(states[k], facts) {
			t.Errorf("question %d: state key %s holds %s, its document %s", r.ID, k, states[k], facts)
		} else {
			delete(states, k)
		}
		dueKey := keyDue(r.Tenant, r.JobID, r.ID)
		st, ok := nextStep(d.Steps)
		switch due, has := dues[dueKey]; {
		case r.State == bridge.StatePending && ok:
			var dd dueDoc
			if err := json.Unmarshal(due, &dd); !has || err != nil || dd.Index != st.Index || !dd.Due.Equal(st.Due) || dd.Question != r.ID {
				t.Errorf("question %d: due key %s = %s, want step %d", r.ID, dueKey, due, st.Index)
			}
		case has:
			t.Errorf("question %d (%s, %d steps) has a due key", r.ID, r.State, len(d.Steps))
		}
		delete(dues, dueKey)
		if k := keyQuestionVersion(r.Tenant, r.JobID, r.QuestionID, r.TaskVersion); string(uniq[k]) != strconv.FormatInt(r.ID, 10) {
			t.Errorf("question %d: %s = %q", r.ID, k, uniq[k])
		}
	}
	if counts, err := s.CountByState(ctx); err != nil || !maps.Equal(counts, byState) {
		t.Errorf("the counts by state = %v, %v; the documents hold %v", counts, err, byState)
	}
	for _, rest := range []map[string][]byte{states, dues} {
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range rest {
				if !yield(k) {
					return
				}
			}
		})
		if len(keys) > 0 {
			t.Errorf("index keys of no question: %s", strings.Join(keys, " "))
		}
	}
}
