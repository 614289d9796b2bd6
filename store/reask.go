package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ReaskCursor is where a walk over the pending questions stands: after
// this tenant's question of this id (the order of the index
// questions_by_state). The zero cursor is the start.
type ReaskCursor struct {
	Tenant string
	ID     int64
}

// Reask writes to the outbox, in one transaction, a message for each of
// up to limit pending questions after cur, asked at askedBy or before,
// that one of platforms has not reported a message of, as build makes it
// from the question and the platforms that have (false: none for that
// question; an error undoes the page). It returns the cursor after the
// last question read and whether that was the last one.
//
// Reading and writing in one transaction keeps each message in order with
// what else the question announces: a question answered before it is not
// asked again, and one answered after it is announced after it.
func (s *Store) Reask(ctx context.Context, platforms []string, askedBy time.Time, cur ReaskCursor, limit int,
	build func(r *Record, shownOn []string) (Message, bool, error)) (next ReaskCursor, n int, done bool, err error) {
	if len(platforms) == 0 {
		return cur, 0, true, nil
	}
	const shownOn = "SELECT 1 FROM deliveries d WHERE d.question = q.id AND d.ok = 1 AND d.message_id != '' AND d.platform = ?"
	args := []any{cur.Tenant, cur.ID, ms(askedBy)}
	var lacking []string
	for _, p := range platforms {
		lacking = append(lacking, "NOT EXISTS ("+shownOn+")")
		args = append(args, p)
	}
	query := "SELECT " + recordColumns + `, (SELECT group_concat(platform) FROM deliveries d WHERE d.question = q.id AND d.ok = 1 AND d.message_id != '')
		FROM questions q WHERE state = 'pending' AND (tenant, id) > (?, ?) AND asked_at <= ? AND (` + strings.Join(lacking, " OR ") + `)
		ORDER BY tenant, id LIMIT ?`
	err = s.tx(ctx, func(tx *txn) error {
		next, n, done = cur, 0, false
		rows, err := tx.query(ctx, query, append(args, limit)...)
		if err != nil {
			return err
		}
		var msgs []Message
		read := 0
		for rows.Next() {
			var shown sql.NullString
			r, err := scanRecord(rows, &shown)
			if err != nil {
				rows.Close()
				return err
			}
			read++
			next = ReaskCursor{Tenant: r.Tenant, ID: r.ID}
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
		done = read < limit
		n = len(msgs)
		return outboxTx(ctx, tx, msgs, time.Now())
	})
	if err != nil {
		return cur, 0, false, fmt.Errorf("store: ask pending questions again for %s: %w", strings.Join(platforms, ", "), err)
	}
	return next, n, done, nil
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
