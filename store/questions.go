package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

const recordColumns = `id, tenant, job_id, question_id, task_version, kind, body, state, asked_at, deadline,
	action, answer_raw, answer, answer_text, comment, by_id, by_name, via, text, settled_at`

type scanner interface{ Scan(...any) error }

// scanRecord reads recordColumns, then any extra columns into extra.
func scanRecord(row scanner, extra ...any) (*record.Record, error) {
	var r record.Record
	var body, raw, ans string
	var asked, deadline, settled int64
	// Sized for the extra columns too: appending them would copy it.
	dest := make([]any, 0, 20+len(extra))
	dest = append(dest, &r.ID, &r.Tenant, &r.JobID, &r.QuestionID, &r.TaskVersion, &r.Kind, &body, &r.State,
		&asked, &deadline, &r.Action, &raw, &ans, &r.AnswerText, &r.Comment, &r.By, &r.ByName, &r.Via, &r.Text, &settled)
	err := row.Scan(append(dest, extra...)...)
	if err != nil {
		return nil, err
	}
	r.Body = []byte(body)
	if raw != "" {
		r.AnswerRaw = []byte(raw)
	}
	if ans != "" {
		r.Answer = []byte(ans)
	}
	r.AskedAt, r.Deadline, r.SettledAt = fromMS(asked), fromMS(deadline), fromMS(settled)
	return &r, nil
}

// Ask records a new question before anything shows it: the question, its
// ladder, its audit entry and its outbox messages in one transaction. A
// newer task version supersedes the job's older pending questions in the
// same transaction.
func (s *Store) Ask(ctx context.Context, nq record.NewQuestion) (*record.AskResult, error) {
	res := &record.AskResult{}
	err := s.tx(ctx, func(tx *txn) error {
		*res = record.AskResult{}
		return askTx(ctx, tx, &nq, res)
	})
	if err != nil {
		return nil, fmt.Errorf("store: ask %s: %w", nq.Key, err)
	}
	return res, nil
}

