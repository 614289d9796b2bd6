package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/policy"
	"github.com/askbridge/askbridge/store/record"
)

// proposalStore is what proposals need beyond asking and deciding: the
// proposal a question asks for, and executions reported.
type proposalStore interface {
	ProposalOf(ctx context.Context, question int64) (*record.Proposal, error)
	RecordExecution(ctx context.Context, e record.ExecutionReport) (*record.Proposal, error)
}

// rule is the operator's policy for an action in a tenant (the zero Rule,
// which asks one approval from whoever may answer, when there is none).
func (r *Runtime) rule(tenant, action string) policy.Rule {
	rule, _ := r.o.Policy.Load().Rule(tenant, action)
	return rule
}

// checkIntake refuses at intake what the question's shape alone does not
// tell: answerers naming an unknown person, a proposal no approval could
// make right.
func (r *Runtime) checkIntake(q *bridge.Question, now time.Time) error {
	if err := r.checkAnswerers(q); err != nil {
		return err
	}
	return r.checkProposal(q, now)
}

// checkProposal refuses at intake what no approval could make right: a
// proposal already expired, or one the policy does not allow (an amount
// above its max_amount, in another currency, or without an amount).
func (r *Runtime) checkProposal(q *bridge.Question, now time.Time) error {
	p := q.Proposal
	if p == nil || !q.IsApproval() {
		return nil
	}
	if err := bridge.CheckProposalAt(p, now); err != nil {
		return err
	}
	rule := r.rule(q.Tenant, p.Action)
	if rule.MaxAmount == nil {
		return nil
	}
	limit := strconv.FormatFloat(*rule.MaxAmount, 'f', -1, 64)
	if rule.Currency != "" {
		limit += " " + rule.Currency
	}
	switch {
	case p.Amount == nil:
		return fmt.Errorf("proposal.amount: is required: the policy limits %s to max_amount %s", p.Action, limit)
	case rule.Currency != "" && p.Currency != rule.Currency:
		return fmt.Errorf("proposal.currency: %s is not the currency of the policy's limit for %s (max_amount %s)", p.Currency, p.Action, limit)
	case *p.Amount > *rule.MaxAmount:
		return fmt.Errorf("proposal.amount: %s %s is above the policy's limit for %s: max_amount %s",
			strconv.FormatFloat(*p.Amount, 'f', -1, 64), p.Currency, p.Action, limit)
	}
	return nil
}

// newProposal is the proposal row q records, with its idempotency key.
func newProposal(q *bridge.Question) *record.NewProposal {
	if q.Proposal == nil || !q.IsApproval() {
		return nil
	}
	return &record.NewProposal{ID: q.Proposal.ID, Action: q.Proposal.Action, Arguments: q.Proposal.Arguments,
		ExpiresAt: q.Proposal.ExpiresAt, IdempotencyKey: idempotencyKey()}
}

// idempotencyKey is a random key the upstream call of an executed proposal
// carries, so a retry finds its first result (docs/contract.md).
func idempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "ik_" + hex.EncodeToString(b[:])
}

// expiresFirst reports whether q's proposal expires at or before deadline:
// its question then ends at the expiry, as expired.
func expiresFirst(q *bridge.Question, deadline time.Time) bool {
	if q == nil || q.Proposal == nil || q.Proposal.ExpiresAt.IsZero() {
		return false
	}
	return q.Proposal.ExpiresAt.Sub(deadline) < time.Millisecond
}

// proposalStatus is q's proposal as it stands, for events and views: p is
// its row (nil before it is recorded).
func (r *Runtime) proposalStatus(q *bridge.Question, p *record.Proposal) *bridge.ProposalStatus {
	if q == nil || q.Proposal == nil || !q.IsApproval() {
		return nil
	}
	rule := r.rule(q.Tenant, q.Proposal.Action)
	st := &bridge.ProposalStatus{ID: q.Proposal.ID, State: bridge.ProposalPending, Required: rule.Approvals(), ExpiresAt: q.Proposal.ExpiresAt}
	if p != nil {
		st.State, st.Approvals = p.State, slices.Clone(p.Approvals)
		st.ExecutedAt, st.Result, st.Detail = p.ExecutedAt, p.Result, p.Detail
	}
	if st.State == bridge.ProposalPending {
		st.MayApprove = r.mayStillApprove(rule, q, st.Approvals)
	}
	return st
}

