package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// Unsent returns up to limit unsent rows after row afterID, oldest first,
// with OldAt set on those written before oldBefore.
func (s *Store) Unsent(ctx context.Context, afterID int64, limit int, oldBefore time.Time) ([]record.OutboxRow, error) {
	rows, err := s.rs.query(ctx, "SELECT id, subject, data, CASE WHEN created_at < ? THEN created_at ELSE 0 END FROM outbox WHERE sent_at IS NULL AND id > ? ORDER BY id LIMIT ?", ms(oldBefore), afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("store: outbox: %w", err)
	}
	defer rows.Close()
	var out []record.OutboxRow
	for rows.Next() {
		// Scanned in place: a row scanned into a variable of its own
		// would be allocated on its own, then copied.
		out = append(out, record.OutboxRow{Instance: s.instance})
		o := &out[len(out)-1]
		if err := rows.Scan(&o.ID, &o.Subject, &o.Data, &o.OldAt); err != nil {
			return nil, fmt.Errorf("store: outbox: %w", err)
		}
	}
	return out, rows.Err()
}

// MarkSentThrough marks the unsent rows up to row through published
// (after JetStream acknowledged them): the partial index of unsent rows
// finds them.
func (s *Store) MarkSentThrough(ctx context.Context, through int64, at time.Time) error {
	if through <= 0 {
		return nil
	}
	if _, err := s.ws.exec(ctx, "UPDATE outbox SET sent_at = ? WHERE id <= ? AND sent_at IS NULL", ms(at), through); err != nil {
		return fmt.Errorf("store: mark the outbox sent through row %d: %w", through, err)
	}
	return nil
}

// OutboxBacklog counts unsent rows.
func (s *Store) OutboxBacklog(ctx context.Context) (int64, error) {
	return s.OutboxBacklogAfter(ctx, 0)
}

// OutboxBacklogAfter counts unsent rows after row id after: the relay
// knows every row up to some id is published and only waits to mark it.
func (s *Store) OutboxBacklogAfter(ctx context.Context, after int64) (int64, error) {
	var n int64
	if err := s.rs.queryRow(ctx, "SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL AND id > ?", after).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: outbox backlog: %w", err)
	}
	return n, nil
}

// Pruning finds old rows with a read connection, Store.pruneScan
// (pruneScan unless a test lowers it) at a time, and deletes them
// pruneChunk to a transaction: one DELETE of an hour's rows held the
// single writer for seconds at a high answer rate, and every answer
// waited behind it.
const (
	pruneScan  = 10000
	pruneChunk = 500
)

// PruneSent deletes rows sent before the cutoff; JetStream keeps the messages.
func (s *Store) PruneSent(ctx context.Context, before time.Time) (int64, error) {
	// The newest row stays: SQLite gives a new row the highest id plus one,
	// so with the table emptied ids would start again at 1, below the
	// relay's cursor (and its Nats-Msg-Ids would repeat).
	n, err := s.pruneInChunks(ctx, "SELECT id FROM outbox WHERE sent_at IS NOT NULL AND sent_at < ? AND id < (SELECT max(id) FROM outbox) ORDER BY id LIMIT ?",
		"DELETE FROM outbox WHERE id IN (SELECT value FROM json_each(?)) AND sent_at IS NOT NULL", ms(before), func(rows *sql.Rows) (any, error) {
			var id int64
			return id, rows.Scan(&id)
		})
	if err != nil {
		return n, fmt.Errorf("store: prune outbox: %w", err)
	}
	return n, nil
}

// PruneAttempts forgets attempt ids decided before the cutoff: older than
// the answers stream keeps messages, none can be delivered again.
func (s *Store) PruneAttempts(ctx context.Context, before time.Time) (int64, error) {
	n, err := s.pruneInChunks(ctx, "SELECT attempt_id FROM attempts WHERE at < ? LIMIT ?",
		"DELETE FROM attempts WHERE attempt_id IN (SELECT value FROM json_each(?))", ms(before), func(rows *sql.Rows) (any, error) {
			var id string
			return id, rows.Scan(&id)
		})
	if err != nil {
		return n, fmt.Errorf("store: prune attempts: %w", err)
	}
	return n, nil
}

// pruneInChunks reads the keys of rows older than cutoff with find (which
// takes the cutoff and a limit) and deletes them with del (which takes a
// JSON array of keys), until find comes back short. The rows it deletes
// never change once old, so reading them outside the write transaction
// is safe. It returns how many rows it deleted.
func (s *Store) pruneInChunks(ctx context.Context, find, del string, cutoff int64, scan func(*sql.Rows) (any, error)) (int64, error) {
	var total int64
	for {
		keys, err := s.oldKeys(ctx, find, cutoff, scan)
		if err != nil {
			return total, err
		}
		before := total
		for lo := 0; lo < len(keys); lo += pruneChunk {
			list, err := json.Marshal(keys[lo:min(lo+pruneChunk, len(keys))])
			if err != nil {
				return total, err
			}
			res, err := s.ws.exec(ctx, del, string(list))
			if err != nil {
				return total, err
			}
			n, _ := res.RowsAffected()
			total += n
		}
		if len(keys) < s.pruneScan || total == before {
			return total, nil
		}
	}
}

