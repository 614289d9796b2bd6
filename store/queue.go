package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// JobQueue reads a job's pending questions, oldest first; the runtime
// orders them by priority (docs/design.md, "The queue and nudges").
func (s *Store) JobQueue(ctx context.Context, tenant, job string) ([]record.Queued, error) {
	rows, err := s.rs.query(ctx, "SELECT "+recordColumns+", staleness FROM questions WHERE tenant = ? AND job_id = ? AND state = 'pending' ORDER BY asked_at, id", tenant, job)
	if err != nil {
		return nil, fmt.Errorf("store: queue of %s/%s: %w", tenant, job, err)
	}
	defer rows.Close()
	var out []record.Queued
	for rows.Next() {
		var n int
		r, err := scanRecord(rows, &n)
		if err != nil {
			return nil, fmt.Errorf("store: queue of %s/%s: %w", tenant, job, err)
		}
		out = append(out, record.Queued{Record: *r, Staleness: n})
	}
	return out, rows.Err()
}

// FireRound fires the due steps of one job's ladder round at once: each is
// removed, audited and its question's staleness bumped, and msgs (the one
// nudge) are written, in one transaction. ErrStepGone, and nothing done,
// when any of them fired (or its question ended) before: the ladder reads
// the steps still due again.
func (s *Store) FireRound(ctx context.Context, steps []record.RoundStep, at time.Time, msgs []record.Message) error {
	err := s.tx(ctx, func(tx *txn) error {
		for _, d := range steps {
			res, err := tx.exec(ctx, "DELETE FROM steps WHERE question = ? AND idx = ?", d.Question, d.Index)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return record.ErrStepGone
			}
			if err := snoozeEndedTx(ctx, tx, d.DueStep); err != nil {
				return err
			}
			// A snooze's end is no ladder round: staleness stays.
			if _, err := tx.exec(ctx, "UPDATE questions SET staleness = staleness + 1 WHERE id = ? AND ? != ?", d.Question, d.Target, record.StepSnooze); err != nil {
				return err
			}
			if err := auditTx(ctx, tx, d.Question, bridge.StatePending, bridge.StatePending, "", "", d.Reason, at); err != nil {
				return err
			}
		}
		return outboxTx(ctx, tx, msgs, at)
	})
	if err != nil && !errors.Is(err, record.ErrStepGone) {
		return fmt.Errorf("store: fire a round of %d steps: %w", len(steps), err)
	}
	return err
}

// JobSteps are the ladder steps of one kind (target) of a job's pending
// questions due at or before before, earliest first: those a round may
// take along (docs/design.md, "The queue and nudges").
func (s *Store) JobSteps(ctx context.Context, tenant, job, target string, before time.Time) ([]record.DueStep, error) {
	rows, err := s.rs.query(ctx, `SELECT s.question, s.idx, s.target, s.due FROM steps s JOIN questions q ON q.id = s.question
		WHERE q.tenant = ? AND q.job_id = ? AND q.state = 'pending' AND s.target = ? AND s.due <= ? ORDER BY s.due, s.question, s.idx`,
		tenant, job, target, ms(before))
	if err != nil {
		return nil, fmt.Errorf("store: steps of %s/%s: %w", tenant, job, err)
	}
	defer rows.Close()
	var out []record.DueStep
	for rows.Next() {
		var d record.DueStep
		var due int64
		if err := rows.Scan(&d.Question, &d.Index, &d.Target, &due); err != nil {
			return nil, fmt.Errorf("store: steps of %s/%s: %w", tenant, job, err)
		}
		d.Due = fromMS(due)
		out = append(out, d)
	}
	return out, rows.Err()
}
