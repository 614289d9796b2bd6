package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// Reading questions: one by its row id or its key, lists, counts and the
// audit trail.

// Get reads a question by its row id.
func (s *Store) Get(ctx context.Context, id int64) (*record.Record, error) {
	r, err := scanRecord(s.rs.queryRow(ctx, "SELECT "+recordColumns+" FROM questions WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, record.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: get question %d: %w", id, err)
	}
	return r, nil
}

// Find reads a question by key; TaskVersion 0 finds the latest version.
func (s *Store) Find(ctx context.Context, k record.Key) (*record.Record, error) {
	return findIn(ctx, s.rs, k)
}

// rowQuerier is a connection or a transaction that runs one-row queries.
type rowQuerier interface {
	queryRow(ctx context.Context, query string, args ...any) *sql.Row
}

func findIn(ctx context.Context, db rowQuerier, k record.Key) (*record.Record, error) {
	where, args := byKey(k)
	r, err := scanRecord(db.queryRow(ctx, "SELECT "+recordColumns+" FROM questions q"+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, record.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: find question %s: %w", k, err)
	}
	return r, nil
}

// byKey is the WHERE clause (and its arguments) that finds k in the
// questions table q: the latest version when k names none.
func byKey(k record.Key) (string, []any) {
	where := " WHERE q.tenant = ? AND q.job_id = ? AND q.question_id = ?"
	args := []any{k.Tenant, k.JobID, k.QuestionID}
	if k.TaskVersion != 0 {
		where += " AND q.task_version = ?"
		args = append(args, k.TaskVersion)
	}
	return where + " ORDER BY q.task_version DESC LIMIT 1", args
}

// FindAnswerable is Find, the job's version and the question's messages in
// one read; deciding an answer is the hot path.
func (s *Store) FindAnswerable(ctx context.Context, k record.Key) (*record.Answerable, error) {
	return findAnswerableIn(ctx, s.rs, k)
}

// answerableColumns follow recordColumns for an Answerable: the job's task
// version and the messages showing the question (q is the questions table).
const answerableColumns = `coalesce((SELECT j.task_version FROM jobs j WHERE j.tenant = q.tenant AND j.job_id = q.job_id), 0),
		coalesce((SELECT json_group_array(json_array(d.platform, d.channel, d.message_id, d.thread))
			FROM deliveries d WHERE d.question = q.id AND d.ok = 1 AND d.message_id != ''), '[]')`

// scanAnswerable reads recordColumns and answerableColumns.
func scanAnswerable(row scanner) (*record.Answerable, error) {
	var a record.Answerable
	var refs string
	r, err := scanRecord(row, &a.JobVersion, &refs)
	if err != nil {
		return nil, err
	}
	a.Record = r
	var rows [][4]string
	if err := json.Unmarshal([]byte(refs), &rows); err != nil {
		return nil, fmt.Errorf("messages of question %s: %w", r.Key, err)
	}
	for _, m := range rows {
		a.Messages = append(a.Messages, bridge.MessageRef{Platform: m[0], Channel: m[1], MessageID: m[2], Thread: m[3]})
	}
	return &a, nil
}

func findAnswerableIn(ctx context.Context, db rowQuerier, k record.Key) (*record.Answerable, error) {
	where, args := byKey(k)
	a, err := scanAnswerable(db.queryRow(ctx, "SELECT "+recordColumns+", "+answerableColumns+" FROM questions q"+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, record.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: find question %s: %w", k, err)
	}
	return a, nil
}

// List returns one page of questions. It reads through indexes only, so
// the first page of one tenant is quick with a million pending questions.
func (s *Store) List(ctx context.Context, f record.ListFilter) ([]record.Record, error) {
	var conds []string
	var args []any
	if f.State != "" {
		conds = append(conds, "state = ?")
		args = append(args, f.State)
	}
	if f.Tenant != "" {
		conds = append(conds, "tenant = ?")
		args = append(args, f.Tenant)
	}
	if f.JobID != "" {
		conds = append(conds, "job_id = ?")
		args = append(args, f.JobID)
	}
	if f.AfterID > 0 {
		conds = append(conds, "id > ?")
		args = append(args, f.AfterID)
	}
	limit := f.Limit
	if limit <= 0 || limit > 500 {
		limit = 50
	}
	q := "SELECT " + recordColumns + " FROM questions"
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	rows, err := s.rs.query(ctx, q+" ORDER BY id LIMIT ?", append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("store: list: %w", err)
	}
	defer rows.Close()
	var out []record.Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list: %w", err)
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}

// Audit returns a question's transitions, oldest first.
func (s *Store) Audit(ctx context.Context, question int64) ([]bridge.AuditEntry, error) {
	rows, err := s.rs.query(ctx, "SELECT from_state, to_state, by_id, via, reason, at FROM audit WHERE question = ? ORDER BY id", question)
	if err != nil {
		return nil, fmt.Errorf("store: audit %d: %w", question, err)
	}
	defer rows.Close()
	var out []bridge.AuditEntry
	for rows.Next() {
		var e bridge.AuditEntry
		var at int64
		if err := rows.Scan(&e.From, &e.To, &e.By, &e.Via, &e.Reason, &at); err != nil {
			return nil, fmt.Errorf("store: audit %d: %w", question, err)
		}
		e.At = fromMS(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// CountByState counts questions in each state.
func (s *Store) CountByState(ctx context.Context) (map[string]int64, error) {
	rows, err := s.rs.query(ctx, "SELECT state, COUNT(*) FROM questions GROUP BY state")
	if err != nil {
		return nil, fmt.Errorf("store: count: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("store: count: %w", err)
		}
		out[st] = n
	}
	return out, rows.Err()
}

// FindQuestionIDs finds the latest version of a question id in every job
// that has one (at most MaxQuestionIDJobs jobs); tenant and job narrow the
// search when given. The caller picks among them, say by what the asker
// may see.
func (s *Store) FindQuestionIDs(ctx context.Context, tenant, job, questionID string) ([]*record.Record, error) {
	q := "SELECT " + recordColumns + " FROM questions WHERE question_id = ?"
	args := []any{questionID}
	if tenant != "" {
		q += " AND tenant = ?"
		args = append(args, tenant)
	}
	if job != "" {
		q += " AND job_id = ?"
		args = append(args, job)
	}
	rows, err := s.rs.query(ctx, q+" ORDER BY task_version DESC, id DESC LIMIT 200", args...)
	if err != nil {
		return nil, fmt.Errorf("store: find question %s: %w", questionID, err)
	}
	defer rows.Close()
	var out []*record.Record
	seen := map[[2]string]bool{}
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("store: find question %s: %w", questionID, err)
		}
		if k := [2]string{r.Tenant, r.JobID}; !seen[k] && len(out) < record.MaxQuestionIDJobs {
			seen[k] = true
			out = append(out, r)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: find question %s: %w", questionID, err)
	}
	return out, nil
}
