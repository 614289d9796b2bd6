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

// delegateTx writes a delegation on a question still pending; false when
// it is not.
func delegateTx(ctx context.Context, tx *txn, d *record.Delegation) (bool, error) {
	res, err := tx.exec(ctx, "UPDATE questions SET body = ? WHERE id = ? AND state = 'pending'", string(d.Body), d.Question)
	if err != nil {
		return false, fmt.Errorf("delegate: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	if err := auditTx(ctx, tx, d.Question, bridge.StatePending, bridge.StatePending, d.By, d.Via, d.Reason, d.At); err != nil {
		return false, fmt.Errorf("delegate: audit: %w", err)
	}
	return true, nil
}

// snoozeTx records a snooze on a question still pending, with the step
// that ends it; false when the question is not pending.
func snoozeTx(ctx context.Context, tx *txn, s *record.Snooze) (bool, error) {
	var state string
	err := tx.queryRow(ctx, "SELECT state FROM questions WHERE id = ?", s.Question).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && state != bridge.StatePending) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("snooze: %w", err)
	}
	var step int64
	err = tx.queryRow(ctx, "SELECT step FROM snoozes WHERE question = ? AND identity = ?", s.Question, s.Identity).Scan(&step)
	if errors.Is(err, sql.ErrNoRows) {
		var last sql.NullInt64
		if err = tx.queryRow(ctx, "SELECT MAX(idx) FROM steps WHERE question = ?", s.Question).Scan(&last); err == nil {
			step = int64(record.SnoozeStep(int(last.Int64), last.Valid))
		}
	}
	if err != nil {
		return false, fmt.Errorf("snooze: its step: %w", err)
	}
	if _, err := tx.exec(ctx, "INSERT INTO snoozes (question, identity, until, step) VALUES (?, ?, ?, ?) "+
		"ON CONFLICT (question, identity) DO UPDATE SET until = excluded.until", s.Question, s.Identity, ms(s.Until), step); err != nil {
		return false, fmt.Errorf("snooze: %w", err)
	}
	if _, err := tx.exec(ctx, "INSERT INTO steps (question, idx, target, due) VALUES (?, ?, ?, ?) "+
		"ON CONFLICT (question, idx) DO UPDATE SET due = excluded.due", s.Question, step, record.StepSnooze, ms(s.Until)); err != nil {
		return false, fmt.Errorf("snooze: its step: %w", err)
	}
	if err := auditTx(ctx, tx, s.Question, bridge.StatePending, bridge.StatePending, s.Identity, s.Via, s.Reason, s.At); err != nil {
		return false, fmt.Errorf("snooze: audit: %w", err)
	}
	return true, nil
}

// Snoozes are the snoozes on a question still to end at now: who, until
// when. The ladder's reminders skip them.
func (s *Store) Snoozes(ctx context.Context, question int64, now time.Time) (map[string]time.Time, error) {
	rows, err := s.rs.query(ctx, "SELECT identity, until FROM snoozes WHERE question = ? AND until > ?", question, ms(now))
	if err != nil {
		return nil, fmt.Errorf("store: snoozes of question %d: %w", question, err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var id string
		var until int64
		if err := rows.Scan(&id, &until); err != nil {
			return nil, fmt.Errorf("store: snoozes of question %d: %w", question, err)
		}
		out[id] = fromMS(until)
	}
	return out, rows.Err()
}

// SnoozeOf is the snooze a snooze step ends: who snoozed, until when.
// ErrNotFound when there is none.
func (s *Store) SnoozeOf(ctx context.Context, question int64, step int) (string, time.Time, error) {
	var id string
	var until int64
	err := s.rs.queryRow(ctx, "SELECT identity, until FROM snoozes WHERE question = ? AND step = ?", question, step).Scan(&id, &until)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, record.ErrNotFound
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("store: snooze step %d of question %d: %w", step, question, err)
	}
	return id, fromMS(until), nil
}

// snoozeEndedTx forgets the snooze a fired step ended: its step number is
// free for another snooze.
func snoozeEndedTx(ctx context.Context, tx *txn, d record.DueStep) error {
	if d.Target != record.StepSnooze {
		return nil
	}
	_, err := tx.exec(ctx, "DELETE FROM snoozes WHERE question = ? AND step = ?", d.Question, d.Index)
	return err
}
