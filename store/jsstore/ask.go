package jsstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store"
)

// AskMany records questions before anything shows them, each as SQLite's
// Ask does: the question, its uniqueness key, its state index, its ladder's
// due key, its audit entry, its proposal and its outbox messages in one
// atomic batch, with the job's older pending questions superseded in it
// when the task version moves on. The results are in the same order.
//
// Unlike SQLite's single transaction, each question commits on its own; an
// error leaves those before it recorded (asking again finds them
// Duplicate).
func (s *Store) AskMany(ctx context.Context, nqs []store.NewQuestion) ([]*store.AskResult, error) {
	results := make([]*store.AskResult, len(nqs))
	if len(nqs) == 0 {
		return results, nil
	}
	first, err := s.nextIDs(ctx, "question", len(nqs))
	if err != nil {
		return nil, fmt.Errorf("jsstore: ask %d questions: %w", len(nqs), err)
	}
	for i := range nqs {
		nq := &nqs[i]
		err := retry(ctx, "ask "+nq.Key.String(), func() error {
			var err error
			results[i], err = s.ask(ctx, nq, first+int64(i))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("jsstore: ask %d questions: %s: %w", len(nqs), nq.Key, err)
		}
	}
	return results, nil
}

// ask is one try at recording nq as question id: it reads the job, the
// question's uniqueness key, its proposal and the job's pending questions,
// decides, and commits; ErrConflict when any of them changed meanwhile.
func (s *Store) ask(ctx context.Context, nq *store.NewQuestion, id int64) (*store.AskResult, error) {
	var superseded []store.Record
	for {
		res, more, err := s.askOnce(ctx, nq, id, &superseded)
		if err != nil || !more {
			return res, err
		}
		// Superseding took batches of its own: read again and go on.
	}
}

// askOnce is ask's read-decide-commit. more says it committed only some of
// the questions it supersedes (appended to superseded) and must run again.
func (s *Store) askOnce(ctx context.Context, nq *store.NewQuestion, id int64, superseded *[]store.Record) (res *store.AskResult, more bool, err error) {
	job, jobRev, known, err := s.getJob(ctx, nq.Tenant, nq.JobID)
	if err != nil {
		return nil, false, err
	}
	current := job.TaskVersion
	res = &store.AskResult{JobVersion: current}
	qk := keyQuestionVersion(nq.Tenant, nq.JobID, nq.QuestionID, nq.TaskVersion)
	_, qkRev, exists, err := s.get(ctx, qk)
	if err != nil {
		return nil, false, err
	}
	switch {
	case exists:
		res.Status = store.Duplicate
		return res, false, nil
	case known && nq.TaskVersion < current:
		res.Status = store.Stale
		return res, false, nil
	}
	var prop *store.Proposal
	var propRev uint64
	if nq.Proposal != nil {
		var problem string
		if prop, propRev, problem, err = s.proposalProblem(ctx, nq); err != nil {
			return nil, false, err
		}
		if problem != "" {
			res.Status, res.Problem = store.Refused, problem
			return res, false, nil
		}
	}
	t := &txn{}
	bump := !known || nq.TaskVersion > current
	if bump {
		job = jobDoc{TaskVersion: nq.TaskVersion, UpdatedAt: msTime(nq.AskedAt)}
		res.JobVersion = nq.TaskVersion
	}
	// Written even when unchanged: a version bump committed meanwhile
	// would otherwise leave this question pending at an older version.
	if err := t.putJSON(keyJob(nq.Tenant, nq.JobID), jobRev, job); err != nil {
		return nil, false, err
	}
	var ended []store.Record
	if bump && known {
		if ended, more, err = s.supersede(ctx, t, nq); err != nil || more {
			*superseded = append(*superseded, ended...)
			return nil, more, err
		}
	}
	if nq.Proposal != nil {
		if err := recordProposal(t, nq, id, prop, propRev); err != nil {
			return nil, false, err
		}
	}
	d := newQuestionDoc(nq, id)
	if err := t.putQuestion(d, 0); err != nil {
		return nil, false, err
	}
	t.put(qk, qkRev, []byte(strconv.FormatInt(id, 10)))
	if err := t.outbox(nq.Outbox, nq.AskedAt); err != nil {
		return nil, false, err
	}
	if err := s.commit(ctx, t); err != nil {
		return nil, false, err
	}
	*superseded = append(*superseded, ended...)
	res.Status, res.Superseded = store.Asked, *superseded
	rec := d.Record
	res.Record = &rec
	return res, false, nil
}

// newQuestionDoc is the document of nq, just asked as question id.
func newQuestionDoc(nq *store.NewQuestion, id int64) *questionDoc {
	d := &questionDoc{Record: store.Record{ID: id, Key: nq.Key, Kind: nq.Kind, Body: nq.Body,
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
func (s *Store) supersede(ctx context.Context, t *txn, nq *store.NewQuestion) ([]store.Record, bool, error) {
	old, err := s.pendingOfJob(ctx, nq.Tenant, nq.JobID, func(r *store.Record) bool { return r.TaskVersion < nq.TaskVersion })
	if err != nil {
		return nil, false, err
	}
	msgs := make([][]store.Message, len(old))
	for i := range old {
		if nq.Supersede != nil {
			r := old[i].d.Record
			msgs[i] = nq.Supersede(&r)
		}
	}
	reason := fmt.Sprintf("superseded by task version %d", nq.TaskVersion)
	// The new question's own keys: document, state index, due key,
	// uniqueness key, proposal, and its messages.
	reserve := 5 + len(nq.Outbox)
	return s.endEach(ctx, t, reserve, old, msgs, bridge.StateSuperseded, nq.AskedAt, "", "", reason)
}

// proposalProblem reads nq's proposal and says why nq may not ask for it,
// or "" when it may: a proposal decided before is never asked again, nor
// one of another job, nor one another question still waits on. The
// question nq replaces (an older version of the job, superseded in the
// same batch) lets go of it. prop is nil when there is none yet; rev is
// what writing it must expect.
func (s *Store) proposalProblem(ctx context.Context, nq *store.NewQuestion) (prop *store.Proposal, rev uint64, problem string, err error) {
	var p store.Proposal
	rev, ok, err := s.getJSON(ctx, keyProposal(nq.Tenant, nq.Proposal.ID), &p)
	if err != nil || !ok {
		return nil, rev, "", err
	}
	if p.State != bridge.ProposalPending {
		return &p, rev, bridge.DecidedProposalText(p.ID, p.State), nil
	}
	if p.JobID != nq.JobID {
		return &p, rev, fmt.Sprintf("proposal.id: %s is a proposal of job %s; a job proposes under ids of its own", p.ID, p.JobID), nil
	}
	d, _, ok, err := s.getQuestion(ctx, p.Question)
	if err != nil {
		return nil, 0, "", err
	}
	if !ok {
		return nil, 0, "", fmt.Errorf("question %d of proposal %s: %w", p.Question, p.ID, store.ErrNotFound)
	}
	if d.Record.State == bridge.StatePending && d.Record.TaskVersion >= nq.TaskVersion {
		return &p, rev, fmt.Sprintf("proposal.id: %s is already asked for by question %s, which waits", p.ID, d.Record.QuestionID), nil
	}
	return &p, rev, "", nil
}

// recordProposal records nq's proposal for question id, or binds a pending
// one asked before to it anew (its approvals start again: they were given
// to the question it replaces).
func recordProposal(t *txn, nq *store.NewQuestion, id int64, prev *store.Proposal, rev uint64) error {
	np := nq.Proposal
	args := np.Arguments
	if len(args) == 0 {
		args = []byte("{}")
	}
	p := store.Proposal{Tenant: nq.Tenant, ID: np.ID, JobID: nq.JobID, IdempotencyKey: np.IdempotencyKey,
		State: bridge.ProposalPending}
	if prev != nil {
		if prev.State != bridge.ProposalPending {
			return errors.New("jsstore: a decided proposal asked for again")
		}
		p = *prev
	}
	p.Question, p.Action, p.Arguments, p.ExpiresAt = id, np.Action, args, msTime(np.ExpiresAt)
	p.Approvals, p.RecordedAt = []bridge.Approval{}, msTime(nq.AskedAt)
	if err := t.putJSON(keyProposal(nq.Tenant, np.ID), rev, p); err != nil {
		return fmt.Errorf("record proposal %s: %w", np.ID, err)
	}
	return nil
}
