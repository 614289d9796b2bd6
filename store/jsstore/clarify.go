package jsstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/askbridge/askbridge/store/record"
)

// The clarification measures read a replica's view of the state index
// (stateview.go), whose keys hold what they need of each question, and its
// view of the gate's refusals (refusalview.go).

// jobRef names a job.
type jobRef struct{ tenant, job string }

// ClarifyQuestions returns the questions of every job that had a question
// asked since since (of tenant, when given), each job's in the order they
// were asked: the earlier ones too, for a repeat or a reopen reads the
// job's answers before the window. It reads the replica's view of the
// state index, and no document but, once, those of questions indexed
// before the index held their facts.
func (s *Store) ClarifyQuestions(ctx context.Context, tenant string, since time.Time) ([]record.ClarifyQuestion, error) {
	var out []record.ClarifyQuestion
	if err := s.readFacts(ctx, func(ix *record.ClarifyIndex) { out = ix.Questions(tenant, since) }); err != nil {
		return nil, fmt.Errorf("jsstore: read questions for the clarification measures: %w", err)
	}
	return out, nil
}

// readFacts runs f on the view's facts, brought up to date first. A view
// holding questions without their facts (state index keys written before
// they held them) reads their documents and gives it their facts first.
func (s *Store) readFacts(ctx context.Context, f func(*record.ClarifyIndex)) error {
	var unknown []int64
	err := s.read(ctx, &s.index.keyView, func() {
		if unknown = s.index.unknownIDs(); len(unknown) == 0 {
			f(&s.index.facts)
		}
	})
	if err != nil || len(unknown) == 0 {
		return err
	}
	if err := s.learnFacts(ctx, unknown); err != nil {
		return err
	}
	return s.read(ctx, &s.index.keyView, func() { f(&s.index.facts) })
}

// learnFacts reads the documents of unknown, questions the view holds
// without their facts, and gives the view their facts.
func (s *Store) learnFacts(ctx context.Context, unknown []int64) error {
	for chunk := range slices.Chunk(unknown, learnAtOnce) {
		docs, _, err := s.getDocs(ctx, chunk)
		if err != nil {
			return err
		}
		s.index.mu.Lock()
		for _, d := range docs {
			if d != nil {
				s.index.learn(d)
			}
		}
		s.index.mu.Unlock()
	}
	return nil
}

// learnAtOnce is how many documents learnFacts reads at once.
const learnAtOnce = 256

// timedOutReason is the audit reason of a question ended by its timeout
// (runtime/ladder.go).
const timedOutReason = "timed out"

// GateDecisions counts the gate's refusals in [since, until) (of tenant,
// when given) by job and code, with the agent of each job's latest
// question. It reads the replica's view of the refusals (refusalview.go)
// and of the state index: allowed decisions, most of the gate's, are not
// held, and refusals past the gate's retention are gone.
func (s *Store) GateDecisions(ctx context.Context, tenant string, since, until time.Time) ([]record.GateDecision, error) {
	lo, hi := since.UnixMilli(), until.UnixMilli()
	if since.IsZero() {
		lo = 0
	}
	type group struct {
		jobRef
		code string
	}
	counts := map[group]int64{}
	err := s.read(ctx, &s.refusals.keyView, func() {
		s.refusals.each(tenant, func(r refusal) {
			if r.at >= lo && r.at < hi {
				counts[group{jobRef{r.tenant, r.job}, r.code}]++
			}
		})
	})
	if err != nil {
		return nil, fmt.Errorf("jsstore: read gate refusals: %w", err)
	}
	agents := map[jobRef]string{}
	for g := range counts {
		agents[g.jobRef] = ""
	}
	if len(agents) > 0 {
		latest := func(ix *record.ClarifyIndex) {
			for j := range agents {
				agents[j] = ix.LatestAgent(j.tenant, j.job)
			}
		}
		if err := s.readFacts(ctx, latest); err != nil {
			return nil, fmt.Errorf("jsstore: read gate refusals: %w", err)
		}
	}
	out := make([]record.GateDecision, 0, len(counts))
	for g, n := range counts {
		out = append(out, record.GateDecision{Tenant: g.tenant, JobID: g.job, Agent: agents[g.jobRef], Code: g.code, Count: n})
	}
	slices.SortFunc(out, func(a, b record.GateDecision) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.JobID, b.JobID), cmp.Compare(a.Code, b.Code))
	})
	return out, nil
}
