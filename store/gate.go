package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// GateJob reads a job for the gate in one query from the read pool,
// through the jobs key and the questions_by_job index: the cost does not
// grow with the questions pending in other jobs.
func (s *Store) GateJob(ctx context.Context, tenant, job string) (record.GateJob, error) {
	var out record.GateJob
	rows, err := s.rs.query(ctx, `SELECT j.task_version, coalesce(q.question_id, ''), coalesce(q.body, '')
		FROM jobs j LEFT JOIN questions q ON q.tenant = j.tenant AND q.job_id = j.job_id AND q.state = 'pending'
		WHERE j.tenant = ? AND j.job_id = ? ORDER BY q.id`, tenant, job)
	if err != nil {
		return out, fmt.Errorf("store: gate read of %s/%s: %w", tenant, job, err)
	}
	defer rows.Close()
	for rows.Next() {
		var p record.GatePending
		var body string
		if err := rows.Scan(&out.Version, &p.QuestionID, &body); err != nil {
			return out, fmt.Errorf("store: gate read of %s/%s: %w", tenant, job, err)
		}
		out.Known = true
		if p.QuestionID != "" {
			p.Body = []byte(body)
			out.Pending = append(out.Pending, p)
		}
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("store: gate read of %s/%s: %w", tenant, job, err)
	}
	return out, nil
}

// GateCommit writes a batch of the gate's decisions in one transaction
// (group commit): executes in order, each seeing those before it, and
// every log entry. Nothing of the batch is written when it fails.
func (s *Store) GateCommit(ctx context.Context, batch []record.GateWrite) error {
	err := s.tx(ctx, func(tx *txn) error {
		entries := make([]record.LogEntry, 0, len(batch))
		for _, w := range batch {
			if w.Execute == nil {
				entries = append(entries, w.Log)
				continue
			}
			entry, err := executeTx(ctx, tx, w.Execute)
			if err != nil {
				return fmt.Errorf("execute proposal %s/%s: %w", w.Execute.Tenant, w.Execute.ProposalID, err)
			}
			entries = append(entries, entry)
		}
		return insertLog(ctx, tx, entries)
	})
	if err != nil {
		return fmt.Errorf("store: write %d gate decisions: %w", len(batch), err)
	}
	return nil
}

func executeTx(ctx context.Context, tx *txn, e *record.GateExecute) (record.LogEntry, error) {
	p, err := findProposalIn(ctx, tx, e.Tenant, e.ProposalID)
	if errors.Is(err, record.ErrNotFound) {
		p, err = nil, nil
	}
	if err != nil {
		return record.LogEntry{}, err
	}
	take, entry := e.Decide(p)
	if !take {
		return entry, nil
	}
	if err := record.Takeable(p); err != nil {
		return record.LogEntry{}, err
	}
	res, err := tx.exec(ctx, "UPDATE proposals SET state = ?, executed_at = ? WHERE tenant = ? AND proposal_id = ? AND state = ?",
		bridge.ProposalExecuted, ms(e.At), e.Tenant, e.ProposalID, bridge.ProposalApproved)
	if err != nil {
		return record.LogEntry{}, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return record.LogEntry{}, errors.New("the proposal changed under the transaction")
	}
	p.State, p.ExecutedAt = bridge.ProposalExecuted, fromMS(ms(e.At))
	return entry, nil
}

// SeedProposal writes a proposals row as given (tenant, id, job, action,
// arguments, expiry, key, state, executed_at), for p.Question: for tests
// that need a proposal in a given state. The runtime records proposals
// when it records their approvals (proposals.go).
func (s *Store) SeedProposal(ctx context.Context, p record.Proposal) error {
	args := string(p.Arguments)
	if args == "" {
		args = "{}"
	}
	_, err := s.ws.exec(ctx, `INSERT INTO proposals (tenant, proposal_id, job_id, question, action, arguments, expires_at,
		idempotency_key, state, executed_at, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.Tenant, p.ID, p.JobID, p.Question, p.Action, args, ms(p.ExpiresAt), p.IdempotencyKey, p.State, ms(p.ExecutedAt), ms(p.RecordedAt))
	if err != nil {
		return fmt.Errorf("store: seed proposal %s/%s: %w", p.Tenant, p.ID, err)
	}
	return nil
}