// AskMany records many questions in one transaction (group commit), each
// as Ask would; the results are in the same order.
func (s *Store) AskMany(ctx context.Context, nqs []record.NewQuestion) ([]*record.AskResult, error) {
	results := make([]*record.AskResult, len(nqs))
	err := s.tx(ctx, func(tx *txn) error {
		for i := range nqs {
			results[i] = &record.AskResult{}
			if err := askTx(ctx, tx, &nqs[i], results[i]); err != nil {
				return fmt.Errorf("%s: %w", nqs[i].Key, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: ask %d questions: %w", len(nqs), err)
	}
	return results, nil
}

func askTx(ctx context.Context, tx *txn, nq *record.NewQuestion, res *record.AskResult) error {
	plan, err := record.PlanAsk(ctx, nq, askLookup{tx: tx, nq: nq})
	if err != nil {
		return err
	}
	res.Status, res.Problem, res.JobVersion = plan.Status, plan.Problem, plan.JobVersion
	if plan.Status != record.Asked {
		return nil
	}
	at := ms(nq.AskedAt)
	result, err := tx.exec(ctx, `INSERT INTO questions (tenant, job_id, question_id, task_version, kind, body, state, asked_at, deadline)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		nq.Tenant, nq.JobID, nq.QuestionID, nq.TaskVersion, nq.Kind, string(nq.Body), bridge.StatePending, at, ms(nq.Deadline))
	if err != nil {
		return err
	}
	if n, _ := result.RowsAffected(); n == 0 {
		return fmt.Errorf("question %s of job %s at version %d was recorded under the transaction", nq.QuestionID, nq.JobID, nq.TaskVersion)
	}
	id, err := result.LastInsertId()
	if err != nil {
		return err
	}
	if plan.Raise {
		if err := raiseJob(ctx, tx, nq.Tenant, nq.JobID, nq.TaskVersion, at); err != nil {
			return err
		}
	}
	if plan.Supersede {
		old, err := pendingOfJob(ctx, tx, nq.Tenant, nq.JobID, "task_version < ?", nq.TaskVersion)
		if err != nil {
			return err
		}
		for i := range old {
			var msgs []record.Message
			if nq.Supersede != nil {
				msgs = nq.Supersede(&old[i])
			}
			reason := record.SupersededText(nq.TaskVersion)
			if err := settleTx(ctx, tx, &old[i], bridge.StateSuperseded, nq.AskedAt, "", "", reason, msgs); err != nil {
				return err
			}
		}
		res.Superseded = old
	}
	if p := plan.Proposal; p != nil {
		p.Question = id
		if err := recordProposalTx(ctx, tx, p); err != nil {
			return err
		}
	}
	for _, st := range nq.Steps {
		if _, err := tx.exec(ctx, "INSERT INTO steps (question, idx, target, due) VALUES (?, ?, ?, ?)", id, st.Index, st.Target, ms(st.Due)); err != nil {
			return err
		}
	}
	if err := auditTx(ctx, tx, id, "", bridge.StatePending, "", "", "asked", nq.AskedAt); err != nil {
		return err
	}
	if err := outboxTx(ctx, tx, nq.Outbox, nq.AskedAt); err != nil {
		return err
	}
	res.Record = &record.Record{ID: id, Key: nq.Key, Kind: nq.Kind, Body: nq.Body, State: bridge.StatePending, AskedAt: fromMS(at), Deadline: fromMS(ms(nq.Deadline))}
	return nil
}

// raiseJob sets a job's task version (at in Unix milliseconds).
func raiseJob(ctx context.Context, tx *txn, tenant, job string, version, at int64) error {
	_, err := tx.exec(ctx, `INSERT INTO jobs (tenant, job_id, task_version, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (tenant, job_id) DO UPDATE SET task_version = excluded.task_version, updated_at = excluded.updated_at`,
		tenant, job, version, at)
	return err
}

func pendingOfJob(ctx context.Context, tx *txn, tenant, job, cond string, args ...any) ([]record.Record, error) {
	q := "SELECT " + recordColumns + " FROM questions WHERE tenant = ? AND job_id = ? AND state = 'pending'"
	if cond != "" {
		q += " AND " + cond
	}
	rows, err := tx.query(ctx, q+" ORDER BY id", append([]any{tenant, job}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []record.Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}

// settleTx moves a pending question to state with a minimal settlement
// (cancel, supersede), clearing its ladder.
func settleTx(ctx context.Context, tx *txn, r *record.Record, state string, at time.Time, by, via, reason string, msgs []record.Message) error {
	res, err := tx.exec(ctx, "UPDATE questions SET state = ?, by_id = ?, via = ?, text = ?, settled_at = ? WHERE id = ? AND state = 'pending'",
		state, by, via, reason, ms(at), r.ID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return record.ErrNotPending
	}
	if _, err := tx.exec(ctx, "DELETE FROM steps WHERE question = ?", r.ID); err != nil {
		return err
	}
	if err := auditTx(ctx, tx, r.ID, bridge.StatePending, state, by, via, reason, at); err != nil {
		return err
	}
	r.State, r.By, r.Via, r.Text, r.SettledAt = state, by, via, reason, fromMS(ms(at))
	return outboxTx(ctx, tx, msgs, at)
}

func auditTx(ctx context.Context, tx *txn, question int64, from, to, by, via, reason string, at time.Time) error {
	_, err := tx.exec(ctx, "INSERT INTO audit (question, from_state, to_state, by_id, via, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
		question, from, to, by, via, reason, ms(at))
	return err
}

func outboxTx(ctx context.Context, tx *txn, msgs []record.Message, at time.Time) error {
	return insertOutbox(ctx, tx, outboxRows(make([]any, 0, 3*len(msgs)), msgs, at))
}

// outboxRows appends to args the outbox rows of msgs, written at at.
func outboxRows(args []any, msgs []record.Message, at time.Time) []any {
	for _, m := range msgs {
		args = append(args, m.Subject, m.Data, ms(at))
	}
	return args
}

// insertOutbox writes rows made by outboxRows in multi-row statements, in
// order, so the row ids keep it.
func insertOutbox(ctx context.Context, tx *txn, rows []any) error {
	return execRows(ctx, tx, "INSERT INTO outbox (subject, data, created_at) VALUES ", "(?, ?, ?)", "", 3, rows)
}

// Settle ends a pending question: compare-and-set on pending, the answer,
// the audit entry, the attempt's dedupe key and the outbox in one
// transaction. It returns ErrNotPending when someone settled it first and
// ErrDuplicate when the attempt was decided before.
func (s *Store) Settle(ctx context.Context, st record.Settlement) error {
	errs, err := s.Decide(ctx, []record.Decision{{Settle: &st}})
	if err != nil {
		return fmt.Errorf("store: settle question %d: %w", st.Question, err)
	}
	return errs[0]
}

// Enqueue writes messages to the outbox on their own.
func (s *Store) Enqueue(ctx context.Context, msgs []record.Message) error {
	if err := s.tx(ctx, func(tx *txn) error { return outboxTx(ctx, tx, msgs, time.Now()) }); err != nil {
		return fmt.Errorf("store: enqueue: %w", err)
	}
	return nil
}

// SeenAttempt reports whether an attempt id was decided before.
func (s *Store) SeenAttempt(ctx context.Context, attemptID string) (bool, error) {
	var one int
	err := s.rs.queryRow(ctx, "SELECT 1 FROM attempts WHERE attempt_id = ?", attemptID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: attempt %s: %w", attemptID, err)
	}
	return true, nil
}

// Cancel applies a JobCancel and returns the questions it ended.
func (s *Store) Cancel(ctx context.Context, c record.JobCancel) ([]record.Record, error) {
	var ended []record.Record
	err := s.tx(ctx, func(tx *txn) error {
		ended = nil
		if c.Key != "" {
			// Kept with the answer attempts' ids, and pruned with them.
			res, err := tx.exec(ctx, "INSERT INTO attempts (attempt_id, at) VALUES (?, ?) ON CONFLICT DO NOTHING", c.Key, ms(c.At))
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return record.ErrDuplicate
			}
		}
		plan, err := record.PlanCancel(ctx, &c, func(ctx context.Context) (int64, bool, error) {
			return jobVersion(ctx, tx, c.Tenant, c.JobID)
		})
		if err != nil {
			return err
		}
		if plan.Raise {
			if err := raiseJob(ctx, tx, c.Tenant, c.JobID, c.NewVersion, ms(c.At)); err != nil {
				return err
			}
		}
		pending, err := pendingOfJob(ctx, tx, c.Tenant, c.JobID, "")
		if err != nil {
			return err
		}
		list := slices.DeleteFunc(pending, func(r record.Record) bool { return !plan.Ends(&r) })
		for i := range list {
			msgs := c.Announce(list[i], plan.State)
			if err := settleTx(ctx, tx, &list[i], plan.State, c.At, c.By, c.Via, plan.Reason, msgs); err != nil {
				return err
			}
		}
		ended = list
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: cancel %s/%s: %w", c.Tenant, c.JobID, err)
	}
	return ended, nil
}
