package jsstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
)

// list reads every key matching filter (a key pattern with * and >) with
// its value, in the order they were last written. The server finds them
// through its subject index: only matching keys are read. One multi read
// answers it (a direct get no Raft log sees); a watch is the fallback
// when more than maxMulti keys match, or when the replicas stay behind.
func (s *Store) list(ctx context.Context, filter string) ([]entry, error) {
	out, err := s.listByGet(ctx, filter)
	if err == nil {
		return out, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("jsstore: list %s: %w", filter, err)
	}
	return s.listByWatch(ctx, filter)
}

// listByGet is list by one multi read of the keys filter matches. On a
// bucket with replicas the reading is fenced (fence.go), as the gate's
// is: a ladder round or a queue read from a replica behind would miss a
// question just asked.
func (s *Store) listByGet(ctx context.Context, filter string) ([]entry, error) {
	f, err := s.readFence(ctx)
	if err != nil {
		return nil, err
	}
	return fenced(ctx, fenceWait, func() ([]entry, error) {
		got := map[string]entry{}
		upTo, err := s.multiLastUpTo(ctx, []string{filter}, got)
		switch {
		case err != nil:
			return nil, err
		case upTo == 0 && f > 0:
			return s.confirmNone(ctx, filter)
		}
		if err := f.check(upTo); err != nil {
			return nil, err
		}
		out := slices.Collect(maps.Values(got))
		slices.SortFunc(out, func(a, b entry) int { return cmp.Compare(a.Rev, b.Rev) })
		return out, nil
	})
}

// confirmNone asks the stream's leader whether any key matches filter,
// when a replica answered that none ever did (an answer that does not
// say how far the replica had read): nothing when the leader agrees. A
// deleted key keeps its marker, so one the leader holds, deleted or
// not, is a key the replica had not seen yet.
func (s *Store) confirmNone(ctx context.Context, filter string) ([]entry, error) {
	_, ok, err := s.leaderMsg(ctx, leaderRequest{NextBySubject: subjectPrefix + filter, Seq: 1})
	switch {
	case err != nil:
		return nil, err
	case ok:
		return nil, fmt.Errorf("%w: it found no key %s, the leader does", errBehind, filter)
	}
	return nil, nil
}
