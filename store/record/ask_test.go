package record

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/askbridge/askbridge/bridge"
)

// lookup is an AskLookup over fixed facts.
type lookup struct {
	version  int64
	known    bool
	recorded bool
	proposal *Proposal
	asker    ProposalAsker
	err      error
}

func (l lookup) Job(context.Context) (int64, bool, error) { return l.version, l.known, l.err }
func (l lookup) Recorded(context.Context) (bool, error)   { return l.recorded, l.err }
func (l lookup) Proposal(context.Context) (*Proposal, ProposalAsker, error) {
	return l.proposal, l.asker, l.err
}

func TestPlanAsk(t *testing.T) {
	ask := func(version int64, proposal string) *NewQuestion {
		nq := &NewQuestion{Key: Key{Tenant: "acme", JobID: "job-1", QuestionID: "q-2", TaskVersion: version}}
		if proposal != "" {
			nq.Proposal = &NewProposal{ID: proposal}
		}
		return nq
	}
	pending := &Proposal{Tenant: "acme", ID: "pr_1", JobID: "job-1", State: bridge.ProposalPending, IdempotencyKey: "idem-1",
		Question: 7, Approvals: []bridge.Approval{{By: "slack:U1"}}}
	// bound is pending bound to a new question: its approvals start again,
	// its idempotency key stays.
	bound := &Proposal{Tenant: "acme", ID: "pr_1", JobID: "job-1", State: bridge.ProposalPending, IdempotencyKey: "idem-1",
		Question: 7, Arguments: json.RawMessage("{}"), Approvals: []bridge.Approval{}}
	fresh := &Proposal{Tenant: "acme", ID: "pr_1", JobID: "job-1", State: bridge.ProposalPending,
		Arguments: json.RawMessage("{}"), Approvals: []bridge.Approval{}}
	tests := []struct {
		name string
		nq   *NewQuestion
		l    lookup
		want AskPlan
	}{
		{"a new job", ask(1, ""), lookup{}, AskPlan{Status: Asked, JobVersion: 1, Raise: true}},
		{"the job's version", ask(2, ""), lookup{version: 2, known: true}, AskPlan{Status: Asked, JobVersion: 2}},
		{"a newer version supersedes", ask(3, ""), lookup{version: 2, known: true}, AskPlan{Status: Asked, JobVersion: 3, Raise: true, Supersede: true}},
		{"an older version", ask(1, ""), lookup{version: 2, known: true}, AskPlan{Status: Stale, JobVersion: 2}},
		{"recorded before", ask(2, ""), lookup{version: 2, known: true, recorded: true}, AskPlan{Status: Duplicate, JobVersion: 2}},
		{"recorded at a version the job moved past", ask(1, ""), lookup{version: 2, known: true, recorded: true}, AskPlan{Status: Duplicate, JobVersion: 2}},
		{"recorded, asking for its own proposal", ask(2, "pr_1"), lookup{version: 2, known: true, recorded: true, proposal: pending,
			asker: ProposalAsker{QuestionID: "q-2", TaskVersion: 2, State: bridge.StatePending}}, AskPlan{Status: Duplicate, JobVersion: 2}},
		{"a new proposal", ask(1, "pr_1"), lookup{}, AskPlan{Status: Asked, JobVersion: 1, Raise: true, Proposal: fresh}},
		{"a proposal another question waits on", ask(2, "pr_1"), lookup{version: 2, known: true, proposal: pending,
			asker: ProposalAsker{QuestionID: "q-1", TaskVersion: 2, State: bridge.StatePending}},
			AskPlan{Status: Refused, JobVersion: 2, Problem: "proposal.id: pr_1 is already asked for by question q-1, which waits"}},
		{"a proposal a newer version takes over", ask(3, "pr_1"), lookup{version: 2, known: true, proposal: pending,
			asker: ProposalAsker{QuestionID: "q-1", TaskVersion: 2, State: bridge.StatePending}},
			AskPlan{Status: Asked, JobVersion: 3, Raise: true, Supersede: true, Proposal: bound}},
		{"another job's proposal", ask(1, "pr_1"), lookup{proposal: &Proposal{ID: "pr_1", JobID: "job-9", State: bridge.ProposalPending}},
			AskPlan{Status: Refused, Problem: "proposal.id: pr_1 is a proposal of job job-9; a job proposes under ids of its own"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PlanAsk(context.Background(), tt.nq, tt.l)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PlanAsk = %+v (proposal %+v), want %+v (proposal %+v)", got, got.Proposal, tt.want, tt.want.Proposal)
			}
		})
	}
	t.Run("a failed read", func(t *testing.T) {
		failed := errors.New("read failed")
		if _, err := PlanAsk(context.Background(), ask(1, ""), lookup{err: failed}); !errors.Is(err, failed) {
			t.Errorf("PlanAsk with a failed read = %v, want it", err)
		}
	})
}
