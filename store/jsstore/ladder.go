package jsstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// NextDue is the earliest due time of any step, from the replica's watch
// of the due keys (duewatch.go), brought up to date first.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	var next time.Time
	var ok bool
	err := s.dueView(ctx, func(h dueHeap) {
		if len(h) > 0 {
			next, ok = h[0].due, true
		}
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("jsstore: next due: %w", err)
	}
	return next, ok, nil
}

// DueSteps returns up to limit steps due at or before now, earliest first
// (by due time, question, step), as SQLite's. The watch says which
// questions have a step due; their documents say which of their steps are,
// as a question may have several due at once after a long stop. A
// question that moved on since the watch saw it is left out.
func (s *Store) DueSteps(ctx context.Context, now time.Time, limit int) ([]record.DueStep, error) {
	if limit <= 0 {
		return nil, nil
	}
	var due []dueItem
	if err := s.dueView(ctx, func(h dueHeap) { due = dueBy(h, now) }); err != nil {
		return nil, fmt.Errorf("jsstore: due steps: %w", err)
	}
	var out []record.DueStep
	for len(due) > 0 {
		// A question's steps fall due no earlier than its due key: once
		// limit steps are found, a question after the last of them (by
		// due time, then id) adds none before it.
		if len(out) >= limit {
			sortSteps(out)
			last := out[limit-1]
			if cmp.Or(due[0].due.Compare(last.Due), cmp.Compare(due[0].question, last.Question)) > 0 {
				break
			}
		}
		chunk := due[:min(len(due), readAtOnce)]
		due = due[len(chunk):]
		ids := make([]int64, len(chunk))
		for i, it := range chunk {
			ids[i] = it.question
		}
		docs, err := s.getQuestions(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("jsstore: due steps: %w", err)
		}
		for _, d := range docs {
			if d != nil && d.Record.State == bridge.StatePending {
				out = appendDue(out, d, now)
			}
		}
	}
	sortSteps(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// appendDue appends the steps of question d due at or before t.
func appendDue(out []record.DueStep, d *questionDoc, t time.Time) []record.DueStep {
	for _, st := range d.Steps {
		if due := msTime(st.Due); !due.After(t) {
			out = append(out, record.DueStep{Question: d.Record.ID, Index: st.Index, Target: st.Target, Due: due})
		}
	}
	return out
}

// sortSteps orders steps as SQLite's steps index: by due time, question
// and step.
func sortSteps(steps []record.DueStep) {
	slices.SortFunc(steps, func(a, b record.DueStep) int {
		return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.Question, b.Question), cmp.Compare(a.Index, b.Index))
	})
}

// JobSteps are the ladder steps of one kind (target) of a job's pending
// questions due at or before before, earliest first: those a round may
// take along. The job's due keys (due.<tenant>.<job>.*, read from the
// server's index) say which questions have any step due by then.
func (s *Store) JobSteps(ctx context.Context, tenant, job, target string, before time.Time) ([]record.DueStep, error) {
	entries, err := s.list(ctx, "due."+enc(tenant)+"."+enc(job)+".*")
	if err != nil {
		return nil, fmt.Errorf("jsstore: steps of %s/%s: %w", tenant, job, err)
	}
	var ids []int64
	for _, e := range entries {
		_, _, q, ok := parseDueKey(e.Key)
		var dd dueDoc
		if ok && json.Unmarshal(e.Value, &dd) == nil && !dd.Due.After(before) {
			ids = append(ids, q)
		}
	}
	docs, err := s.getQuestions(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("jsstore: steps of %s/%s: %w", tenant, job, err)
	}
	var out []record.DueStep
	for _, d := range docs {
		if d == nil || d.Record.State != bridge.StatePending {
			continue
		}
		for _, st := range appendDue(nil, d, before) {
			if st.Target == target {
				out = append(out, st)
			}
		}
	}
	sortSteps(out)
	return out, nil
}

// readAtOnce is how many question documents a read of many has in flight:
// each is a request of its own, and in a cluster a round trip.
const readAtOnce = 32

// getQuestions reads the documents of ids, readAtOnce at a time; a
// question with none has nil.
func (s *Store) getQuestions(ctx context.Context, ids []int64) ([]*questionDoc, error) {
	out := make([]*questionDoc, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, readAtOnce)
	var wg sync.WaitGroup
	for i, q := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i], _, _, errs[i] = s.getQuestion(ctx, q)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}
