package jsstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store"
)

// questionDoc is everything about one question, under q.<id>: one
// compare-and-set covers a question's state, answer, ladder, deliveries and
// audit trail, as one row and its child rows do in SQLite.
type questionDoc struct {
	Record store.Record `json:"record"`
	// Steps are the ladder steps not yet taken, the timeout last.
	Steps     []store.Step `json:"steps,omitempty"`
	Staleness int          `json:"staleness,omitempty"`
	// Deliveries are the platforms' reports, one per platform.
	Deliveries []store.DeliveryRow  `json:"deliveries,omitempty"`
	Audit      []bridge.AuditEntry  `json:"audit,omitempty"`
	Snoozes    map[string]snoozeDoc `json:"snoozes,omitempty"`
	// Proposal names the approval's proposal (prop.<tenant>.<proposal>).
	Proposal string `json:"proposal,omitempty"`
}

// snoozeDoc is one person's snoozed reminder.
type snoozeDoc struct {
	Until time.Time `json:"until"`
	Step  int       `json:"step"`
}

// jobDoc is a job's current task version, under job.<tenant>.<job>.
type jobDoc struct {
	TaskVersion int64     `json:"task_version"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// getQuestion reads question q's document; ok is false when there is none.
func (s *Store) getQuestion(ctx context.Context, q int64) (*questionDoc, uint64, bool, error) {
	var d questionDoc
	rev, ok, err := s.getJSON(ctx, keyQuestion(q), &d)
	if err != nil || !ok {
		return nil, rev, ok, err
	}
	return &d, rev, true, nil
}

// nextIDs takes n consecutive ids from counter name and returns the first.
// Ids start at 1 and are never handed out twice, whichever replica asks.
func (s *Store) nextIDs(ctx context.Context, name string, n int) (int64, error) {
	var first int64
	err := retry(ctx, "take ids "+name, func() error {
		data, rev, ok, err := s.get(ctx, keySeq(name))
		if err != nil {
			return err
		}
		var last int64
		if ok {
			if last, err = strconv.ParseInt(string(data), 10, 64); err != nil {
				return fmt.Errorf("jsstore: counter %s holds %q: %w", name, data, err)
			}
		}
		t := &txn{}
		t.put(keySeq(name), rev, []byte(strconv.FormatInt(last+int64(n), 10)))
		if err := s.commit(ctx, t); err != nil {
			return err
		}
		first = last + 1
		return nil
	})
	return first, err
}
