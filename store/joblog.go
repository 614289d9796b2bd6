package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/askbridge/askbridge/store/record"
)

// AppendLog writes entries to their jobs' trails in one transaction.
func (s *Store) AppendLog(ctx context.Context, entries []record.LogEntry) error {
	if len(entries) == 0 {
		return nil
	}
	if err := s.tx(ctx, func(tx *txn) error { return insertLog(ctx, tx, entries) }); err != nil {
		return fmt.Errorf("store: append %d job log entries: %w", len(entries), err)
	}
	return nil
}

// insertLog writes entries inside a transaction, in a few statements.
func insertLog(ctx context.Context, tx *txn, entries []record.LogEntry) error {
	rows := make([]any, 0, 6*len(entries))
	for _, e := range entries {
		body := string(e.Body)
		if body == "" {
			body = "{}"
		}
		rows = append(rows, e.Tenant, e.JobID, e.Kind, e.QuestionID, body, ms(e.At))
	}
	return execRows(ctx, tx, "INSERT INTO job_log (tenant, job_id, kind, question_id, body, at) VALUES ",
		"(?, ?, ?, ?, ?, ?)", "", 6, rows)
}

// JobLog returns a job's trail in the order it was written.
func (s *Store) JobLog(ctx context.Context, tenant, job string) ([]record.LogEntry, error) {
	rows, err := s.rs.query(ctx, "SELECT id, tenant, job_id, kind, question_id, body, at FROM job_log WHERE tenant = ? AND job_id = ? ORDER BY id", tenant, job)
	if err != nil {
		return nil, fmt.Errorf("store: read job log of %s/%s: %w", tenant, job, err)
	}
	defer rows.Close()
	var out []record.LogEntry
	for rows.Next() {
		e, err := scanLogEntry(rows)
		if err != nil {
			return nil, fmt.Errorf("store: read job log of %s/%s: %w", tenant, job, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func scanLogEntry(rows *sql.Rows) (record.LogEntry, error) {
	var e record.LogEntry
	var body string
	var at int64
	if err := rows.Scan(&e.ID, &e.Tenant, &e.JobID, &e.Kind, &e.QuestionID, &body, &at); err != nil {
		return e, err
	}
	e.Body = json.RawMessage(body)
	e.At = fromMS(at)
	return e, nil
}

// PruneGateLog deletes the gate's decisions written before the cutoff. The
// gate writes one for every request, thousands a second under load; the
// trail's other entries (refusals, approvals, executions, notices) follow
// people and are kept. Entries are appended in time order, so the old
// ones are the first ids: it reads from where the last prune stopped, in
// id order, and stops at the first entry at or after the cutoff, never
// scanning the newer part of the table.
func (s *Store) PruneGateLog(ctx context.Context, before time.Time) (int64, error) {
	s.logPruneMu.Lock()
	defer s.logPruneMu.Unlock()
	cutoff := ms(before)
	var total int64
	for {
		ids, next, done, err := s.oldGateEntries(ctx, s.logPruned, cutoff)
		if err != nil {
			return total, fmt.Errorf("store: prune gate log: %w", err)
		}
		for lo := 0; lo < len(ids); lo += pruneChunk {
			list, _ := json.Marshal(ids[lo:min(lo+pruneChunk, len(ids))])
			res, err := s.ws.exec(ctx, "DELETE FROM job_log WHERE id IN (SELECT value FROM json_each(?)) AND kind = 'gate'", string(list))
			if err != nil {
				return total, fmt.Errorf("store: prune gate log: %w", err)
			}
			n, _ := res.RowsAffected()
			total += n
		}
		s.logPruned = next
		if done {
			return total, nil
		}
	}
}

// oldGateEntries reads up to s.pruneScan entries after id after, and returns
// the gate entries among them older than cutoff, the id the next read
// starts after, and whether an entry at or after the cutoff (or the end of
// the table) was reached.
func (s *Store) oldGateEntries(ctx context.Context, after, cutoff int64) (ids []int64, next int64, done bool, err error) {
	rows, err := s.rs.query(ctx, "SELECT id, kind, at FROM job_log WHERE id > ? ORDER BY id LIMIT ?", after, s.pruneScan)
	if err != nil {
		return nil, after, false, err
	}
	defer rows.Close()
	next, seen := after, 0
	for rows.Next() {
		var id, at int64
		var kind string
		if err := rows.Scan(&id, &kind, &at); err != nil {
			return nil, after, false, err
		}
		seen++
		if at >= cutoff {
			return ids, next, true, rows.Err()
		}
		if kind == record.LogGate {
			ids = append(ids, id)
		}
		next = id
	}
	return ids, next, seen < s.pruneScan, rows.Err()
}
