package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// Kinds of job log entries: what the job's trail records beside its
// questions' transitions (the audit table).
const (
	LogGate     = "gate"
	LogRefused  = "refused"
	LogApproval = "approval"
	LogExecute  = "execute"
	LogExecuted = "executed"
	LogNotice   = "notice"
)

// LogEntry is one entry of a job's trail. Body is JSON whose shape Kind
// says; the store keeps it as given.
type LogEntry struct {
	ID         int64
	Tenant     string
	JobID      string
	Kind       string
	QuestionID string
	Body       json.RawMessage
	At         time.Time
}

// AppendLog writes entries to their jobs' trails in one transaction.
func (s *Store) AppendLog(ctx context.Context, entries []LogEntry) error {
	if len(entries) == 0 {
		return nil
	}
	if err := s.tx(ctx, func(tx *txn) error { return insertLog(ctx, tx, entries) }); err != nil {
		return fmt.Errorf("store: append %d job log entries: %w", len(entries), err)
	}
	return nil
}

// insertLog writes entries inside a transaction, in a few statements.
func insertLog(ctx context.Context, tx *txn, entries []LogEntry) error {
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
func (s *Store) JobLog(ctx context.Context, tenant, job string) ([]LogEntry, error) {
	rows, err := s.rs.query(ctx, "SELECT id, tenant, job_id, kind, question_id, body, at FROM job_log WHERE tenant = ? AND job_id = ? ORDER BY id", tenant, job)
	if err != nil {
		return nil, fmt.Errorf("store: read job log of %s/%s: %w", tenant, job, err)
	}
	defer rows.Close()
	var out []LogEntry
	for rows.Next() {
		e, err := scanLogEntry(rows)
		if err != nil {
			return nil, fmt.Errorf("store: read job log of %s/%s: %w", tenant, job, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func scanLogEntry(rows *sql.Rows) (LogEntry, error) {
	var e LogEntry
	var body string
	var at int64
	if err := rows.Scan(&e.ID, &e.Tenant, &e.JobID, &e.Kind, &e.QuestionID, &body, &at); err != nil {
		return e, err
	}
	e.Body = json.RawMessage(body)
	e.At = fromMS(at)
	return e, nil
}
