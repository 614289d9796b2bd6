package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// handleExecution records an agent's report of an executed proposal, on
// ask.v1.executed.<tenant>.<job>: the result and detail on the proposal,
// the job log entry and the executed event, once. A report that is not
// valid, names no approved proposal of the job, or repeats one changes
// nothing: it is logged, naming the field, and acknowledged.
func (r *Runtime) handleExecution(ctx context.Context, msg jetstream.Msg) error {
	tenant, job, ok := subjectKey(msg.Subject(), bridge.PrefixExecuted)
	if !ok {
		r.log.Warn("execution report on a subject without a valid tenant and job; dropped", "subject", msg.Subject())
		return nil
	}
	e, err := bridge.DecodeExecution(msg.Data())
	if err == nil && (e.Tenant != tenant || e.JobID != job) {
		err = fmt.Errorf("tenant and job_id: %q/%q do not match the subject's %s/%s", e.Tenant, e.JobID, tenant, job)
	}
	if err != nil {
		r.log.Warn("execution report refused", "tenant", tenant, "job", job, "problem", err.Error())
		return nil
	}
	now := r.stamp()
	body, _ := json.Marshal(struct {
		ProposalID string `json:"proposal_id"`
		Result     string `json:"result"`
		Detail     string `json:"detail"`
	}{e.ProposalID, e.Result, e.Detail})
	p, err := r.proposals.RecordExecution(ctx, record.ExecutionReport{
		Tenant: tenant, JobID: job, ProposalID: e.ProposalID, Result: e.Result, Detail: e.Detail, At: now,
		Announce: func(p *record.Proposal, q *record.Answerable) []record.Message {
			return []record.Message{eventMsg(r.executedEvent(p, q, now))}
		},
		Log: []record.LogEntry{{Tenant: tenant, JobID: job, Kind: record.LogExecuted, Body: body, At: now}},
	})
	switch {
	case errors.Is(err, record.ErrNotFound):
		r.log.Warn("execution report refused", "tenant", tenant, "job", job,
			"problem", fmt.Sprintf("proposal_id: job %s has no proposal %s", job, e.ProposalID))
		return nil
	case errors.Is(err, record.ErrProposalNotApproved):
		r.log.Warn("execution report refused", "tenant", tenant, "job", job,
			"problem", fmt.Sprintf("proposal_id: %s is %s, not approved: nothing of it may have been executed", e.ProposalID, p.State))
		return nil
	case errors.Is(err, record.ErrDuplicate):
		r.log.Info("execution report repeated; the first stands", "tenant", tenant, "job", job, "proposal", e.ProposalID, "result", p.Result)
		return nil
	case err != nil:
		return err
	}
	r.log.Info("proposal executed", "tenant", tenant, "job", job, "proposal", p.ID, "result", p.Result)
	r.wakeRelay()
	return nil
}

// executedEvent tells the front-ends what the agent reported of an
// executed proposal, for the card that showed its approval.
func (r *Runtime) executedEvent(p *record.Proposal, q *record.Answerable, now time.Time) bridge.Event {
	ev := eventFor(q.Record, bridge.EventExecuted, now)
	ev.State = q.State
	ev.By, ev.ByName, ev.Via = q.By, q.ByName, q.Via
	ev.Answer, ev.AnswerText, ev.Comment = q.Answer, q.AnswerText, q.Comment
	ev.Text = bridge.ExecutedText(p.ID, p.Result, p.Detail)
	ev.Messages = q.Messages
	ev.Proposal = r.proposalStatus(ev.Question, p)
	return ev
}
