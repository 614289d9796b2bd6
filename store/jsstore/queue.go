package jsstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// JobQueue reads a job's pending questions, oldest first (by asked time,
// then id), as SQLite's: the state index qs.<tenant>.pending.<job>.* names
// them.
func (s *Store) JobQueue(ctx context.Context, tenant, job string) ([]record.Queued, error) {
	keys, err := s.states(ctx, stateFilter(tenant, bridge.StatePending, job))
	if err != nil {
		return nil, fmt.Errorf("jsstore: queue of %s/%s: %w", tenant, job, err)
	}
	ids := make([]int64, len(keys))
	for i, k := range keys {
		ids[i] = k.id
	}
	docs, err := s.getQuestions(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("jsstore: queue of %s/%s: %w", tenant, job, err)
	}
	out := make([]record.Queued, 0, len(keys))
	for _, d := range docs {
		// One settled since the index was read is left out, as a later
		// query would.
		if d == nil || d.Record.State != bridge.StatePending {
			continue
		}
		out = append(out, record.Queued{Record: d.Record, Staleness: d.Staleness})
	}
	slices.SortFunc(out, func(a, b record.Queued) int {
		return cmp.Or(a.AskedAt.Compare(b.AskedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// FireRound fires the due steps of one job's ladder round at once: each is
// removed from its question's document, audited and the question's
// staleness bumped, and msgs (the one nudge) are written, in one atomic
// batch. record.ErrStepGone, and nothing done, when any of them fired (or
// its question ended) before: this is where replicas racing for one round
// find that another took it, since each document is written only at the
// revision it was read at.
func (s *Store) FireRound(ctx context.Context, steps []record.RoundStep, at time.Time, msgs []record.Message) error {
	err := retry(ctx, "fire a round", func() error {
		return s.fireRound(ctx, steps, at, msgs)
	})
	if err != nil && !errors.Is(err, record.ErrStepGone) {
		return fmt.Errorf("jsstore: fire a round of %d steps: %w", len(steps), err)
	}
	return err
}

// fireRound is one try of FireRound.
func (s *Store) fireRound(ctx context.Context, steps []record.RoundStep, at time.Time, msgs []record.Message) error {
	docs := map[int64]readDoc{}
	var order []int64
	for _, st := range steps {
		rd, ok := docs[st.Question]
		if !ok {
			d, rev, found, err := s.getQuestion(ctx, st.Question)
			if err != nil {
				return err
			}
			if !found || d.Record.State != bridge.StatePending {
				return record.ErrStepGone
			}
			rd = readDoc{d, rev}
			docs[st.Question] = rd
			order = append(order, st.Question)
		}
		if !takeStep(rd.d, st.DueStep) {
			return record.ErrStepGone
		}
		// A snooze's end is no ladder round: staleness stays.
		if st.Target != record.StepSnooze {
			rd.d.Staleness++
		}
		rd.d.addAudit(bridge.StatePending, bridge.StatePending, "", "", st.Reason, at)
	}
	t := &txn{}
	for _, q := range order {
		if err := t.putQuestion(docs[q].d, docs[q].rev); err != nil {
			return err
		}
	}
	if err := t.outbox(msgs, at); err != nil {
		return err
	}
	return s.commit(ctx, t)
}

// takeStep removes step d from its question's ladder, and the snooze a
// snooze step ends (its step number is then free for another snooze);
// false when the ladder has no such step.
func takeStep(doc *questionDoc, d record.DueStep) bool {
	i := slices.IndexFunc(doc.Steps, func(st record.Step) bool { return st.Index == d.Index })
	if i < 0 {
		return false
	}
	doc.Steps = slices.Delete(doc.Steps, i, i+1)
	if d.Target == record.StepSnooze {
		for id, sn := range doc.Snoozes {
			if sn.Step == d.Index {
				delete(doc.Snoozes, id)
			}
		}
	}
	return true
}
