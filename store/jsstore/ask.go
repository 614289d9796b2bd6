package jsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// AskMany records questions before anything shows them, each as SQLite's
// Ask does: the question, its uniqueness key, its state index, its ladder's
// due key, its audit entry, its proposal and its outbox messages, with the
// job's older pending questions superseded with it when the task version
// moves on. The results are in the same order.
//
// Questions of different jobs commit together in one atomic batch (group
// commit); a question whose job or proposal the batch holds already waits
// for the next, so that it reads what the one before it wrote. Unlike
// SQLite's single transaction, an error leaves the batches before it
// recorded (asking again finds them Duplicate).
func (s *Store) AskMany(ctx context.Context, nqs []record.NewQuestion) ([]*record.AskResult, error) {
	results := make([]*record.AskResult, len(nqs))
	if len(nqs) == 0 {
		return results, nil
	}
	first, err := s.nextIDs(ctx, "question", len(nqs))
	if err != nil {
		return nil, fmt.Errorf("jsstore: ask %d questions: %w", len(nqs), err)
	}
	pre, err := s.prefetch(ctx, askReads(nqs))
	if err != nil {
		return nil, fmt.Errorf("jsstore: ask %d questions: %w", len(nqs), err)
	}
	return s.askAs(ctx, nqs, first, pre)
}

// askReads are the keys asking nqs reads: their uniqueness keys, jobs and
// proposals.
func askReads(nqs []record.NewQuestion) []string {
	var keys []string
	for i := range nqs {
		keys = append(keys, keyQuestionVersion(nqs[i].Tenant, nqs[i].JobID, nqs[i].QuestionID, nqs[i].TaskVersion))
		keys = append(keys, askKeys(&nqs[i])...)
	}
	return keys
}

// askAs asks nqs as the questions first, first+1, ..., deciding each first
// with what pre read.
func (s *Store) askAs(ctx context.Context, nqs []record.NewQuestion, first int64, pre *prefetched) ([]*record.AskResult, error) {
	results := make([]*record.AskResult, len(nqs))
	b := &askBatch{s: s, nqs: nqs, first: first, results: results, pending: make([]*record.AskResult, len(nqs)),
		superseded: make([][]record.Record, len(nqs)), touched: map[string]bool{}, pre: pre}
	for i := range nqs {
		if err := b.add(ctx, i); err != nil {
			return nil, fmt.Errorf("jsstore: ask %d questions: %s: %w", len(nqs), nqs[i].Key, err)
		}
	}
	if err := b.flush(ctx); err != nil {
		return nil, fmt.Errorf("jsstore: ask %d questions: %w", len(nqs), err)
	}
	return results, nil
}

// askBatch gathers the writes of several questions of an AskMany into one
// atomic batch.
type askBatch struct {
	s       *Store
	nqs     []record.NewQuestion
	first   int64
	results []*record.AskResult
	// pending are the results of the questions t holds, final once it
	// commits.
	pending []*record.AskResult
	// superseded are the questions each question ended in batches of
	// their own, when they were too many for one.
	superseded [][]record.Record
	t          txn
	held       []int
	// touched are the job and proposal keys of the questions t holds.
	touched map[string]bool
	// pre are the keys the questions read, read at once; each question's
	// first plan takes them, a plan again reads afresh.
	pre *prefetched
}

// askKeys are the keys asking nq reads that another question of the
// batch may write: its job's and its proposal's.
func askKeys(nq *record.NewQuestion) []string {
	keys := []string{keyJob(nq.Tenant, nq.JobID)}
	if nq.Proposal != nil {
		keys = append(keys, keyProposal(nq.Tenant, nq.Proposal.ID))
	}
	return keys
}

