package jsstore

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// The questions are counted by state (CountByState, each /metrics scrape)
// from a replica's watch of the state index qs.>, not by reading the index
// on each call: with a hundred thousand questions a read takes seconds,
// the tally a map copy. A question's index key is written when it enters a
// state and deleted when it leaves it, in the batch that moves it
// (putQuestion), so each later write is one question in or out. Of the
// watch's initial values, the last write of each key, only those that are
// not deletes count.

// stateTally is a replica's count of the questions in each state.
type stateTally struct {
	keyView
	counts map[string]int64
}

// init makes st a view of the state index; warn reports a malformed key.
func (st *stateTally) init(warn func(string, ...any)) {
	st.filter, st.what = "qs.>", "the state index"
	st.reset = func() { st.counts = map[string]int64{} }
	st.apply = func(e jetstream.KeyValueEntry, initial bool) {
		parts := strings.Split(e.Key(), ".")
		if len(parts) != 5 {
			warn("jsstore: a malformed state key is ignored", "key", e.Key())
			return
		}
		state := dec(parts[2])
		switch {
		case e.Operation() == jetstream.KeyValuePut:
			st.counts[state]++
		case !initial:
			if st.counts[state]--; st.counts[state] <= 0 {
				delete(st.counts, state)
			}
		}
	}
}

// CountByState counts questions by state, from the replica's tally brought
// up to date first.
func (s *Store) CountByState(ctx context.Context) (map[string]int64, error) {
	var out map[string]int64
	if err := s.read(ctx, &s.tally.keyView, func() { out = maps.Clone(s.tally.counts) }); err != nil {
		return nil, fmt.Errorf("jsstore: count: %w", err)
	}
	return out, nil
}
