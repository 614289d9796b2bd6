package jsstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// Reask writes to the outbox a message for each of up to limit pending
// questions after cur (by tenant, then id), asked at askedBy or before,
// that one of platforms has not reported a message of, as build makes it
// from the question and the platforms that have (false: none for that
// question; an error writes nothing). It returns the cursor after the last
// question read and whether that was the last one, as SQLite's Reask.
//
// The pending questions are listed from the state index (qs.*.pending.>).
// The page's messages are written in one batch with each of their
// questions' documents rewritten at the revision read, so a question
// answered before is not asked again (the batch conflicts and the page is
// read again), and one answered after is announced after it. A page is at
// most half a batch of questions, its documents and messages together.
func (s *Store) Reask(ctx context.Context, platforms []string, askedBy time.Time, cur record.ReaskCursor, limit int,
	build func(r *record.Record, shownOn []string) (record.Message, bool, error)) (next record.ReaskCursor, n int, done bool, err error) {
	if len(platforms) == 0 {
		return cur, 0, true, nil
	}
	limit = min(limit, maxBatch/2)
	if limit <= 0 {
		return cur, 0, false, nil
	}
	err = retry(ctx, "ask pending questions again", func() error {
		var e error
		next, n, done, e = s.reaskPage(ctx, platforms, askedBy, cur, limit, build)
		return e
	})
	if err != nil {
		return cur, 0, false, fmt.Errorf("jsstore: ask pending questions again for %s: %w", strings.Join(platforms, ", "), err)
	}
	return next, n, done, nil
}

// reaskPage is one try of Reask.
func (s *Store) reaskPage(ctx context.Context, platforms []string, askedBy time.Time, cur record.ReaskCursor, limit int,
	build func(r *record.Record, shownOn []string) (record.Message, bool, error)) (record.ReaskCursor, int, bool, error) {
	walk := reaskWalk{platforms: strings.Join(platforms, ","), askedBy: askedBy}
	keys, err := s.reaskKeys(ctx, walk, cur)
	if err != nil {
		return cur, 0, false, err
	}
	from, _ := slices.BinarySearchFunc(keys, cur, func(k stateKey, c record.ReaskCursor) int {
		return cmp.Or(strings.Compare(k.tenant, c.Tenant), cmp.Compare(k.id, c.ID+1))
	})
	t := &txn{}
	var msgs []record.Message
	next, found := cur, 0
	for _, k := range keys[from:] {
		if found == limit {
			break
		}
		d, rev, ok, err := s.getQuestion(ctx, k.id)
		if err != nil {
			return cur, 0, false, err
		}
		shown := shownOn(d)
		if !ok || d.Record.State != bridge.StatePending || d.Record.AskedAt.After(askedBy) || !lacking(shown, platforms) {
			continue
		}
		found++
		next = record.ReaskCursor{Tenant: d.Record.Tenant, ID: d.Record.ID}
		m, ok, err := build(&d.Record, shown)
		if err != nil {
			return cur, 0, false, err
		}
		if !ok {
			continue
		}
		msgs = append(msgs, m)
		if err := t.putQuestion(d, rev); err != nil {
			return cur, 0, false, err
		}
	}
	if err := t.outbox(msgs, now()); err != nil {
		return cur, 0, false, err
	}
	if err := s.commit(ctx, t); err != nil {
		return cur, 0, false, err
	}
	walk.next, walk.keys = next, keys
	s.reask.keep(walk, found < limit)
	return next, len(msgs), found < limit, nil
}

// reaskWalk is the pending questions a walk of Reask listed, by tenant
// and id, kept for its next page (which starts at next): listing every
// pending question for each page of 500 would make a walk over many
// quadratic. A question that became pending after the listing was
// recorded after the walk began, and so announced after the consumer it
// is for existed: the walk need not find it. One that ended since is
// read again before it is asked.
type reaskWalk struct {
	platforms string
	askedBy   time.Time
	next      record.ReaskCursor
	keys      []stateKey
}

// reaskMemo keeps the last walk of Reask.
type reaskMemo struct {
	mu   sync.Mutex
	last *reaskWalk
}

// keep keeps w for its next page, or forgets it when it is done.
func (m *reaskMemo) keep(w reaskWalk, done bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = nil
	if !done {
		m.last = &w
	}
}

// reaskKeys are the pending questions, by tenant and id: the listing of
// the walk that cur continues, or a new one.
func (s *Store) reaskKeys(ctx context.Context, w reaskWalk, cur record.ReaskCursor) ([]stateKey, error) {
	s.reask.mu.Lock()
	last := s.reask.last
	s.reask.mu.Unlock()
	if last != nil && cur != (record.ReaskCursor{}) && last.next == cur && last.platforms == w.platforms && last.askedBy.Equal(w.askedBy) {
		return last.keys, nil
	}
	keys, err := s.states(ctx, stateFilter("", bridge.StatePending, ""))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(keys, func(a, b stateKey) int { return cmp.Or(strings.Compare(a.tenant, b.tenant), cmp.Compare(a.id, b.id)) })
	return keys, nil
}

// shownOn are the platforms that reported a message of question d, in
// order.
func shownOn(d *questionDoc) []string {
	if d == nil {
		return nil
	}
	var on []string
	for _, dl := range d.Deliveries {
		if dl.OK && dl.Message.MessageID != "" {
			on = append(on, dl.Platform)
		}
	}
	slices.Sort(on)
	return on
}

// lacking reports whether one of platforms is not among shown.
func lacking(shown, platforms []string) bool {
	for _, p := range platforms {
		if !slices.Contains(shown, p) {
			return true
		}
	}
	return false
}
