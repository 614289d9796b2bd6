package jsstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// ErrNotEmpty refuses to move a record into one that already holds
// questions: the two would share ids.
var ErrNotEmpty = errors.New("the JetStream record already holds questions")

// ImportCounts says what an import wrote.
type ImportCounts struct {
	Questions, Pending, Jobs, Proposals, Log, Attempts, Outbox int
}

// Importer writes a record exported from another store (store.Export)
// into an empty JetStream record, keeping its question ids, so that the
// cards already posted and the job logs that name them stay right.
type Importer struct {
	s      *Store
	t      *txn
	maxID  int64
	counts ImportCounts
}

var _ record.Importer = (*Importer)(nil)

// flushAt is how many writes an import gathers before it commits them:
// below an atomic batch's limit, with room for one more question's keys.
const flushAt = maxBatch - 50

// NewImporter checks that the record is empty and returns an importer
// into it.
func NewImporter(ctx context.Context, s *Store) (*Importer, error) {
	// Any question at all, even of an import that stopped half-way.
	_, _, used, err := s.get(ctx, "q.>")
	if err != nil {
		return nil, err
	}
	if used {
		return nil, fmt.Errorf("%w (delete the bucket %s to start again)", ErrNotEmpty, Bucket)
	}
	return &Importer{s: s, t: &txn{}}, nil
}

// add commits what was gathered when the batch is full.
func (im *Importer) add(ctx context.Context) error {
	if len(im.t.writes) < flushAt {
		return nil
	}
	return im.flush(ctx)
}

func (im *Importer) flush(ctx context.Context) error {
	if err := im.s.commit(ctx, im.t); err != nil {
		return fmt.Errorf("jsstore: import: %w", err)
	}
	im.t = &txn{}
	return nil
}

// Job records a job's task version.
func (im *Importer) Job(ctx context.Context, j record.ExportedJob) error {
	if err := im.t.putJSON(keyJob(j.Tenant, j.JobID), 0, jobDoc{TaskVersion: j.TaskVersion, UpdatedAt: msTime(j.UpdatedAt)}); err != nil {
		return err
	}
	im.counts.Jobs++
	return im.add(ctx)
}

// Question records a question with its ladder, deliveries, audit trail
// and snoozes, and the keys that index it.
func (im *Importer) Question(ctx context.Context, q record.ExportedQuestion) error {
	d := &questionDoc{Record: q.Record, Steps: q.Steps, Staleness: q.Staleness, Deliveries: q.Deliveries, Proposal: q.ProposalID}
	for _, a := range q.Audit {
		d.Audit = append(d.Audit, auditDoc{AuditEntry: a})
	}
	for _, sn := range q.Snoozes {
		if d.Snoozes == nil {
			d.Snoozes = map[string]snoozeDoc{}
		}
		d.Snoozes[sn.Identity] = snoozeDoc{Until: msTime(sn.Until), Step: sn.Step}
	}
	if err := im.t.putQuestion(d, 0); err != nil {
		return err
	}
	r := q.Record
	im.t.put(keyQuestionVersion(r.Tenant, r.JobID, r.QuestionID, r.TaskVersion), 0, []byte(strconv.FormatInt(r.ID, 10)))
	im.maxID = max(im.maxID, r.ID)
	im.counts.Questions++
	if r.State == bridge.StatePending {
		im.counts.Pending++
	}
	return im.add(ctx)
}

// Proposal records a proposal as it stands.
func (im *Importer) Proposal(ctx context.Context, p record.Proposal) error {
	if err := im.t.putJSON(keyProposal(p.Tenant, p.ID), 0, p); err != nil {
		return err
	}
	im.counts.Proposals++
	return im.add(ctx)
}

// Log appends an entry to its job's log, after those imported before it.
func (im *Importer) Log(ctx context.Context, e record.LogEntry) error {
	if err := im.t.appendLog([]record.LogEntry{e}); err != nil {
		return err
	}
	im.counts.Log++
	return im.add(ctx)
}

// Attempt marks an attempt id decided.
func (im *Importer) Attempt(ctx context.Context, a record.ExportedAttempt) error {
	if err := im.t.putAttempt(a.ID, 0, a.At); err != nil {
		return err
	}
	im.counts.Attempts++
	return im.add(ctx)
}

// Outbox queues a message the old store had not yet published.
func (im *Importer) Outbox(ctx context.Context, m record.Message, createdAt time.Time) error {
	if err := im.t.outbox([]record.Message{m}, createdAt); err != nil {
		return err
	}
	im.counts.Outbox++
	return im.add(ctx)
}

// Meta copies a setting; the old record's own name is not carried over.
func (im *Importer) Meta(ctx context.Context, key, value string) error {
	if key == "instance" {
		return nil
	}
	im.t.put(keyMeta(key), 0, []byte(value))
	return im.add(ctx)
}

// Finish commits what is left and sets the question counter past the
// imported ids.
func (im *Importer) Finish(ctx context.Context) (ImportCounts, error) {
	im.t.put(keySeq("question"), 0, []byte(strconv.FormatInt(im.maxID, 10)))
	if err := im.flush(ctx); err != nil {
		return ImportCounts{}, err
	}
	return im.counts, nil
}
