package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/askbridge/askbridge/store/record"
)

// RecordExecution records an execution report: the result and detail, the
// proposal executed (or execution_failed), executed_at when no gate execute
// set it, the log entry and the messages, in one transaction. It returns
// the proposal as it now stands; ErrNotFound when the job has no such
// proposal, ErrDuplicate (and the proposal as first reported) when it was
// reported before, ErrProposalNotApproved when it was never approved.
func (s *Store) RecordExecution(ctx context.Context, e record.ExecutionReport) (*record.Proposal, error) {
	var out *record.Proposal
	err := s.tx(ctx, func(tx *txn) error {
		p, err := findProposalIn(ctx, tx, e.Tenant, e.ProposalID)
		if err != nil {
			return err
		}
		out = p
		if err := e.Apply(p); err != nil {
			if errors.Is(err, record.ErrNotFound) {
				out = nil // another job's: not this reporter's to learn of
			}
			return err
		}
		_, err = tx.exec(ctx, `UPDATE proposals SET state = ?, executed_at = ?, result = ?, detail = ?, reported_at = ?
			WHERE tenant = ? AND proposal_id = ? AND reported_at = 0`,
			p.State, ms(p.ExecutedAt), p.Result, p.Detail, ms(p.ReportedAt), p.Tenant, p.ID)
		if err != nil {
			return err
		}
		q, err := scanAnswerable(tx.queryRow(ctx, "SELECT "+recordColumns+", "+answerableColumns+" FROM questions q WHERE q.id = ?", p.Question))
		if err != nil {
			return fmt.Errorf("question of proposal %s: %w", p.ID, err)
		}
		var msgs []record.Message
		if e.Announce != nil {
			msgs = e.Announce(p, q)
		}
		if err := outboxTx(ctx, tx, msgs, e.At); err != nil {
			return err
		}
		return insertLog(ctx, tx, e.Log)
	})
	switch {
	case errors.Is(err, record.ErrNotFound), errors.Is(err, record.ErrDuplicate), errors.Is(err, record.ErrProposalNotApproved):
		return out, err
	case errors.Is(err, sql.ErrNoRows):
		return nil, record.ErrNotFound
	case err != nil:
		return nil, fmt.Errorf("store: record execution of %s/%s: %w", e.Tenant, e.ProposalID, err)
	}
	return out, nil
}