func (s *Store) oldKeys(ctx context.Context, find string, cutoff int64, scan func(*sql.Rows) (any, error)) ([]any, error) {
	rows, err := s.rs.query(ctx, find, cutoff, s.pruneScan)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []any
	for rows.Next() {
		k, err := scan(rows)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// RecordDelivery stores a platform's report (the latest per platform wins)
// and returns every report for the question.
func (s *Store) RecordDelivery(ctx context.Context, question int64, d bridge.Delivery, at time.Time) ([]record.DeliveryRow, error) {
	if err := s.RecordDeliveries(ctx, []record.ReportedDelivery{{Question: question, Delivery: d}}, at); err != nil {
		return nil, err
	}
	return s.Deliveries(ctx, question)
}

// RecordDeliveries stores reports in one transaction, in order (the latest
// per question and platform wins): one commit for many cards shown.
func (s *Store) RecordDeliveries(ctx context.Context, reports []record.ReportedDelivery, at time.Time) error {
	err := s.tx(ctx, func(tx *txn) error {
		for _, r := range reports {
			d := r.Delivery
			var ref bridge.MessageRef
			if d.Message != nil {
				ref = *d.Message
			}
			var failure string
			if d.Failure != nil {
				b, _ := json.Marshal(d.Failure)
				failure = string(b)
			}
			ok := 0
			if d.OK {
				ok = 1
			}
			if _, err := tx.exec(ctx, `INSERT INTO deliveries (question, platform, ok, channel, message_id, thread, failure, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (question, platform) DO UPDATE SET ok = excluded.ok, channel = excluded.channel, message_id = excluded.message_id,
			thread = excluded.thread, failure = excluded.failure, at = excluded.at`,
				r.Question, d.Platform, ok, ref.Channel, ref.MessageID, ref.Thread, failure, ms(at)); err != nil {
				return fmt.Errorf("%s delivery of question %d: %w", d.Platform, r.Question, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: record deliveries: %w", err)
	}
	return nil
}

// Deliveries returns every platform's report on a question.
func (s *Store) Deliveries(ctx context.Context, question int64) ([]record.DeliveryRow, error) {
	rows, err := s.rs.query(ctx, "SELECT platform, ok, channel, message_id, thread, failure FROM deliveries WHERE question = ? ORDER BY platform", question)
	if err != nil {
		return nil, fmt.Errorf("store: deliveries of question %d: %w", question, err)
	}
	defer rows.Close()
	var out []record.DeliveryRow
	for rows.Next() {
		var d record.DeliveryRow
		var ok int
		var failure string
		if err := rows.Scan(&d.Platform, &ok, &d.Message.Channel, &d.Message.MessageID, &d.Message.Thread, &failure); err != nil {
			return nil, fmt.Errorf("store: deliveries of question %d: %w", question, err)
		}
		d.OK = ok == 1
		d.Message.Platform = d.Platform
		if failure != "" {
			var f bridge.Failure
			if json.Unmarshal([]byte(failure), &f) == nil {
				d.Failure = &f
			}
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// JobThreads returns the threads in which the questions of a job were
// shown: one reference a platform, channel and thread.
func (s *Store) JobThreads(ctx context.Context, tenant, job string) ([]bridge.MessageRef, error) {
	rows, err := s.rs.query(ctx, `SELECT DISTINCT d.platform, d.channel, d.thread FROM questions q JOIN deliveries d ON d.question = q.id
		WHERE q.tenant = ? AND q.job_id = ? AND d.ok = 1 AND d.thread != '' ORDER BY d.platform, d.channel, d.thread`, tenant, job)
	if err != nil {
		return nil, fmt.Errorf("store: threads of job %s/%s: %w", tenant, job, err)
	}
	defer rows.Close()
	var out []bridge.MessageRef
	for rows.Next() {
		var m bridge.MessageRef
		if err := rows.Scan(&m.Platform, &m.Channel, &m.Thread); err != nil {
			return nil, fmt.Errorf("store: threads of job %s/%s: %w", tenant, job, err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// Messages lists the chat messages showing a question.
func (s *Store) Messages(ctx context.Context, question int64) ([]bridge.MessageRef, error) {
	ds, err := s.Deliveries(ctx, question)
	if err != nil {
		return nil, err
	}
	var out []bridge.MessageRef
	for _, d := range ds {
		if d.OK && d.Message.MessageID != "" {
			out = append(out, d.Message)
		}
	}
	return out, nil
}