// mayStillApprove names who may still approve q's waiting proposal under
// rule: its approvers, or, when it names none, whoever may answer (q's
// answerers and owner, and its answering roles); less those whose
// approval weighApproval would refuse (approvalBar). Roles stay listed:
// another holder may approve.
func (r *Runtime) mayStillApprove(rule policy.Rule, q *bridge.Question, approvals []bridge.Approval) []string {
	who := rule.Approvers
	if len(who) == 0 {
		who = append(q.WaitsFor(), q.AnswerRoles())
	}
	d := r.people.directory()
	var out []string
	for _, one := range who {
		if bar, _ := approvalBar(d, rule, q, approvals, one); bar == barNone {
			out = append(out, one)
		}
	}
	return out
}

// An approvalBar is why an approval the access checks let through does
// not count: its approver owns the job and the rule forbids self-approval,
// or they approved already (as any identity of their person).
type approvalBarKind int

const (
	barNone approvalBarKind = iota
	barSelf
	barAlready
)

// approvalBar says whether by's approval of q would count, with rule and
// approvals so far; for barAlready, which approval was theirs.
func approvalBar(d *directory, rule policy.Rule, q *bridge.Question, approvals []bridge.Approval, by string) (approvalBarKind, int) {
	if rule.ForbidSelfApproval && d.same(by, q.Owner) {
		return barSelf, -1
	}
	if i := slices.IndexFunc(approvals, func(x bridge.Approval) bool { return d.same(x.By, by) }); i >= 0 {
		return barAlready, i
	}
	return barNone, -1
}

// isApprover reports whether the attempt's author is one of the rule's
// approvers, by identity (any of the person's) or by role.
func (r *Runtime) isApprover(rule policy.Rule, tenant string, a *bridge.AnswerAttempt) bool {
	d := r.people.directory()
	for _, who := range rule.Approvers {
		if d.same(who, a.By) || r.o.Roles.has(tenant, a.By, who, a.Roles) {
			return true
		}
	}
	return false
}

// approverAccess lets an identity the policy names among an approval's
// approvers answer it, as an answerer would: naming someone to approve
// means they may.
func (r *Runtime) approverAccess(tenant string, a *bridge.AnswerAttempt, q *bridge.Question, acc access) access {
	if acc.Answer || q == nil || q.Proposal == nil || !q.IsApproval() {
		return acc
	}
	d := r.people.directory()
	if slices.ContainsFunc(r.rule(tenant, q.Proposal.Action).Approvers, func(who string) bool { return d.same(who, a.By) }) {
		return access{Exists: true, See: true, Answer: true, Decline: true}
	}
	return acc
}

// approvalStep is what an accepted approve or deny does to its proposal.
type approvalStep struct {
	// q is the approval's question, read once on the way in.
	q         *bridge.Question
	proposal  *record.Proposal
	approvals []bridge.Approval
	required  int
	// settles: the question ends (the Nth approval, or a deny); otherwise
	// the approval is recorded and the question waits for more.
	settles bool
}

// weighApproval applies the policy to an approve or deny of an approval
// whose checks passed: expiry, approvers, self-approval, N distinct
// people. nil step and nil refusal: the approval has no proposal row (it
// was asked before proposals were recorded) and settles as it always did.
func (r *Runtime) weighApproval(ctx context.Context, l record.Lookup, rec *record.Record, q *bridge.Question, a *bridge.AnswerAttempt, now time.Time) (*approvalStep, *refusal, error) {
	p, err := l.Proposal(ctx, rec.Tenant, q.Proposal.ID)
	if errors.Is(err, record.ErrNotFound) || (err == nil && p.Question != rec.ID) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if exp := q.Proposal.ExpiresAt; !exp.IsZero() && !now.Before(exp) {
		return nil, &refusal{reason: bridge.RefusedExpired, text: fmt.Sprintf(
			"This proposal (%s) expired at %s; it can no longer be approved or denied.", p.ID, exp.UTC().Format(time.RFC3339))}, nil
	}
	rule := r.rule(rec.Tenant, p.Action)
	deny := a.Action == bridge.ActionDeny
	if len(rule.Approvers) > 0 && !r.isApprover(rule, rec.Tenant, a) {
		verb := "approve"
		if deny {
			verb = "deny"
		}
		return nil, &refusal{reason: bridge.RefusedForbidden, text: fmt.Sprintf(
			"You can't %s this proposal: the policy lets only %s approve or deny %s.", verb, bridge.JoinOr(rule.Approvers), p.Action)}, nil
	}
	step := &approvalStep{q: q, proposal: p, approvals: p.Approvals, required: rule.Approvals(), settles: true}
	if deny {
		return step, nil, nil
	}
	// People, not accounts: the owner's other account is the owner, and
	// one person on Slack and on Discord approves once.
	d := r.people.directory()
	switch bar, i := approvalBar(d, rule, q, p.Approvals, a.By); bar {
	case barSelf:
		return nil, &refusal{reason: bridge.RefusedSelfApproval, text: fmt.Sprintf(
			"You can't approve this proposal: %s is the owner of the job it acts for, and the policy forbids approving one's own %s. Someone else must approve it.", ownerWords(d, a.By, q.Owner), p.Action)}, nil
	case barAlready:
		return nil, &refusal{reason: bridge.RefusedAlreadyApproved, text: fmt.Sprintf(
			"%s; it needs %d approvals from different people (%s).",
			alreadyWords(d, a.By, p.Approvals[i].By), step.required, bridge.ApprovalsText(p.Approvals, step.required))}, nil
	}
	via := a.Via
	if via == "" {
		via = platformOf(a.By)
	}
	step.approvals = append(slices.Clone(p.Approvals), bridge.Approval{By: a.By, ByName: a.ByName, Person: d.personOf(a.By), Via: via, At: now})
	step.settles = len(step.approvals) >= step.required
	return step, nil, nil
}

