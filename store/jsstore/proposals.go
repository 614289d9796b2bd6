package jsstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/askbridge/askbridge/store/record"
)

// ProposalOf reads the proposal a question asks for now, through the
// question's document; record.ErrNotFound when it asks for none, or a later
// question asks for it since (the proposal names that one).
func (s *Store) ProposalOf(ctx context.Context, question int64) (*record.Proposal, error) {
	d, _, ok, err := s.getQuestion(ctx, question)
	if err != nil {
		return nil, fmt.Errorf("jsstore: proposal of question %d: %w", question, err)
	}
	if !ok || d.Proposal == "" {
		return nil, record.ErrNotFound
	}
	p, err := s.FindProposal(ctx, d.Record.Tenant, d.Proposal)
	if err != nil {
		return nil, err
	}
	if p.Question != question {
		return nil, record.ErrNotFound
	}
	return p, nil
}

// RecordExecution records an execution report: the result and detail, the
// proposal executed (or execution_failed), ExecutedAt when no gate execute
// set it, the log entries and the messages, in one atomic batch whose
// compare-and-set on the proposal makes a report count once. It returns
// the proposal as it now stands; record.ErrNotFound when the job has no such
// proposal, record.ErrDuplicate (and the proposal as first reported) when it
// was reported before, record.ErrProposalNotApproved when it was never
// approved.
func (s *Store) RecordExecution(ctx context.Context, e record.ExecutionReport) (*record.Proposal, error) {
	var out *record.Proposal
	err := retry(ctx, "record execution of "+e.ProposalID, func() error {
		out = nil
		var p record.Proposal
		rev, ok, err := s.getJSON(ctx, keyProposal(e.Tenant, e.ProposalID), &p)
		switch {
		case err != nil:
			return err
		case !ok:
			return record.ErrNotFound
		}
		out = &p
		// Times kept in whole milliseconds, as every time of the record.
		report := e
		report.At = msTime(e.At)
		if err := report.Apply(&p); err != nil {
			return err
		}
		q, err := s.answerable(ctx, p.Question)
		if err != nil {
			out = nil
			return fmt.Errorf("question of proposal %s: %w", p.ID, err)
		}
		t := &txn{}
		if err := t.putJSON(keyProposal(e.Tenant, e.ProposalID), rev, &p); err != nil {
			return err
		}
		if e.Announce != nil {
			if err := t.outbox(e.Announce(&p, q), e.At); err != nil {
				return err
			}
		}
		if err := t.appendLog(e.Log); err != nil {
			return err
		}
		return s.commit(ctx, t)
	})
	switch {
	case errors.Is(err, record.ErrNotFound), errors.Is(err, record.ErrDuplicate), errors.Is(err, record.ErrProposalNotApproved):
		if errors.Is(err, record.ErrNotFound) {
			out = nil
		}
		return out, err
	case err != nil:
		return nil, fmt.Errorf("jsstore: record execution of %s/%s: %w", e.Tenant, e.ProposalID, err)
	}
	return out, nil
}

// answerable reads question q with its job's task version and the messages
// showing it; record.ErrNotFound when it has no document.
func (s *Store) answerable(ctx context.Context, q int64) (*record.Answerable, error) {
	d, _, ok, err := s.getQuestion(ctx, q)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, record.ErrNotFound
	}
	jd, _, _, err := s.getJob(ctx, d.Record.Tenant, d.Record.JobID)
	if err != nil {
		return nil, err
	}
	rec := d.Record
	a := &record.Answerable{Record: &rec, JobVersion: jd.TaskVersion}
	for _, dl := range d.Deliveries {
		if dl.OK && dl.Message.MessageID != "" {
			a.Messages = append(a.Messages, dl.Message)
		}
	}
	return a, nil
}
