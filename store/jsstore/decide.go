package jsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// groupWrites is how many writes a group of decisions gathers before it
// commits: half of what one atomic batch takes, so that the decision that
// crosses it still fits.
const groupWrites = maxBatch / 2

// questionWrites bounds the writes one changed question document makes:
// itself, its state index moved (two) and its due key.
const questionWrites = 4

// Decide applies many decisions at once, as DecideEach does.
func (s *Store) Decide(ctx context.Context, ds []record.Decision) ([]error, error) {
	return s.DecideEach(ctx, len(ds), func(i int, _ record.Lookup) (record.Decision, error) { return ds[i], nil })
}

// DecideEach decides n attempts, as the SQLite store's DecideEach does:
// decide reads what it needs through the Lookup, which sees every earlier
// decision of the batch, and each outcome is nil, ErrNotPending or
// ErrDuplicate.
//
// Group commit: the decisions are made on one view of the record and
// committed together, as one atomic batch whose compare-and-sets are on
// the revisions the view read (a few batches when they write many keys).
// When another replica changed any of those keys meanwhile the batch
// loses as a whole, and each of its decisions is decided again alone, on
// fresh reads, until it commits: so no decision's outcome depends on
// another's, and decide may be called more than once for one index. It
// must therefore only read (through the Lookup) and build its decision,
// as the runtime's do. A decide error ends the call; the batches
// committed before it stay.
func (s *Store) DecideEach(ctx context.Context, n int, decide func(i int, l record.Lookup) (record.Decision, error)) ([]error, error) {
	errs := make([]error, n)
	for lo := 0; lo < n; {
		hi, err := s.decideGroup(ctx, lo, n, decide, errs)
		if err != nil {
			return nil, fmt.Errorf("jsstore: decide %d attempts: %w", n, err)
		}
		lo = hi
	}
	return errs, nil
}

// decideGroup decides the attempts from lo on, as many as one atomic batch
// takes, and commits them; it returns the index it stopped before. On a
// conflict it decides each of them alone.
func (s *Store) decideGroup(ctx context.Context, lo, n int, decide func(i int, l record.Lookup) (record.Decision, error), errs []error) (int, error) {
	v := newView(s, true)
	hi := lo
	for hi < n && v.writes() < groupWrites {
		d, err := decide(hi, v)
		if err != nil {
			return 0, err
		}
		if errs[hi], err = v.apply(ctx, d); err != nil {
			return 0, err
		}
		hi++
	}
	err := v.commit(ctx)
	if !errors.Is(err, ErrConflict) {
		return hi, err
	}
	for i := lo; i < hi; i++ {
		if errs[i], err = s.decideAlone(ctx, i, decide); err != nil {
			return 0, err
		}
	}
	return hi, nil
}

// decideAlone decides attempt i on its own, on fresh reads, until its
// decision commits without a conflict; it returns its outcome.
func (s *Store) decideAlone(ctx context.Context, i int, decide func(i int, l record.Lookup) (record.Decision, error)) (error, error) {
	var outcome error
	err := retry(ctx, fmt.Sprintf("decide attempt %d of the batch", i), func() error {
		v := newView(s, false)
		d, err := decide(i, v)
		if err != nil {
			return err
		}
		if outcome, err = v.apply(ctx, d); err != nil {
			return err
		}
		return v.commit(ctx)
	})
	return outcome, err
}

// Settle ends a pending question, as the SQLite store's Settle does:
// ErrNotPending when someone settled it first, ErrDuplicate when the
// attempt was decided before.
func (s *Store) Settle(ctx context.Context, st record.Settlement) error {
	errs, err := s.Decide(ctx, []record.Decision{{Settle: &st}})
	if err != nil {
		return fmt.Errorf("jsstore: settle question %d: %w", st.Question, err)
	}
	return errs[0]
}

// apply makes decision d on the view. Its outcome is nil when it won (its
// writes are then in the view's transaction), ErrNotPending or
// ErrDuplicate when it lost (it writes nothing); err is a failed read.
func (v *view) apply(ctx context.Context, d record.Decision) (outcome, err error) {
	p, ok := d.Parts()
	if !ok {
		return nil, nil
	}
	var att *attemptState
	if p.AttemptID != "" {
		if att, err = v.attempt(ctx, p.AttemptID); err != nil {
			return nil, fmt.Errorf("jsstore: decide attempt %s: %w", p.AttemptID, err)
		}
		if att.exists {
			return record.ErrDuplicate, nil
		}
	}
	won := true
	switch {
	case d.Settle != nil:
		won, err = v.settle(ctx, d.Settle)
	case d.Approve != nil:
		won, err = v.approve(ctx, d.Approve)
	case d.Delegate != nil:
		won, err = v.delegate(ctx, d.Delegate)
	case d.Snooze != nil:
		won, err = v.snooze(ctx, d.Snooze)
	}
	if err != nil {
		return nil, fmt.Errorf("jsstore: decide question %d: %w", p.Question, err)
	}
	if !won {
		return record.ErrNotPending, nil
	}
	if att != nil {
		if err := v.t.putAttempt(p.AttemptID, att.rev, p.At); err != nil {
			return nil, err
		}
		att.exists = true
	}
	if err := v.t.outbox(p.Outbox, p.At); err != nil {
		return nil, err
	}
	if err := v.t.appendLog(p.Log); err != nil {
		return nil, err
	}
	return nil, nil
}

