package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// NextDue is the earliest due time of any step, read from the due index.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	var due sql.NullInt64
	if err := s.rs.queryRow(ctx, "SELECT MIN(due) FROM steps").Scan(&due); err != nil {
		return time.Time{}, false, fmt.Errorf("store: next due: %w", err)
	}
	if !due.Valid {
		return time.Time{}, false, nil
	}
	return fromMS(due.Int64), true, nil
}

// DueSteps returns up to limit steps due at or before now, earliest first.
func (s *Store) DueSteps(ctx context.Context, now time.Time, limit int) ([]record.DueStep, error) {
	rows, err := s.rs.query(ctx, "SELECT question, idx, target, due FROM steps WHERE due <= ? ORDER BY due, question, idx LIMIT ?", ms(now), limit)
	if err != nil {
		return nil, fmt.Errorf("store: due steps: %w", err)
	}
	defer rows.Close()
	var out []record.DueStep
	for rows.Next() {
		var d record.DueStep
		var due int64
		if err := rows.Scan(&d.Question, &d.Index, &d.Target, &due); err != nil {
			return nil, fmt.Errorf("store: due steps: %w", err)
		}
		d.Due = fromMS(due)
		out = append(out, d)
	}
	return out, rows.Err()
}

// FireStep removes a ladder step and writes the messages it sends, once:
// ErrStepGone when it fired (or its question ended) before.
func (s *Store) FireStep(ctx context.Context, d record.DueStep, at time.Time, reason string, msgs []record.Message) error {
	err := s.tx(ctx, func(tx *txn) error {
		res, err := tx.exec(ctx, "DELETE FROM steps WHERE question = ? AND idx = ?", d.Question, d.Index)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return record.ErrStepGone
		}
		if err := snoozeEndedTx(ctx, tx, d); err != nil {
			return err
		}
		if err := auditTx(ctx, tx, d.Question, bridge.StatePending, bridge.StatePending, "", "", reason, at); err != nil {
			return err
		}
		return outboxTx(ctx, tx, msgs, at)
	})
	if err != nil && !errors.Is(err, record.ErrStepGone) {
		return fmt.Errorf("store: fire step %d of question %d: %w", d.Index, d.Question, err)
	}
	return err
}
