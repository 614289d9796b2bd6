package jsstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// questionDoc is everything about one question, under q.<id>: one
// compare-and-set covers a question's state, answer, ladder, deliveries and
// audit trail, as one row and its child rows do in SQLite.
type questionDoc struct {
	Record record.Record `json:"record"`
	// Steps are the ladder steps not yet taken, the timeout last.
	Steps     []record.Step `json:"steps,omitempty"`
	Staleness int           `json:"staleness,omitempty"`
	// Deliveries are the platforms' reports, one per platform.
	Deliveries []record.DeliveryRow `json:"deliveries,omitempty"`
	Audit      []auditDoc           `json:"audit,omitempty"`
	Snoozes    map[string]snoozeDoc `json:"snoozes,omitempty"`
	// Proposal names the approval's proposal (prop.<tenant>.<proposal>).
	Proposal string `json:"proposal,omitempty"`

	// What getQuestion read, so that putQuestion moves the state index,
	// stamps the audit entries and rewrites the due key as they changed.
	readState string
	readBody  []byte
	readAudit int
	readDue   *dueDoc
}

// auditDoc is one audit entry. Rev is the revision of the commit that
// wrote it, which orders a job's entries across its questions as SQLite's
// row ids do: 0 until the next write of its document stamps it, and read
// as the document's own revision until then.
type auditDoc struct {
	bridge.AuditEntry
	Rev uint64 `json:"rev,omitempty"`
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
	d.noteRead()
	return &d, rev, true, nil
}

// noteRead remembers what a document read holds, for putQuestion.
func (d *questionDoc) noteRead() {
	d.readState, d.readBody, d.readAudit = d.Record.State, d.Record.Body, len(d.Audit)
	if st, ok := nextStep(d.Steps); ok && d.Record.State == bridge.StatePending {
		d.readDue = &dueDoc{Question: d.Record.ID, Index: st.Index, Target: st.Target, Due: msTime(st.Due)}
	}
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

// msTime is t as SQLite keeps it: whole milliseconds, UTC; zero stays zero.
// Both stores return the same times.
func msTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}

// addAudit appends a transition to the question's audit trail.
func (d *questionDoc) addAudit(from, to, by, via, reason string, at time.Time) {
	d.Audit = append(d.Audit, auditDoc{AuditEntry: bridge.AuditEntry{
		From: from, To: to, By: by, Via: via, Reason: reason, At: msTime(at)}})
}

// auditEntries is the question's audit trail, each entry with the revision
// of the commit that wrote it; rev is the document's.
func (d *questionDoc) auditEntries(rev uint64) []auditDoc {
	out := slices.Clone(d.Audit)
	for i := range out {
		if out[i].Rev == 0 {
			out[i].Rev = rev
		}
	}
	return out
}

// endMinimal moves a pending question to state with a minimal settlement
// (cancel, supersede, timeout), dropping its ladder, as SQLite's settleTx.
func (d *questionDoc) endMinimal(state string, at time.Time, by, via, reason string) {
	r := &d.Record
	r.State, r.By, r.Via, r.Text, r.SettledAt = state, by, via, reason, msTime(at)
	d.Steps = nil
	d.addAudit(bridge.StatePending, state, by, via, reason, at)
}