// settle ends a question still pending with st, and decides its proposal
// when st does and the proposal still waits on this question; false when
// the question is not pending.
func (v *view) settle(ctx context.Context, st *record.Settlement) (bool, error) {
	qs, ok, err := v.pending(ctx, st.Question)
	if err != nil || !ok {
		return false, err
	}
	var ps *proposalState
	if st.Proposal != nil {
		if ps, err = v.proposal(ctx, st.Proposal.Tenant, st.Proposal.ID); err != nil {
			return false, err
		}
	}
	r := &qs.d.Record
	r.State, r.Action, r.AnswerRaw, r.Answer = st.State, st.Action, nonEmpty(st.AnswerRaw), nonEmpty(st.Answer)
	r.AnswerText, r.Comment, r.By, r.ByName = st.AnswerText, st.Comment, st.By, st.ByName
	r.Via, r.Text, r.SettledAt = st.Via, st.Text, msTime(st.At)
	qs.d.Steps = nil
	reason := st.Reason
	if reason == "" {
		reason = st.Text
	}
	qs.d.addAudit(bridge.StatePending, st.State, st.By, st.Via, reason, st.At)
	v.changed(qs)
	if ps != nil && ps.p != nil && ps.p.Question == st.Question && ps.p.State == bridge.ProposalPending {
		ps.p.State, ps.p.DecidedAt = st.Proposal.State, msTime(st.At)
		if st.Proposal.Approvals != nil {
			ps.p.Approvals = slices.Clone(st.Proposal.Approvals)
		}
		v.proposalChanged(ps)
	}
	return true, nil
}

// approve records one more approval of a proposal whose question still
// waits on it; false when it no longer does. The question's document is
// written too, unchanged: its revision is what "still pending" is checked
// on when the batch commits.
func (v *view) approve(ctx context.Context, a *record.ApprovalRecord) (bool, error) {
	qs, ok, err := v.pending(ctx, a.Question)
	if err != nil || !ok {
		return false, err
	}
	ps, err := v.proposal(ctx, a.Tenant, a.ProposalID)
	if err != nil {
		return false, err
	}
	if ps.p == nil || ps.p.Question != a.Question || ps.p.State != bridge.ProposalPending {
		return false, nil
	}
	ps.p.Approvals = slices.Clone(a.Approvals)
	if ps.p.Approvals == nil {
		ps.p.Approvals = []bridge.Approval{}
	}
	v.proposalChanged(ps)
	v.changed(qs)
	return true, nil
}

// delegate writes a delegation's body over a question still pending, with
// its audit entry; false when the question is not pending.
func (v *view) delegate(ctx context.Context, d *record.Delegation) (bool, error) {
	qs, ok, err := v.pending(ctx, d.Question)
	if err != nil || !ok {
		return false, err
	}
	qs.d.Record.Body = slices.Clone(d.Body)
	qs.d.addAudit(bridge.StatePending, bridge.StatePending, d.By, d.Via, d.Reason, d.At)
	v.changed(qs)
	return true, nil
}

// snooze holds a person's reminders of a question still pending until a
// time, with the step that ends it (a later snooze of theirs moves the
// same step); false when the question is not pending.
func (v *view) snooze(ctx context.Context, sn *record.Snooze) (bool, error) {
	qs, ok, err := v.pending(ctx, sn.Question)
	if err != nil || !ok {
		return false, err
	}
	d := qs.d
	until := msTime(sn.Until)
	held, ok := d.Snoozes[sn.Identity]
	if !ok {
		last := -1
		for _, st := range d.Steps {
			last = max(last, st.Index)
		}
		held.Step = record.SnoozeStep(last, len(d.Steps) > 0)
	}
	held.Until = until
	if d.Snoozes == nil {
		d.Snoozes = map[string]snoozeDoc{}
	}
	d.Snoozes[sn.Identity] = held
	if i := slices.IndexFunc(d.Steps, func(st record.Step) bool { return st.Index == held.Step }); i >= 0 {
		d.Steps[i].Due = until
	} else {
		d.Steps = append(d.Steps, record.Step{Index: held.Step, Target: record.StepSnooze, Due: until})
	}
	d.addAudit(bridge.StatePending, bridge.StatePending, sn.Identity, sn.Via, sn.Reason, sn.At)
	v.changed(qs)
	return true, nil
}

// nonEmpty is b, or nil when it is empty, as SQLite reads an empty answer.
func nonEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return slices.Clone(b)
}

// proposalChanged marks a proposal changed by a decision: it is written
// when the view commits.
func (v *view) proposalChanged(ps *proposalState) {
	if !ps.dirty {
		ps.dirty = true
		v.dirtyProposals = append(v.dirtyProposals, ps)
	}
}

// writes counts the writes the view's commit makes, at most.
func (v *view) writes() int {
	return len(v.t.writes) + questionWrites*len(v.dirty) + len(v.dirtyProposals)
}

// commit writes the view's decisions as one atomic batch: the attempts,
// outbox rows and log entries they gathered, and every question document
// and proposal they changed, each a compare-and-set on the revision it was
// read at. ErrConflict: one changed meanwhile, and nothing is written.
func (v *view) commit(ctx context.Context) error {
	for _, id := range v.dirty {
		qs := v.questions[id]
		if err := v.t.putQuestion(qs.d, qs.rev); err != nil {
			return err
		}
	}
	for _, ps := range v.dirtyProposals {
		if err := v.t.putJSON(keyProposal(ps.p.Tenant, ps.p.ID), ps.rev, ps.p); err != nil {
			return err
		}
	}
	return v.s.commit(ctx, v.t)
}
