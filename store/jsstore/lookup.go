package jsstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// view is what one commit of decisions reads and writes: every key read,
// with the revision it was read at, changed in place by the decisions made
// on it, so that each decision reads what the ones before it left. The
// writes go in one transaction whose compare-and-sets are on the revisions
// read here: if any key changed since, none of it is written.
type view struct {
	s *Store
	t *txn
	// prefetch is false in a view of one decision, which reads only what
	// that decision asks for.
	prefetch bool

	questions map[int64]*questionState
	ids       map[record.Key]int64 // a key's question id; 0: none
	jobs      map[[2]string]int64  // a job's task version; 0: none
	proposals map[[2]string]*proposalState
	attempts  map[string]*attemptState
	// dirty are the questions changed by the view's decisions, in the
	// order they were first changed.
	dirty          []int64
	dirtyProposals []*proposalState
}

// questionState is a question document as read (d nil: there is none).
type questionState struct {
	d     *questionDoc
	rev   uint64
	dirty bool
}

type proposalState struct {
	p     *record.Proposal // nil: there is none
	rev   uint64
	dirty bool
}

type attemptState struct {
	rev    uint64
	exists bool
}

func newView(s *Store, prefetch bool) *view {
	return &view{
		s: s, t: &txn{}, prefetch: prefetch,
		questions: map[int64]*questionState{},
		ids:       map[record.Key]int64{},
		jobs:      map[[2]string]int64{},
		proposals: map[[2]string]*proposalState{},
		attempts:  map[string]*attemptState{},
	}
}

// question reads question q's document through the view.
func (v *view) question(ctx context.Context, q int64) (*questionState, error) {
	if qs, ok := v.questions[q]; ok {
		return qs, nil
	}
	d, rev, _, err := v.s.getQuestion(ctx, q)
	if err != nil {
		return nil, err
	}
	qs := &questionState{d: d, rev: rev}
	v.questions[q] = qs
	return qs, nil
}

// pending reads question q and reports whether it is still pending.
func (v *view) pending(ctx context.Context, q int64) (*questionState, bool, error) {
	qs, err := v.question(ctx, q)
	if err != nil {
		return nil, false, err
	}
	return qs, qs.d != nil && qs.d.Record.State == bridge.StatePending, nil
}

// changed marks a question changed by a decision: it is written when the
// view commits.
func (v *view) changed(qs *questionState) {
	if !qs.dirty {
		qs.dirty = true
		v.dirty = append(v.dirty, qs.d.Record.ID)
	}
}

// resolve finds the question id k names: its version, or the latest one
// when k names none. 0 means there is none.
func (v *view) resolve(ctx context.Context, k record.Key) (int64, error) {
	if id, ok := v.ids[k]; ok {
		return id, nil
	}
	id, err := v.s.resolveKey(ctx, k)
	if err != nil {
		return 0, err
	}
	v.ids[k] = id
	return id, nil
}

// resolveKey finds the question id k names (0: none): a direct read of its
// version's key, or the versions' keys listed for the latest.
func (s *Store) resolveKey(ctx context.Context, k record.Key) (int64, error) {
	version := k.TaskVersion
	if version == 0 {
		vs, err := s.versions(ctx, k.Tenant, k.JobID, k.QuestionID)
		if err != nil || len(vs) == 0 {
			return 0, err
		}
		return vs[len(vs)-1].id, nil
	}
	id, _, err := s.questionAt(ctx, k.Tenant, k.JobID, k.QuestionID, version)
	return id, err
}

// job reads a job's current task version through the view; 0 for a job
// never asked about.
func (v *view) job(ctx context.Context, tenant, job string) (int64, error) {
	k := [2]string{tenant, job}
	if version, ok := v.jobs[k]; ok {
		return version, nil
	}
	j, _, _, err := v.s.getJob(ctx, tenant, job)
	if err != nil {
		return 0, err
	}
	v.jobs[k] = j.TaskVersion
	return j.TaskVersion, nil
}

// proposal reads a proposal through the view.
func (v *view) proposal(ctx context.Context, tenant, id string) (*proposalState, error) {
	k := [2]string{tenant, id}
	if ps, ok := v.proposals[k]; ok {
		return ps, nil
	}
	var p record.Proposal
	rev, ok, err := v.s.getJSON(ctx, keyProposal(tenant, id), &p)
	if err != nil {
		return nil, err
	}
	ps := &proposalState{rev: rev}
	if ok {
		ps.p = &p
	}
	v.proposals[k] = ps
	return ps, nil
}

// attempt reads whether an attempt was decided, through the view.
func (v *view) attempt(ctx context.Context, id string) (*attemptState, error) {
	if as, ok := v.attempts[id]; ok {
		return as, nil
	}
	_, rev, ok, err := v.s.get(ctx, keyAttempt(id))
	if err != nil {
		return nil, err
	}
	as := &attemptState{rev: rev, exists: ok}
	v.attempts[id] = as
	return as, nil
}

