package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// gateStore is what the gate reads and writes: the job and its pending
// questions, proposals, and its decisions with the executes among them.
type gateStore interface {
	GateJob(ctx context.Context, tenant, job string) (record.GateJob, error)
	FindProposal(ctx context.Context, tenant, id string) (*record.Proposal, error)
	GateCommit(ctx context.Context, batch []record.GateWrite) error
}

// gateCodes are every code a gate reply may carry, the metric's labels.
var gateCodes = []string{bridge.GateAllowed, bridge.GateStaleVersion, bridge.GateBlockedByQuestion, bridge.GateApprovalRequired,
	bridge.GateUnknownProposal, bridge.GateProposalMismatch, bridge.GateApprovalDenied, bridge.GateProposalExpired,
	bridge.GateApprovalPending, bridge.GateProposalExecuted, bridge.GateInvalid, bridge.GateUnavailable}

// gateInFlight bounds the gate requests decided at once: each waits for
// its decision's commit, so the subscription hands them to goroutines
// rather than deciding one after another.
const gateInFlight = 1024

// serveGate answers ask.v1.gate.<tenant>.<job> from the record
// (docs/contract.md, "The gate"; docs/design.md, "The gate"). Every
// decision is written to the job log before its reply goes out.
func (r *Runtime) serveGate(ctx context.Context) (func(), error) {
	w := newGateWriter(r.gates)
	sem := make(chan struct{}, gateInFlight)
	sub, err := r.nc.QueueSubscribe(bridge.PrefixGate+".*.*", apiQueue, func(m *nats.Msg) {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			reply := r.gate(ctx, w, m.Subject, m.Data)
			r.metrics.gate.WithLabelValues(reply.Code).Inc()
			data, err := json.Marshal(reply)
			if err != nil {
				data = []byte(`{"allowed":false,"code":"unavailable"}`)
			}
			_ = m.Respond(data)
		}()
	})
	if err == nil {
		err = sub.SetPendingLimits(-1, 64<<20)
	}
	if err == nil {
		err = r.nc.Flush()
	}
	if err != nil {
		w.stop()
		return nil, fmt.Errorf("runtime: subscribe %s: %w", bridge.PrefixGate, err)
	}
	return func() {
		// A request still being decided after this gets unavailable.
		_ = sub.Unsubscribe()
		w.stop()
	}, nil
}

// gateDecision is a decision on its way to the job log.
type gateDecision struct {
	tenant, job string
	req         bridge.GateRequest
	reply       bridge.GateReply
}

// gate decides one request and writes it to the job log; a request the
// gate could not decide, or whose decision it could not write, is
// refused with unavailable: the gate fails closed.
func (r *Runtime) gate(ctx context.Context, w *gateWriter, subject string, data []byte) bridge.GateReply {
	tenant, job, ok := subjectKey(subject, bridge.PrefixGate)
	if !ok {
		return bridge.GateReply{Code: bridge.GateInvalid, Reason: "subject: must be ask.v1.gate.<tenant>.<job>, each 1 to 64 letters, digits, '-' or '_'"}
	}
	now := r.stamp()
	req, err := bridge.DecodeGateRequest(tenant, job, data)
	var d *gateDecision
	if err != nil {
		d = &gateDecision{tenant: tenant, job: job, req: req, reply: bridge.GateReply{Code: bridge.GateInvalid, Reason: err.Error()}}
	} else if d, err = r.decideGate(ctx, req, now); err != nil {
		r.log.Error("gate: read the record", "tenant", tenant, "job", job, "err", err)
		return unavailable()
	}
	if d.reply.Code == "" { // an execute: decided in the write transaction
		return atVersion(d.req, r.executeGate(w, d.req, now))
	}
	if err := w.write(record.GateWrite{Log: gateLogEntry(d, now)}); err != nil {
		r.log.Error("gate: write the decision", "tenant", tenant, "job", job, "err", err)
		return unavailable()
	}
	return atVersion(d.req, d.reply)
}

// atVersion tells a request with current_version the version its
// decision was made at.
func atVersion(req bridge.GateRequest, reply bridge.GateReply) bridge.GateReply {
	if req.CurrentVersion && reply.Code != bridge.GateUnavailable {
		reply.TaskVersion = req.TaskVersion
	}
	return reply
}

func unavailable() bridge.GateReply {
	return bridge.GateReply{Code: bridge.GateUnavailable, Reason: "the gate could not consult or write the record; nothing is allowed now: ask again"}
}

