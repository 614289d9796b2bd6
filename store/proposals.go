package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

const proposalColumns = `tenant, proposal_id, job_id, question, action, arguments, expires_at, idempotency_key, state,
	approvals, decided_at, executed_at, result, detail, reported_at, recorded_at`

func scanProposal(row scanner) (*record.Proposal, error) {
	var p record.Proposal
	var args, approvals string
	var expires, decided, executed, reported, recorded int64
	err := row.Scan(&p.Tenant, &p.ID, &p.JobID, &p.Question, &p.Action, &args, &expires, &p.IdempotencyKey, &p.State,
		&approvals, &decided, &executed, &p.Result, &p.Detail, &reported, &recorded)
	if err != nil {
		return nil, err
	}
	p.Arguments = json.RawMessage(args)
	if err := json.Unmarshal([]byte(approvals), &p.Approvals); err != nil {
		return nil, fmt.Errorf("approvals of proposal %s: %w", p.ID, err)
	}
	p.ExpiresAt, p.DecidedAt, p.ExecutedAt = fromMS(expires), fromMS(decided), fromMS(executed)
	p.ReportedAt, p.RecordedAt = fromMS(reported), fromMS(recorded)
	return &p, nil
}

func findProposalIn(ctx context.Context, db rowQuerier, tenant, id string) (*record.Proposal, error) {
	p, err := scanProposal(db.queryRow(ctx, "SELECT "+proposalColumns+" FROM proposals WHERE tenant = ? AND proposal_id = ?", tenant, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, record.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: proposal %s/%s: %w", tenant, id, err)
	}
	return p, nil
}

// FindProposal reads a proposal by its tenant and id.
func (s *Store) FindProposal(ctx context.Context, tenant, id string) (*record.Proposal, error) {
	return findProposalIn(ctx, s.rs, tenant, id)
}

// ProposalOf reads the proposal a question asks for now; ErrNotFound when
// it asks for none (or a later question asks for it since).
func (s *Store) ProposalOf(ctx context.Context, question int64) (*record.Proposal, error) {
	p, err := scanProposal(s.rs.queryRow(ctx, "SELECT "+proposalColumns+" FROM proposals WHERE question = ?", question))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, record.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: proposal of question %d: %w", question, err)
	}
	return p, nil
}

// askLookup reads what record.PlanAsk needs inside the ask's transaction.
type askLookup struct {
	tx *txn
	nq *record.NewQuestion
}

func (l askLookup) Job(ctx context.Context) (int64, bool, error) {
	return jobVersion(ctx, l.tx, l.nq.Tenant, l.nq.JobID)
}

// jobVersion reads a job's task version; known is false for a job never
// asked.
func jobVersion(ctx context.Context, tx *txn, tenant, job string) (version int64, known bool, err error) {
	err = tx.queryRow(ctx, "SELECT task_version FROM jobs WHERE tenant = ? AND job_id = ?", tenant, job).Scan(&version)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return version, err == nil, err
}

func (l askLookup) Recorded(ctx context.Context) (bool, error) {
	var exists int
	nq := l.nq
	err := l.tx.queryRow(ctx, "SELECT 1 FROM questions WHERE tenant = ? AND job_id = ? AND question_id = ? AND task_version = ?",
		nq.Tenant, nq.JobID, nq.QuestionID, nq.TaskVersion).Scan(&exists)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func (l askLookup) Proposal(ctx context.Context) (*record.Proposal, record.ProposalAsker, error) {
	var asker record.ProposalAsker
	p, err := findProposalIn(ctx, l.tx, l.nq.Tenant, l.nq.Proposal.ID)
	if errors.Is(err, record.ErrNotFound) {
		return nil, asker, nil
	}
	if err != nil {
		return nil, asker, err
	}
	if p.State == bridge.ProposalPending && p.JobID == l.nq.JobID {
		err = l.tx.queryRow(ctx, "SELECT question_id, task_version, state FROM questions WHERE id = ?", p.Question).
			Scan(&asker.QuestionID, &asker.TaskVersion, &asker.State)
		if err != nil {
			return nil, asker, fmt.Errorf("question of proposal %s: %w", p.ID, err)
		}
	}
	return p, asker, nil
}

// recordProposalTx writes p, the proposal row record.PlanAsk made of an
// ask: new, or over the pending row of the same id (a decided one is kept
// as it is).
func recordProposalTx(ctx context.Context, tx *txn, p *record.Proposal) error {
	approvals, err := json.Marshal(nonNil(p.Approvals))
	if err != nil {
		return err
	}
	_, err = tx.exec(ctx, `INSERT INTO proposals (tenant, proposal_id, job_id, question, action, arguments, expires_at, idempotency_key, state, approvals, recorded_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, proposal_id) DO UPDATE SET job_id = excluded.job_id, question = excluded.question, action = excluded.action,
			arguments = excluded.arguments, expires_at = excluded.expires_at, idempotency_key = excluded.idempotency_key,
			state = excluded.state, approvals = excluded.approvals, recorded_at = excluded.recorded_at
		WHERE proposals.state = 'pending'`,
		p.Tenant, p.ID, p.JobID, p.Question, p.Action, string(p.Arguments), ms(p.ExpiresAt), p.IdempotencyKey, p.State, string(approvals), ms(p.RecordedAt))
	if err != nil {
		return fmt.Errorf("record proposal %s: %w", p.ID, err)
	}
	return nil
}

// decideProposalTx applies a settled approval's decision to its proposal.
func decideProposalTx(ctx context.Context, tx *txn, question int64, d *record.ProposalDecision, at time.Time) error {
	var approvals any // NULL keeps them
	if d.Approvals != nil {
		raw, err := json.Marshal(d.Approvals)
		if err != nil {
			return err
		}
		approvals = string(raw)
	}
	_, err := tx.exec(ctx, "UPDATE proposals SET state = ?, approvals = coalesce(?, approvals), decided_at = ? WHERE tenant = ? AND proposal_id = ? AND question = ? AND state = 'pending'",
		d.State, approvals, ms(at), d.Tenant, d.ID, question)
	if err != nil {
		return fmt.Errorf("decide proposal %s: %w", d.ID, err)
	}
	return nil
}

// recordApprovalTx writes one more approval of a proposal whose question
// still waits; false when it no longer does.
func recordApprovalTx(ctx context.Context, tx *txn, a *record.ApprovalRecord) (bool, error) {
	approvals, err := json.Marshal(nonNil(a.Approvals))
	if err != nil {
		return false, err
	}
	res, err := tx.exec(ctx, `UPDATE proposals SET approvals = ? WHERE tenant = ? AND proposal_id = ? AND question = ? AND state = 'pending'
		AND EXISTS (SELECT 1 FROM questions WHERE id = ? AND state = 'pending')`,
		string(approvals), a.Tenant, a.ProposalID, a.Question, a.Question)
	if err != nil {
		return false, fmt.Errorf("record approval of proposal %s: %w", a.ProposalID, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func nonNil(a []bridge.Approval) []bridge.Approval {
	if a == nil {
		return []bridge.Approval{}
	}
	return a
}
