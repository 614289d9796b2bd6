package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/askbridge/askbridge/store/record"
)

// RecordNotice writes a notice to its job's trail (kind LogNotice, the
// masked notice as body) and the messages announcing it to the outbox, in
// one transaction. A notice whose id the job's trail already holds is a
// redelivery: nothing is written, and the error is ErrDuplicate.
func (s *Store) RecordNotice(ctx context.Context, e record.LogEntry, noticeID string, msgs []record.Message) error {
	e.Kind = record.LogNotice
	err := s.tx(ctx, func(tx *txn) error {
		var one int
		err := tx.queryRow(ctx, "SELECT 1 FROM job_log WHERE tenant = ? AND job_id = ? AND kind = ? AND json_extract(body, '$.notice_id') = ? LIMIT 1",
			e.Tenant, e.JobID, record.LogNotice, noticeID).Scan(&one)
		switch {
		case err == nil:
			return record.ErrDuplicate
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if err := insertLog(ctx, tx, []record.LogEntry{e}); err != nil {
			return err
		}
		return outboxTx(ctx, tx, msgs, e.At)
	})
	if errors.Is(err, record.ErrDuplicate) {
		return err
	}
	if err != nil {
		return fmt.Errorf("store: record notice %s of %s/%s: %w", noticeID, e.Tenant, e.JobID, err)
	}
	return nil
}
