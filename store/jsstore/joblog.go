package jsstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/askbridge/askbridge/store/record"
)

// AppendLog writes entries to their jobs' trails in one atomic batch (in
// batches of maxBatch when there are more).
func (s *Store) AppendLog(ctx context.Context, entries []record.LogEntry) error {
	for lo := 0; lo < len(entries); lo += maxBatch {
		t := &txn{}
		if err := t.appendLog(entries[lo:min(lo+maxBatch, len(entries))]); err != nil {
			return err
		}
		if err := s.commit(ctx, t); err != nil {
			return fmt.Errorf("jsstore: append %d job log entries: %w", len(entries), err)
		}
	}
	return nil
}

// JobLog returns a job's trail in the order it was written: its entries'
// revisions.
func (s *Store) JobLog(ctx context.Context, tenant, job string) ([]record.LogEntry, error) {
	list, err := s.list(ctx, "log.*.*."+enc(tenant)+"."+enc(job)+".*")
	if err != nil {
		return nil, fmt.Errorf("jsstore: read job log of %s/%s: %w", tenant, job, err)
	}
	out := make([]record.LogEntry, 0, len(list))
	for _, en := range list {
		e, err := logEntry(tenant, job, en)
		if err != nil {
			return nil, fmt.Errorf("jsstore: read job log of %s/%s: %w", tenant, job, err)
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b record.LogEntry) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// GateLogExpiry is how long a gate decision stays: the bucket deletes it
// then (storetest.GateLogExpiry).
func (s *Store) GateLogExpiry() time.Duration { return gateLogTTL }

// PruneGateLog deletes nothing: every gate decision is written with a key
// TTL of gateLogTTL (the runtime's retention), and the bucket deletes it
// when that ends, on every replica's behalf and without reading the log.
func (s *Store) PruneGateLog(ctx context.Context, before time.Time) (int64, error) {
	return 0, nil
}
