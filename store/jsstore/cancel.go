package jsstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// readDoc is a question's document as read, with its revision: what a
// transition writing it must expect.
type readDoc struct {
	d   *questionDoc
	rev uint64
}

// pendingOfJob reads the job's pending questions that keep selects (nil
// for all), by id, through the state index.
func (s *Store) pendingOfJob(ctx context.Context, tenant, job string, keep func(*record.Record) bool) ([]readDoc, error) {
	keys, err := s.states(ctx, stateFilter(tenant, bridge.StatePending, job))
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(keys))
	for i, k := range keys {
		ids[i] = k.id
	}
	docs, err := s.readDocs(ctx, ids)
	if err != nil {
		return nil, err
	}
	// The index and the document are written together; a document read
	// after a transition that ended it is no longer pending.
	return slices.DeleteFunc(docs, func(rd readDoc) bool {
		return rd.d == nil || rd.d.Record.State != bridge.StatePending || (keep != nil && !keep(&rd.d.Record))
	}), nil
}

// endWrites is about how many keys ending a question writes besides its
// messages: its document, its state index twice and its due key.
const endWrites = 4

// endEach ends the pending questions docs in t, each with its messages
// msgs[i], as SQLite's settleTx, and returns their records. reserve is how
// many more keys t will take. When they do not all fit in one batch, it
// commits the first ones on their own instead, leaving t as it was, and
// says more: the caller reads again and goes on (the questions ended so
// far stay ended, as they would have been).
func (s *Store) endEach(ctx context.Context, t *txn, reserve int, docs []readDoc, msgs [][]record.Message,
	state string, at time.Time, by, via, reason string) (done []record.Record, more bool, err error) {
	total := len(t.writes) + reserve
	for i := range docs {
		total += endWrites + len(msgs[i])
	}
	target := t
	if more = total > maxBatch; more {
		target = &txn{}
	}
	for i, rd := range docs {
		if more && len(done) > 0 && len(target.writes)+endWrites+len(msgs[i]) > maxBatch {
			break
		}
		rd.d.endMinimal(state, at, by, via, reason)
		if err := target.putQuestion(rd.d, rd.rev); err != nil {
			return nil, false, err
		}
		if err := target.outbox(msgs[i], at); err != nil {
			return nil, false, err
		}
		done = append(done, rd.d.Record)
	}
	if more {
		if err := s.commit(ctx, target); err != nil {
			return nil, false, err
		}
	}
	return done, more, nil
}

// Cancel applies a JobCancel and returns the questions it ended, as
// SQLite's Cancel: a version bump supersedes every pending question of an
// older version, otherwise the job's pending questions (of one question
// id, when given) are cancelled. A cancel whose Key was applied before
// changes nothing and returns record.ErrDuplicate.
func (s *Store) Cancel(ctx context.Context, c record.JobCancel) ([]record.Record, error) {
	var ended []record.Record
	err := retry(ctx, "cancel "+c.Tenant+"/"+c.JobID, func() error {
		for {
			more, err := s.cancelOnce(ctx, &c, &ended)
			if err != nil || !more {
				return err
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("jsstore: cancel %s/%s: %w", c.Tenant, c.JobID, err)
	}
	return ended, nil
}

// cancelOnce is Cancel's read-decide-commit; more as endEach's.
func (s *Store) cancelOnce(ctx context.Context, c *record.JobCancel, ended *[]record.Record) (more bool, err error) {
	t := &txn{}
	if c.Key != "" {
		// Kept with the answer attempts' keys, and pruned with them; made
		// in the last batch only, so an interrupted cancel goes on when
		// its message comes again.
		_, rev, ok, err := s.get(ctx, keyAttempt(c.Key))
		if err != nil {
			return false, err
		}
		if ok {
			return false, record.ErrDuplicate
		}
		if err := t.putAttempt(c.Key, rev, c.At); err != nil {
			return false, err
		}
	}
	var jobRev uint64 // what raising the job must expect
	plan, err := record.PlanCancel(ctx, c, func(ctx context.Context) (int64, bool, error) {
		job, rev, known, err := s.getJob(ctx, c.Tenant, c.JobID)
		jobRev = rev
		return job.TaskVersion, known, err
	})
	if err != nil {
		return false, err
	}
	if plan.Raise {
		j := jobDoc{TaskVersion: c.NewVersion, UpdatedAt: msTime(c.At)}
		if err := t.putJSON(keyJob(c.Tenant, c.JobID), jobRev, j); err != nil {
			return false, err
		}
	}
	list, err := s.pendingOfJob(ctx, c.Tenant, c.JobID, plan.Ends)
	if err != nil {
		return false, err
	}
	msgs := make([][]record.Message, len(list))
	for i := range list {
		msgs[i] = c.Announce(list[i].d.Record, plan.State)
	}
	done, more, err := s.endEach(ctx, t, 0, list, msgs, plan.State, c.At, c.By, c.Via, plan.Reason)
	if err != nil {
		return false, err
	}
	if !more {
		if err := s.commit(ctx, t); err != nil {
			return false, err
		}
	}
	*ended = append(*ended, done...)
	return more, nil
}

// Enqueue writes messages to the outbox on their own, in batches.
func (s *Store) Enqueue(ctx context.Context, msgs []record.Message) error {
	at := now()
	for len(msgs) > 0 {
		n := min(len(msgs), maxBatch)
		t := &txn{}
		if err := t.outbox(msgs[:n], at); err != nil {
			return err
		}
		if err := s.commit(ctx, t); err != nil {
			return fmt.Errorf("jsstore: enqueue: %w", err)
		}
		msgs = msgs[n:]
	}
	return nil
}