// state is the proposal's state once the approve or deny settles it.
func (s *approvalStep) state(action string) string {
	if action == bridge.ActionDeny {
		return bridge.ProposalDenied
	}
	return bridge.ProposalApproved
}

// decision is what settling the approval does to its proposal.
func (s *approvalStep) decision(action string) *record.ProposalDecision {
	return &record.ProposalDecision{Tenant: s.proposal.Tenant, ID: s.proposal.ID, State: s.state(action), Approvals: s.approvals}
}

// status is the proposal as the step leaves it.
func (r *Runtime) stepStatus(s *approvalStep, state string) *bridge.ProposalStatus {
	p := *s.proposal
	p.Approvals, p.State = s.approvals, state
	return r.proposalStatus(s.q, &p)
}

// approvalLog is the job log entry of an approve or deny (the trace reads
// these bodies; docs/design.md).
func approvalLog(rec *record.Record, s *approvalStep, a *bridge.AnswerAttempt, via string, now time.Time) record.LogEntry {
	var body any
	if a.Action == bridge.ActionDeny {
		body = struct {
			ProposalID string `json:"proposal_id"`
			By         string `json:"by"`
			Denied     bool   `json:"denied"`
			Comment    string `json:"comment,omitempty"`
		}{s.proposal.ID, a.By, true, a.Comment}
	} else {
		body = struct {
			ProposalID string `json:"proposal_id"`
			By         string `json:"by"`
			ByName     string `json:"by_name,omitempty"`
			Via        string `json:"via,omitempty"`
			Count      int    `json:"count"`
			Required   int    `json:"required"`
		}{s.proposal.ID, a.By, a.ByName, via, len(s.approvals), s.required}
	}
	data, _ := json.Marshal(body)
	return record.LogEntry{Tenant: rec.Tenant, JobID: rec.JobID, Kind: record.LogApproval, QuestionID: rec.QuestionID, Body: data, At: now}
}

// approvalRecord records an approval that is not yet the last one needed:
// the question waits, and approval_recorded says how many there are.
func (r *Runtime) approvalRecord(rec *record.Record, refs []bridge.MessageRef, s *approvalStep, a *bridge.AnswerAttempt, now time.Time) *record.ApprovalRecord {
	via := s.approvals[len(s.approvals)-1].Via
	ev := eventFor(rec, bridge.EventApproval, now)
	ev.EventID = fmt.Sprintf("%s.%d", ev.EventID, len(s.approvals))
	ev.State = bridge.StatePending
	ev.By, ev.ByName, ev.Via, ev.Comment = a.By, a.ByName, via, a.Comment
	ev.Person = s.approvals[len(s.approvals)-1].Person
	ev.Text = bridge.ApprovalsText(s.approvals, s.required)
	ev.AttemptID, ev.ReplyTo, ev.Messages = a.AttemptID, a.ReplyTo, refs
	ev.Proposal = r.stepStatus(s, bridge.ProposalPending)
	return &record.ApprovalRecord{
		AttemptID: a.AttemptID, Question: rec.ID, Tenant: rec.Tenant, ProposalID: s.proposal.ID,
		Approvals: s.approvals, At: now, Outbox: []record.Message{eventMsg(ev)},
		Log: []record.LogEntry{approvalLog(rec, s, a, via, now)},
	}
}

// ownerWords names the owner a refused self-approval is about: the
// approver, or, when the approver is the owner's other account, both.
func ownerWords(d *directory, by, owner string) string {
	if by == owner {
		return by
	}
	return fmt.Sprintf("%s (%s, like %s)", by, d.personOf(by), owner)
}

// alreadyWords says who approved already: this identity, or the same
// person from another account.
func alreadyWords(d *directory, by, earlier string) string {
	if by == earlier {
		return "You have already approved this proposal"
	}
	return fmt.Sprintf("%s has already approved this proposal as %s", d.personOf(by), earlier)
}
