package record

import (
	"context"
	"encoding/json"

	"github.com/askbridge/askbridge/bridge"
)

// AskLookup reads, inside an ask's transaction, what deciding the ask
// needs. A backend implements it on its own reads.
type AskLookup interface {
	// Job reads the job's task version; known is false for a job never
	// asked.
	Job(ctx context.Context) (version int64, known bool, err error)
	// Recorded says whether the question id is recorded at the ask's task
	// version.
	Recorded(ctx context.Context) (bool, error)
	// Proposal reads the ask's proposal, nil when there is none yet, and,
	// when it is pending and of the ask's job, the question asking for it.
	Proposal(ctx context.Context) (*Proposal, ProposalAsker, error)
}

// AskPlan is what an ask comes to; a backend writes it as it says.
type AskPlan struct {
	// Status is Duplicate, Stale, Refused (Problem says why) or Asked.
	Status  AskStatus
	Problem string
	// JobVersion is the job's task version once the ask is written.
	JobVersion int64
	// Raise: the job's task version becomes the ask's (a new job, or a
	// newer version).
	Raise bool
	// Supersede: the ask raises the version of a job asked before, so
	// the job's pending questions of older versions end as superseded
	// (SupersededText), in the same transaction.
	Supersede bool
	// Proposal is the proposal row an Asked approval writes (nil for a
	// question that asks for none): a new one, or the pending one asked
	// for before, bound to this question anew. The backend sets its
	// Question to the new question's row id.
	Proposal *Proposal
}

// PlanAsk decides an ask on what l reads: Duplicate when its question id
// is recorded at its version, Stale when the job moved past that version,
// Refused when its proposal may not be asked for (ProposalProblem), else
// Asked, raising the job's version when the ask's is newer. Every backend
// decides an ask here, in this order.
func PlanAsk(ctx context.Context, nq *NewQuestion, l AskLookup) (AskPlan, error) {
	recorded, err := l.Recorded(ctx)
	if err != nil {
		return AskPlan{}, err
	}
	version, known, err := l.Job(ctx)
	if err != nil {
		return AskPlan{}, err
	}
	plan := AskPlan{JobVersion: version}
	switch {
	case recorded:
		plan.Status = Duplicate
		return plan, nil
	case known && nq.TaskVersion < version:
		plan.Status = Stale
		return plan, nil
	}
	if nq.Proposal != nil {
		p, asker, err := l.Proposal(ctx)
		if err != nil {
			return AskPlan{}, err
		}
		if p != nil {
			if problem := ProposalProblem(nq, p, asker); problem != "" {
				plan.Status, plan.Problem = Refused, problem
				return plan, nil
			}
		}
		plan.Proposal = askedProposal(nq, p)
	}
	plan.Status = Asked
	plan.Raise = !known || nq.TaskVersion > version
	plan.Supersede = known && plan.Raise
	if plan.Raise {
		plan.JobVersion = nq.TaskVersion
	}
	return plan, nil
}

// askedProposal is the proposal row nq leaves: prev (pending, of nq's job)
// bound to nq anew, keeping its idempotency key, its approvals starting
// again (they were given to the question nq replaces); or, with no prev,
// a new pending one.
func askedProposal(nq *NewQuestion, prev *Proposal) *Proposal {
	np := nq.Proposal
	p := Proposal{Tenant: nq.Tenant, ID: np.ID, JobID: nq.JobID, IdempotencyKey: np.IdempotencyKey, State: bridge.ProposalPending}
	if prev != nil {
		p = *prev
	}
	p.Action, p.Arguments, p.ExpiresAt = np.Action, np.Arguments, np.ExpiresAt
	if len(p.Arguments) == 0 {
		p.Arguments = json.RawMessage("{}")
	}
	p.Approvals, p.RecordedAt = []bridge.Approval{}, nq.AskedAt
	return &p
}
