package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/askbridge/askbridge/store/record"
)

// Reask writes to the outbox a message for each of up to limit pending
// questions after cur, asked at askedBy or before, that one of platforms
// has not reported a message of, as build makes it from the question and
// the platforms that have (false: none for that question; an error undoes
// the page). It returns the cursor after the last question read and
// whether that was the last one.
//
// The questions are looked for on the read connections, which a long walk
// over a million pending questions does not hold the writer up with; the
// page is then read again and written in one write transaction, which
// keeps each message in order with what else the question announces: a
// question answered before it is not asked again, and one answered after
// it is announced after it.
func (s *Store) Reask(ctx context.Context, platforms []string, askedBy time.Time, cur record.ReaskCursor, limit int,
	build func(r *record.Record, shownOn []string) (record.Message, bool, error)) (next record.ReaskCursor, n int, done bool, err error) {
	if len(platforms) == 0 {
		return cur, 0, true, nil
	}
	lacking, lackingArgs := lackingOn(platforms)
	ids, next, err := s.reaskPage(ctx, lacking, append([]any{cur.Tenant, cur.ID, ms(askedBy)}, lackingArgs...), limit)
	if err != nil {
		return cur, 0, false, fmt.Errorf("store: ask pending questions again for %s: %w", strings.Join(platforms, ", "), err)
	}
	done = len(ids) < limit
	if len(ids) == 0 {
		return cur, 0, done, nil
	}
	// limit ids, padded with 0 (no question's): one statement to prepare.
	args := append([]any{}, ids...)
	for len(args) < limit {
		args = append(args, int64(0))
	}
	query := "SELECT " + recordColumns + `, (SELECT group_concat(platform) FROM deliveries d WHERE d.question = q.id AND d.ok = 1 AND d.message_id != '')
		FROM questions q WHERE id IN (?` + strings.Repeat(", ?", limit-1) + `) AND state = 'pending' AND (` + lacking + `)
		ORDER BY tenant, id`
	err = s.tx(ctx, func(tx *txn) error {
		n = 0
		rows, err := tx.query(ctx, query, append(args, lackingArgs...)...)
		if err != nil {
			return err
		}
		var msgs []record.Message
		for rows.Next() {
			var shown sql.NullString
			r, err := scanRecord(rows, &shown)
			if err != nil {
				rows.Close()
				return err
			}
			var on []string
			if shown.String != "" {
				on = strings.Split(shown.String, ",")
			}
			m, ok, err := build(r, on)
			if err != nil {
				rows.Close()
				return err
			}
			if ok {
				msgs = append(msgs, m)
			}
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return err
		}
		if err := rows.Close(); err != nil {
			return err
		}
		n = len(msgs)
		return outboxTx(ctx, tx, msgs, time.Now())
	})
	if err != nil {
		return cur, 0, false, fmt.Errorf("store: ask pending questions again for %s: %w", strings.Join(platforms, ", "), err)
	}
	return next, n, done, nil
}

// lackingOn is the condition "one of platforms has not reported a
// message of question q", with its arguments.
func lackingOn(platforms []string) (string, []any) {
	const shownOn = "SELECT 1 FROM deliveries d WHERE d.question = q.id AND d.ok = 1 AND d.message_id != '' AND d.platform = ?"
	var conds []string
	var args []any
	for _, p := range platforms {
		conds = append(conds, "NOT EXISTS ("+shownOn+")")
		args = append(args, p)
	}
	return strings.Join(conds, " OR "), args
}

// reaskPage reads, on the read connections, the ids of up to limit
// pending questions after the cursor in args that match lacking, and the
// cursor after the last.
func (s *Store) reaskPage(ctx context.Context, lacking string, args []any, limit int) ([]any, record.ReaskCursor, error) {
	rows, err := s.rs.query(ctx, `SELECT tenant, id FROM questions q WHERE state = 'pending' AND (tenant, id) > (?, ?) AND asked_at <= ? AND (`+
		lacking+`) ORDER BY tenant, id LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, record.ReaskCursor{}, err
	}
	defer rows.Close()
	var ids []any
	var next record.ReaskCursor
	for rows.Next() {
		if err := rows.Scan(&next.Tenant, &next.ID); err != nil {
			return nil, record.ReaskCursor{}, err
		}
		ids = append(ids, next.ID)
	}
	return ids, next, rows.Err()
}

// Meta reads a value the runtime keeps about itself; "" when there is none.
func (s *Store) Meta(ctx context.Context, key string) (string, error) {
	var v string
	err := s.rs.queryRow(ctx, "SELECT value FROM meta WHERE key = ?", key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store: meta %s: %w", key, err)
	}
	return v, nil
}

// SetMeta writes a value the runtime keeps about itself.
func (s *Store) SetMeta(ctx context.Context, key, value string) error {
	err := s.tx(ctx, func(tx *txn) error {
		_, err := tx.exec(ctx, "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: set meta %s: %w", key, err)
	}
	return nil
}
