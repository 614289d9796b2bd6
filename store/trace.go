package store

import (
	"context"
	"fmt"

	"github.com/askbridge/askbridge/store/record"
)

// JobAudit returns the transitions of every question of a job, every task
// version, in the order they were written. The trace merges them with the
// job log (docs/design.md "The trace").
func (s *Store) JobAudit(ctx context.Context, tenant, job string) ([]record.JobAuditEntry, error) {
	rows, err := s.rs.query(ctx, `SELECT a.id, a.question, q.question_id, q.task_version, a.from_state, a.to_state,
		a.by_id, a.via, a.reason, a.at
		FROM questions q JOIN audit a ON a.question = q.id
		WHERE q.tenant = ? AND q.job_id = ? ORDER BY a.id`, tenant, job)
	if err != nil {
		return nil, fmt.Errorf("store: read the audit of job %s/%s: %w", tenant, job, err)
	}
	defer rows.Close()
	var out []record.JobAuditEntry
	for rows.Next() {
		var e record.JobAuditEntry
		var at int64
		if err := rows.Scan(&e.ID, &e.Question, &e.QuestionID, &e.TaskVersion, &e.From, &e.To, &e.By, &e.Via, &e.Reason, &at); err != nil {
			return nil, fmt.Errorf("store: read the audit of job %s/%s: %w", tenant, job, err)
		}
		e.At = fromMS(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// JobQuestions returns every question of a job, every task version, in the
// order they were asked.
func (s *Store) JobQuestions(ctx context.Context, tenant, job string) ([]record.Record, error) {
	rows, err := s.rs.query(ctx, "SELECT "+recordColumns+" FROM questions WHERE tenant = ? AND job_id = ? ORDER BY id", tenant, job)
	if err != nil {
		return nil, fmt.Errorf("store: read the questions of job %s/%s: %w", tenant, job, err)
	}
	defer rows.Close()
	var out []record.Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("store: read the questions of job %s/%s: %w", tenant, job, err)
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}