// putQuestion writes question document d, read at rev (0 for a new one),
// and in the same transaction what follows from it: the state index
// qs.<tenant>.<state>.<job>.<id> moved when its state changed and
// rewritten when its body did (its value holds the question's stateFacts,
// stateview.go), and the due
// key set to its earliest remaining step while it is pending (cleared
// otherwise). Every writer of a question document goes through it.
func (t *txn) putQuestion(d *questionDoc, rev uint64) error {
	r := &d.Record
	for i := range d.Audit[:min(d.readAudit, len(d.Audit))] {
		if d.Audit[i].Rev == 0 {
			d.Audit[i].Rev = rev
		}
	}
	if err := t.putJSON(keyQuestion(r.ID), rev, d); err != nil {
		return err
	}
	if d.readState != r.State || !bytes.Equal(d.readBody, r.Body) {
		if d.readState != "" && d.readState != r.State {
			t.delBlind(keyState(r.Tenant, d.readState, r.JobID, r.ID))
		}
		facts, err := json.Marshal(factsOf(d))
		if err != nil {
			return fmt.Errorf("jsstore: the state index of question %d: %w", r.ID, err)
		}
		t.putBlind(keyState(r.Tenant, r.State, r.JobID, r.ID), facts, 0)
	}
	var due *dueDoc
	if st, ok := nextStep(d.Steps); ok && r.State == bridge.StatePending {
		due = &dueDoc{Question: r.ID, Index: st.Index, Target: st.Target, Due: msTime(st.Due)}
	}
	switch {
	case due == nil && d.readDue != nil:
		t.clearDue(r.Tenant, r.JobID, r.ID)
	case due != nil && (d.readDue == nil || *due != *d.readDue):
		if err := t.putDue(r.Tenant, r.JobID, *due); err != nil {
			return err
		}
	}
	d.readState, d.readBody, d.readAudit, d.readDue = r.State, r.Body, len(d.Audit), due
	return nil
}

// dueDoc is a pending question's next ladder step or its timeout, under
// due.<tenant>.<job>.<id>: every replica watches due.> for what falls due.
type dueDoc struct {
	Question int64     `json:"question"`
	Index    int       `json:"index"`
	Target   string    `json:"target"`
	Due      time.Time `json:"due"`
}

// nextStep is the step of steps that falls due first (by index among
// those due at once), as SQLite orders its steps table.
func nextStep(steps []record.Step) (record.Step, bool) {
	if len(steps) == 0 {
		return record.Step{}, false
	}
	return slices.MinFunc(steps, func(a, b record.Step) int {
		return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.Index, b.Index))
	}), true
}

// putDue sets question d.Question's due key. It is written blind: only a
// transaction holding the question document's revision writes it.
func (t *txn) putDue(tenant, job string, d dueDoc) error {
	data, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("jsstore: encode the due step of question %d: %w", d.Question, err)
	}
	t.putBlind(keyDue(tenant, job, d.Question), data, 0)
	return nil
}

// clearDue deletes a question's due key: it has no step left.
func (t *txn) clearDue(tenant, job string, q int64) { t.delBlind(keyDue(tenant, job, q)) }

// getJob reads a job's document; ok is false for a job never asked about.
func (s *Store) getJob(ctx context.Context, tenant, job string) (jobDoc, uint64, bool, error) {
	var j jobDoc
	rev, ok, err := s.getJSON(ctx, keyJob(tenant, job), &j)
	return j, rev, ok, err
}

// attemptDoc is a decided attempt's dedupe key, under att.<attempt>: when
// it was decided. Expires says the key goes on its own after attemptTTL;
// keys written before they did are pruned (PruneAttempts).
type attemptDoc struct {
	At      time.Time `json:"at"`
	Expires bool      `json:"expires,omitempty"`
}

// attemptTTL is how long an attempt's key stays: as long as the runtime
// keeps attempt ids (runtime/prune.go), a day past the answers stream's 30
// days, after which no attempt can be delivered again.
const attemptTTL = 31 * 24 * time.Hour

// AttemptExpiry is how long an attempt's key stays: the bucket deletes it
// then (storetest.AttemptExpiry).
func (s *Store) AttemptExpiry() time.Duration { return attemptTTL }

// putAttempt marks attempt decided at at; rev is what get read of its key
// (0, or a delete marker's revision), so two replicas deciding one attempt
// at once conflict and the second finds it decided.
func (t *txn) putAttempt(attempt string, rev uint64, at time.Time) error {
	data, err := json.Marshal(attemptDoc{At: msTime(at), Expires: true})
	if err != nil {
		return fmt.Errorf("jsstore: encode attempt %s: %w", attempt, err)
	}
	t.add(write{key: keyAttempt(attempt), rev: rev, value: data, ttl: attemptTTL})
	return nil
}
