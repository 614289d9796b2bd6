package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

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