// decideGate decides a request from the record, in docs/contract.md's
// order: stale_version, blocked_by_question, then the proposal's codes or
// the policy. It returns no reply (Code "") for an execute that passed
// the first two: the proposal is decided in the write transaction that
// takes it. A request with current_version is decided, and logged, at the
// job's version as read here.
func (r *Runtime) decideGate(ctx context.Context, req bridge.GateRequest, now time.Time) (*gateDecision, error) {
	j, err := r.gates.GateJob(ctx, req.Tenant, req.JobID)
	if err != nil {
		return nil, err
	}
	if req.CurrentVersion {
		req.TaskVersion = j.Version
	}
	d := &gateDecision{tenant: req.Tenant, job: req.JobID, req: req}
	if j.Known && req.TaskVersion < j.Version {
		d.reply = bridge.GateReply{Code: bridge.GateStaleVersion,
			Reason: fmt.Sprintf("task version %d is older than the job's task version %d: the job changed since; plan again before acting", req.TaskVersion, j.Version)}
		return d, nil
	}
	if id, reason := blockingQuestion(j.Pending, req.Tool); id != "" {
		d.reply = bridge.GateReply{Code: bridge.GateBlockedByQuestion, QuestionID: id, Reason: reason}
		return d, nil
	}
	if req.ProposalID == "" {
		d.reply = r.policyGate(req)
		return d, nil
	}
	if req.Execute {
		return d, nil
	}
	p, err := r.gates.FindProposal(ctx, req.Tenant, req.ProposalID)
	if errors.Is(err, record.ErrNotFound) {
		p, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	d.reply, _ = proposalGate(req, p, now)
	return d, nil
}

// executeGate decides an execute in the write transaction that takes the
// proposal, so of simultaneous executes of one proposal exactly one is
// allowed; its reply goes out once that transaction has committed.
func (r *Runtime) executeGate(w *gateWriter, req bridge.GateRequest, now time.Time) bridge.GateReply {
	d := &gateDecision{tenant: req.Tenant, job: req.JobID, req: req}
	err := w.write(record.GateWrite{Execute: &record.GateExecute{Tenant: req.Tenant, ProposalID: req.ProposalID, At: now,
		Decide: func(p *record.Proposal) (bool, record.LogEntry) {
			var take bool
			d.reply, take = proposalGate(req, p, now)
			return take, gateLogEntry(d, now)
		}}})
	if err != nil {
		r.log.Error("gate: execute", "tenant", req.Tenant, "job", req.JobID, "proposal", req.ProposalID, "err", err)
		return unavailable()
	}
	return d.reply
}

// policyGate decides a request naming no proposal: allowed, unless the
// operator's policy needs an approved proposal for the tool.
func (r *Runtime) policyGate(req bridge.GateRequest) bridge.GateReply {
	if rule, ok := r.o.Policy.Load().Rule(req.Tenant, req.Tool); ok && rule.RequireApproval {
		return bridge.GateReply{Code: bridge.GateApprovalRequired,
			Reason: fmt.Sprintf("%s needs an approved proposal in tenant %s: ask for approval of a proposal whose action is %s, then execute it by its proposal_id", req.Tool, req.Tenant, req.Tool)}
	}
	return bridge.GateReply{Allowed: true, Code: bridge.GateAllowed}
}

// proposalGate decides a request naming a proposal, from the proposal as
// it stands (nil: the tenant has none of that id), and says whether an
// execute may take it.
func proposalGate(req bridge.GateRequest, p *record.Proposal, now time.Time) (bridge.GateReply, bool) {
	id := req.ProposalID
	reply := bridge.GateReply{ProposalID: id}
	expired := p != nil && !p.ExpiresAt.IsZero() && !now.Before(p.ExpiresAt) &&
		(p.State == bridge.ProposalPending || p.State == bridge.ProposalApproved)
	switch {
	case p == nil:
		reply.Code, reply.Reason = bridge.GateUnknownProposal, fmt.Sprintf("tenant %s has no proposal %s", req.Tenant, id)
	case p.JobID != req.JobID || p.Action != req.Tool:
		reply.Code = bridge.GateProposalMismatch
		reply.Reason = fmt.Sprintf("proposal %s is for %s in job %s, not %s in job %s", id, p.Action, p.JobID, req.Tool, req.JobID)
	case p.State == bridge.ProposalDenied:
		reply.Code, reply.Reason = bridge.GateApprovalDenied, fmt.Sprintf("proposal %s was denied", id)
	case p.State == bridge.ProposalExpired || expired:
		reply.Code = bridge.GateProposalExpired
		reply.Reason = fmt.Sprintf("proposal %s expired at %s", id, p.ExpiresAt.UTC().Format(time.RFC3339))
		if p.ExpiresAt.IsZero() {
			reply.Reason = fmt.Sprintf("proposal %s expired before it was decided", id)
		}
	case p.State == bridge.ProposalPending:
		reply.Code, reply.Reason = bridge.GateApprovalPending, fmt.Sprintf("proposal %s is waiting for approval", id)
	case p.State == bridge.ProposalApproved:
		reply.Allowed, reply.Code = true, bridge.GateAllowed
		reply.Arguments, reply.IdempotencyKey = p.Arguments, p.IdempotencyKey
		reply.Reason = fmt.Sprintf("proposal %s is approved", id)
		if req.Execute {
			reply.Reason = fmt.Sprintf("proposal %s is approved and now taken for execution: run it once, with these arguments and this idempotency key", id)
		}
		return reply, true
	default: // executed, execution_failed: single use
		reply.Code, reply.ExecutedAt, reply.IdempotencyKey = bridge.GateProposalExecuted, p.ExecutedAt, p.IdempotencyKey
		reply.Reason = fmt.Sprintf("proposal %s was executed at %s and is single use: look up that execution by its idempotency key", id, p.ExecutedAt.UTC().Format(time.RFC3339))
		if p.ExecutedAt.IsZero() {
			reply.Reason = fmt.Sprintf("proposal %s was executed and is single use: look up that execution by its idempotency key", id)
		}
	}
	return reply, false
}

// gateQuestion is what the gate reads of a pending question's body.
type gateQuestion struct {
	Question     string   `json:"question"`
	MissingField string   `json:"missing_field"`
	BlockedTools []string `json:"blocked_tools"`
	AllowedTools []string `json:"allowed_tools"`
}

// blockingQuestion finds the first pending question (in the order asked)
// that blocks tool: it lists it in blocked_tools, or has allowed_tools
// that do not list it. It returns the question's id and the reason.
func blockingQuestion(pending []record.GatePending, tool string) (id, reason string) {
	for _, p := range pending {
		// Bodies are stored as encoding/json wrote them: one without
		// either key restricts nothing and need not be decoded.
		if !bytes.Contains(p.Body, []byte(`"blocked_tools"`)) && !bytes.Contains(p.Body, []byte(`"allowed_tools"`)) {
			continue
		}
		var q gateQuestion
		if err := json.Unmarshal(p.Body, &q); err != nil {
			continue // not reachable for rows this runtime wrote
		}
		which := fmt.Sprintf("question %s (%s)", p.QuestionID, q.MissingField)
		if q.MissingField == "" {
			which = fmt.Sprintf("question %s (%q)", p.QuestionID, shortForm(q.Question))
		}
		switch {
		case slices.Contains(q.BlockedTools, tool):
			return p.QuestionID, fmt.Sprintf("%s is waiting and blocks %s", which, tool)
		case len(q.AllowedTools) > 0 && !slices.Contains(q.AllowedTools, tool):
			return p.QuestionID, fmt.Sprintf("%s is waiting and blocks %s: only %s may run while it waits", which, tool, strings.Join(q.AllowedTools, ", "))
		}
	}
	return "", ""
}

// gateLogEntry is a decision as the job log keeps it (gateLogBody, which
// the trace reads).
func gateLogEntry(d *gateDecision, at time.Time) record.LogEntry {
	body, _ := json.Marshal(gateLogBody{Tool: d.req.Tool, Code: d.reply.Code, TaskVersion: d.req.TaskVersion,
		ProposalID: d.req.ProposalID, Execute: d.req.Execute, QuestionID: d.reply.QuestionID, Reason: d.reply.Reason})
	return record.LogEntry{Tenant: d.tenant, JobID: d.job, Kind: record.LogGate, QuestionID: d.reply.QuestionID, Body: body, At: at}
}

// shortForm is a question's text cut to a few words, for a reason that
// names it: whole words, within 48 characters.
func shortForm(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(text) <= 48 {
		return text
	}
	cut := string([]rune(text)[:47])
	if i := strings.LastIndexByte(cut, ' '); i > 0 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, ",;:") + "…"
}
