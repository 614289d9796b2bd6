package jsstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/askbridge/askbridge/store/record"
)

// RecordNotice writes a notice to its job's trail (kind LogNotice, the
// masked notice as body) and the messages announcing it to the outbox, in
// one atomic batch with a key marking the notice's id recorded
// (notice.<tenant>.<job>.<id>), created only if missing. A notice whose id
// is marked is a redelivery: nothing is written, and the error is
// record.ErrDuplicate, whichever replica recorded it first.
func (s *Store) RecordNotice(ctx context.Context, e record.LogEntry, noticeID string, msgs []record.Message) error {
	e.Kind = record.LogNotice
	key := keyNotice(e.Tenant, e.JobID, noticeID)
	err := retry(ctx, "record notice "+noticeID, func() error {
		_, rev, ok, err := s.get(ctx, key)
		if err != nil {
			return err
		}
		if ok {
			return record.ErrDuplicate
		}
		t := &txn{}
		t.put(key, rev, []byte(noticeID))
		if err := t.appendLog([]record.LogEntry{e}); err != nil {
			return err
		}
		if err := t.outbox(msgs, e.At); err != nil {
			return err
		}
		return s.commit(ctx, t)
	})
	if errors.Is(err, record.ErrDuplicate) {
		return err
	}
	if err != nil {
		return fmt.Errorf("jsstore: record notice %s of %s/%s: %w", noticeID, e.Tenant, e.JobID, err)
	}
	return nil
}