// Prefetch reads the questions of keys (those with a task version) and
// their jobs in two multi reads, for the FindAnswerable calls to come. A
// view of one decision reads only what it is asked.
func (v *view) Prefetch(ctx context.Context, keys []record.Key) error {
	if !v.prefetch {
		return nil
	}
	var todo []record.Key
	var versionKeys []string
	for _, k := range keys {
		if _, ok := v.ids[k]; !ok && k.TaskVersion != 0 && !slices.Contains(todo, k) {
			todo = append(todo, k)
			versionKeys = append(versionKeys, keyQuestionVersion(k.Tenant, k.JobID, k.QuestionID, k.TaskVersion))
		}
	}
	if len(todo) == 0 {
		return nil
	}
	versions, err := v.s.getMany(ctx, versionKeys)
	if err != nil {
		return fmt.Errorf("jsstore: prefetch %d questions: %w", len(todo), err)
	}
	var docKeys []string
	for i, k := range todo {
		v.ids[k] = 0
		if e, ok := versions[versionKeys[i]]; ok {
			if v.ids[k], err = parseID(e.Value); err != nil {
				return err
			}
			docKeys = append(docKeys, keyQuestion(v.ids[k]), keyJob(k.Tenant, k.JobID))
		}
	}
	docs, err := v.s.getMany(ctx, docKeys)
	if err != nil {
		return fmt.Errorf("jsstore: prefetch %d questions: %w", len(todo), err)
	}
	for _, k := range todo {
		if id := v.ids[k]; id != 0 {
			if err := v.prefetched(k, id, docs); err != nil {
				return err
			}
		}
	}
	return nil
}

// prefetched keeps what Prefetch read of question id (named by k) and its
// job, unless the view read them before.
func (v *view) prefetched(k record.Key, id int64, docs map[string]entry) error {
	if _, ok := v.questions[id]; !ok {
		qs := &questionState{}
		if e, ok := docs[keyQuestion(id)]; ok {
			d, err := decodeQuestion(e)
			if err != nil {
				return err
			}
			qs.d, qs.rev = d, e.Rev
		}
		v.questions[id] = qs
	}
	job := [2]string{k.Tenant, k.JobID}
	if _, ok := v.jobs[job]; !ok {
		var j jobDoc
		if e, ok := docs[keyJob(k.Tenant, k.JobID)]; ok {
			if err := json.Unmarshal(e.Value, &j); err != nil {
				return fmt.Errorf("jsstore: decode %s: %w", e.Key, err)
			}
		}
		v.jobs[job] = j.TaskVersion
	}
	return nil
}

// FindAnswerable is Store.FindAnswerable as the view's decisions left it.
func (v *view) FindAnswerable(ctx context.Context, k record.Key) (*record.Answerable, error) {
	r, d, err := v.find(ctx, k)
	if err != nil {
		return nil, err
	}
	version, err := v.job(ctx, r.Tenant, r.JobID)
	if err != nil {
		return nil, fmt.Errorf("jsstore: find question %s: %w", k, err)
	}
	return &record.Answerable{Record: r, JobVersion: version, Messages: d.messages()}, nil
}

// Find is Store.Find as the view's decisions left it.
func (v *view) Find(ctx context.Context, k record.Key) (*record.Record, error) {
	r, _, err := v.find(ctx, k)
	return r, err
}

// find reads the question k names: a copy of its record, which the caller
// may keep or change, and its document.
func (v *view) find(ctx context.Context, k record.Key) (*record.Record, *questionDoc, error) {
	id, err := v.resolve(ctx, k)
	if err != nil {
		return nil, nil, fmt.Errorf("jsstore: find question %s: %w", k, err)
	}
	if id == 0 {
		return nil, nil, record.ErrNotFound
	}
	qs, err := v.question(ctx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("jsstore: find question %s: %w", k, err)
	}
	if qs.d == nil {
		return nil, nil, record.ErrNotFound
	}
	r := qs.d.Record
	return &r, qs.d, nil
}

// Proposal reads a proposal as the view's decisions left it: a copy.
func (v *view) Proposal(ctx context.Context, tenant, id string) (*record.Proposal, error) {
	ps, err := v.proposal(ctx, tenant, id)
	if err != nil {
		return nil, fmt.Errorf("jsstore: proposal %s/%s: %w", tenant, id, err)
	}
	if ps.p == nil {
		return nil, record.ErrNotFound
	}
	p := *ps.p
	p.Approvals = slices.Clone(p.Approvals)
	return &p, nil
}

// messages are the chat messages showing the question, by platform, as
// Store.Messages lists them.
func (d *questionDoc) messages() []bridge.MessageRef {
	var out []bridge.MessageRef
	for _, r := range d.Deliveries {
		if r.OK && r.Message.MessageID != "" {
			out = append(out, r.Message)
		}
	}
	return out
}