// add asks question i: decided now, committed with the batch.
func (b *askBatch) add(ctx context.Context, i int) error {
	keys := askKeys(&b.nqs[i])
	if slices.ContainsFunc(keys, func(k string) bool { return b.touched[k] }) {
		if err := b.flush(ctx); err != nil {
			return err
		}
	}
	var t *txn
	var res *record.AskResult
	err := retry(ctx, "ask "+b.nqs[i].Key.String(), func() (err error) {
		res, t, err = b.plan(ctx, i)
		return err
	})
	if err != nil {
		return err
	}
	if t.empty() { // Duplicate, Stale or Refused: nothing to write
		b.results[i] = res
		return nil
	}
	if len(b.t.writes)+len(t.writes) > maxBatch {
		if err := b.flush(ctx); err != nil {
			return err
		}
	}
	for _, k := range keys {
		b.touched[k] = true
	}
	for _, w := range t.writes {
		b.t.add(w)
	}
	b.held = append(b.held, i)
	b.pending[i] = res
	return nil
}

// flush commits the batch. When something a question of it read changed
// meanwhile, each is asked again on its own, reading afresh.
func (b *askBatch) flush(ctx context.Context) error {
	t, held := b.t, b.held
	b.t, b.held = txn{}, nil
	clear(b.touched)
	if len(held) == 0 {
		return nil
	}
	err := b.s.commit(ctx, &t)
	if err == nil {
		for _, i := range held {
			b.results[i] = b.pending[i]
		}
		return nil
	}
	if !errors.Is(err, ErrConflict) {
		return err
	}
	for _, i := range held {
		err := retry(ctx, "ask "+b.nqs[i].Key.String(), func() error {
			res, t, err := b.plan(ctx, i)
			if err != nil {
				return err
			}
			if err := b.s.commit(ctx, t); err != nil {
				return err
			}
			b.results[i] = res
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", b.nqs[i].Key, err)
		}
	}
	return nil
}

// plan reads what asking question i depends on and decides: its result
// and, when Asked, the writes recording it. Superseding more questions
// than one batch takes commits the first of them on their own on the way.
func (b *askBatch) plan(ctx context.Context, i int) (*record.AskResult, *txn, error) {
	nq, id := &b.nqs[i], b.first+int64(i)
	for {
		res, t, ended, more, err := b.s.askPlan(ctx, nq, id, b.pre)
		if err != nil {
			return nil, nil, err
		}
		if more {
			b.superseded[i] = append(b.superseded[i], ended...)
			continue
		}
		if res.Status == record.Asked {
			res.Superseded = append(slices.Clone(b.superseded[i]), ended...)
		}
		return res, t, nil
	}
}

// askPlan is one read-decide of asking nq as question id, writing nothing
// itself but chunks of what it supersedes (more, with those ended).
func (s *Store) askPlan(ctx context.Context, nq *record.NewQuestion, id int64, pre *prefetched) (res *record.AskResult, t *txn, ended []record.Record, more bool, err error) {
	t = &txn{}
	l := &askLookup{s: s, nq: nq, pre: pre}
	plan, err := record.PlanAsk(ctx, nq, l)
	if err != nil {
		return nil, nil, nil, false, err
	}
	res = &record.AskResult{Status: plan.Status, Problem: plan.Problem, JobVersion: plan.JobVersion}
	if plan.Status != record.Asked {
		return res, t, nil, false, nil
	}
	job := l.job
	if plan.Raise {
		job = jobDoc{TaskVersion: nq.TaskVersion, UpdatedAt: msTime(nq.AskedAt)}
	}
	// Written even when unchanged: a version bump committed meanwhile
	// would otherwise leave this question pending at an older version.
	if err := t.putJSON(keyJob(nq.Tenant, nq.JobID), l.jobRev, job); err != nil {
		return nil, nil, nil, false, err
	}
	if plan.Supersede {
		if ended, more, err = s.supersede(ctx, t, nq); err != nil || more {
			return nil, nil, ended, more, err
		}
	}
	if p := plan.Proposal; p != nil {
		p.Question, p.ExpiresAt, p.RecordedAt = id, msTime(p.ExpiresAt), msTime(p.RecordedAt)
		if err := t.putJSON(keyProposal(p.Tenant, p.ID), l.propRev, p); err != nil {
			return nil, nil, nil, false, fmt.Errorf("record proposal %s: %w", p.ID, err)
		}
	}
	d := newQuestionDoc(nq, id)
	if err := t.putQuestion(d, 0); err != nil {
		return nil, nil, nil, false, err
	}
	t.put(keyQuestionVersion(nq.Tenant, nq.JobID, nq.QuestionID, nq.TaskVersion), l.qkRev, []byte(strconv.FormatInt(id, 10)))
	if err := t.outbox(nq.Outbox, nq.AskedAt); err != nil {
		return nil, nil, nil, false, err
	}
	rec := d.Record
	res.Record = &rec
	return res, t, ended, false, nil
}

// askLookup reads what record.PlanAsk needs of the record, and keeps the
// revisions the ask's writes must expect.
type askLookup struct {
	s   *Store
	nq  *record.NewQuestion
	pre *prefetched

	job     jobDoc
	jobRev  uint64
	qkRev   uint64
	propRev uint64
}

func (l *askLookup) Job(ctx context.Context) (int64, bool, error) {
	var job jobDoc
	rev, known, err := l.s.getJSONVia(ctx, l.pre, keyJob(l.nq.Tenant, l.nq.JobID), &job)
	l.job, l.jobRev = job, rev
	return job.TaskVersion, known, err
}

func (l *askLookup) Recorded(ctx context.Context) (bool, error) {
	nq := l.nq
	_, rev, exists, err := l.s.getVia(ctx, l.pre, keyQuestionVersion(nq.Tenant, nq.JobID, nq.QuestionID, nq.TaskVersion))
	l.qkRev = rev
	return exists, err
}

// Proposal reads nq's proposal and the question asking for it; nil when
// there is none yet (propRev is then what writing it must expect).
func (l *askLookup) Proposal(ctx context.Context) (*record.Proposal, record.ProposalAsker, error) {
	nq := l.nq
	var p record.Proposal
	rev, ok, err := l.s.getJSONVia(ctx, l.pre, keyProposal(nq.Tenant, nq.Proposal.ID), &p)
	l.propRev = rev
	if err != nil || !ok {
		return nil, record.ProposalAsker{}, err
	}
	var asker record.ProposalAsker
	if p.State == bridge.ProposalPending && p.JobID == nq.JobID {
		d, _, ok, err := l.s.getQuestion(ctx, p.Question)
		if err != nil {
			return nil, asker, err
		}
		if !ok {
			return nil, asker, fmt.Errorf("question %d of proposal %s: %w", p.Question, p.ID, record.ErrNotFound)
		}
		asker = record.ProposalAsker{QuestionID: d.Record.QuestionID, TaskVersion: d.Record.TaskVersion, State: d.Record.State}
	}
	return &p, asker, nil
}

// newQuestionDoc is the document of nq, just asked as question id.
func newQuestionDoc(nq *record.NewQuestion, id int64) *questionDoc {
	d := &questionDoc{Record: record.Record{ID: id, Key: nq.Key, Kind: nq.Kind, Body: nq.Body,
		State: bridge.StatePending, AskedAt: msTime(nq.AskedAt), Deadline: msTime(nq.Deadline)}}
	for _, st := range nq.Steps {
		st.Due = msTime(st.Due)
		d.Steps = append(d.Steps, st)
	}
	if nq.Proposal != nil {
		d.Proposal = nq.Proposal.ID
	}
	d.addAudit("", bridge.StatePending, "", "", "asked", nq.AskedAt)
	return d
}

// supersede ends, in t, the job's pending questions older than nq's task
// version, with the messages nq.Supersede builds.
func (s *Store) supersede(ctx context.Context, t *txn, nq *record.NewQuestion) ([]record.Record, bool, error) {
	old, err := s.pendingOfJob(ctx, nq.Tenant, nq.JobID, func(r *record.Record) bool { return r.TaskVersion < nq.TaskVersion })
	if err != nil {
		return nil, false, err
	}
	msgs := make([][]record.Message, len(old))
	for i := range old {
		if nq.Supersede != nil {
			r := old[i].d.Record
			msgs[i] = nq.Supersede(&r)
		}
	}
	reason := record.SupersededText(nq.TaskVersion)
	// The new question's own keys: document, state index, due key,
	// uniqueness key, proposal and its messages.
	reserve := 5 + len(nq.Outbox)
	return s.endEach(ctx, t, reserve, old, msgs, bridge.StateSuperseded, nq.AskedAt, "", "", reason)
}
