package jsstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/askbridge/askbridge/store/record"
)

// The clarification measures read a replica's view of the state index
// (stateview.go), whose keys hold what they need of each question, and the
// gate's refusals, job log keys of their own class and day
// (log.<day>.r.<tenant>.<job>.<nuid>, keyLog). A day is a UTC date,
// 20061231.

// dayStart is the start of t's UTC day.
func dayStart(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// jobRef names a job.
type jobRef struct{ tenant, job string }

// ClarifyQuestions returns the questions of every job that had a question
// asked since since (of tenant, when given), each job's in the order they
// were asked: the earlier ones too, for a repeat or a reopen reads the
// job's answers before the window. It reads the replica's view of the
// state index, and no document but, once, those of questions indexed
// before the index held their facts.
func (s *Store) ClarifyQuestions(ctx context.Context, tenant string, since time.Time) ([]record.ClarifyQuestion, error) {
	if err := s.learnFacts(ctx); err != nil {
		return nil, fmt.Errorf("jsstore: read questions for the clarification measures: %w", err)
	}
	var out []record.ClarifyQuestion
	if err := s.read(ctx, &s.index.keyView, func() { out = s.index.clarify(tenant, since.UnixMilli()) }); err != nil {
		return nil, fmt.Errorf("jsstore: read questions for the clarification measures: %w", err)
	}
	return out, nil
}

// learnFacts reads the documents of the questions the view holds without
// their facts (state index keys written before they held them) and gives
// the view their facts.
func (s *Store) learnFacts(ctx context.Context) error {
	var unknown []int64
	if err := s.read(ctx, &s.index.keyView, func() { unknown = s.index.unknownIDs() }); err != nil {
		return err
	}
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

// unknownIDs lists the questions held without their facts.
func (sv *stateView) unknownIDs() []int64 {
	if sv.unknown == 0 {
		return nil
	}
	var out []int64
	for q, in := range sv.questions {
		if !in.known {
			out = append(out, q)
		}
	}
	return out
}

// learn gives the view the facts of question document d, unless it holds
// them or no longer holds the question. A document read after its index
// key is at least as new: the two are written in one batch.
func (sv *stateView) learn(d *questionDoc) {
	in, ok := sv.questions[d.Record.ID]
	if !ok || in.known {
		return
	}
	in.facts, in.known = factsOf(d), true
	in.facts.Agent, in.facts.MissingField = sv.word(in.facts.Agent), sv.word(in.facts.MissingField)
	sv.questions[d.Record.ID] = in
	sv.unknown--
}

// clarify is ClarifyQuestions of the view, since in Unix milliseconds.
func (sv *stateView) clarify(tenant string, since int64) []record.ClarifyQuestion {
	inWindow := map[jobRef]bool{}
	for _, in := range sv.questions {
		if in.known && in.facts.AskedAt >= since && (tenant == "" || in.tenant == tenant) {
			inWindow[jobRef{in.tenant, in.job}] = true
		}
	}
	jobs := slices.SortedFunc(maps.Keys(inWindow), func(a, b jobRef) int {
		return cmp.Or(cmp.Compare(a.tenant, b.tenant), cmp.Compare(a.job, b.job))
	})
	out := make([]record.ClarifyQuestion, 0, len(inWindow)*2)
	var ids []int64
	for _, j := range jobs {
		ids = append(ids[:0], sv.jobs[j]...)
		slices.SortFunc(ids, func(a, b int64) int {
			return cmp.Or(cmp.Compare(sv.questions[a].facts.AskedAt, sv.questions[b].facts.AskedAt), cmp.Compare(a, b))
		})
		for _, q := range ids {
			if in := sv.questions[q]; in.known {
				out = append(out, clarifyQuestion(q, in))
			}
		}
	}
	return out
}

// clarifyQuestion is question q, held as in, as ClarifyQuestions returns
// it.
func clarifyQuestion(q int64, in indexed) record.ClarifyQuestion {
	f := &in.facts
	c := record.ClarifyQuestion{Tenant: in.tenant, JobID: in.job, QuestionID: f.QuestionID, Agent: f.Agent,
		MissingField: f.MissingField, State: in.state, TimedOut: f.TimedOut, AskedAt: time.UnixMilli(f.AskedAt).UTC()}
	if f.SettledAt != 0 {
		c.SettledAt = time.UnixMilli(f.SettledAt).UTC()
	}
	return c
}

// latestAgents sets the agent of each job of agents to that of its latest
// question.
func (sv *stateView) latestAgents(agents map[jobRef]string) {
	for j := range agents {
		var latest int64
		for _, q := range sv.jobs[j] {
			if in := sv.questions[q]; in.known && q > latest {
				latest, agents[j] = q, in.facts.Agent
			}
		}
	}
}

// timedOutReason is the audit reason of a question ended by its timeout
// (runtime/ladder.go).
const timedOutReason = "timed out"

// GateDecisions counts the gate's refusals in [since, until) (of tenant,
// when given) by job and code, with the agent of each job's latest
// question. It reads only the refusals' keys of the window's days
// (log.<day>.r.>, keyLog): allowed decisions, most of the gate's, are not
// read, nor refusals of other days. Days before the gate's decisions'
// retention are not read: their decisions are gone.
func (s *Store) GateDecisions(ctx context.Context, tenant string, since, until time.Time) ([]record.GateDecision, error) {
	lo, hi := since.UnixMilli(), until.UnixMilli()
	if since.IsZero() {
		lo = 0
	}
	first := dayStart(since)
	if oldest := dayStart(until.Add(-gateLogTTL - 24*time.Hour)); first.Before(oldest) {
		first = oldest
	}
	type group struct {
		jobRef
		code string
	}
	counts := map[group]int64{}
	for day := first; day.UnixMilli() < hi; day = day.Add(24 * time.Hour) {
		filter := "log." + logDay(day) + "." + logClassRefusal + ".>"
		if tenant != "" {
			filter = "log." + logDay(day) + "." + logClassRefusal + "." + enc(tenant) + ".>"
		}
		list, err := s.list(ctx, filter)
		if err != nil {
			return nil, fmt.Errorf("jsstore: read gate refusals: %w", err)
		}
		for _, en := range list {
			tok := strings.Split(en.Key, ".")
			if len(tok) != 6 {
				continue
			}
			e, err := logEntry(dec(tok[3]), dec(tok[4]), en)
			if err != nil {
				return nil, fmt.Errorf("jsstore: read gate refusals: %w", err)
			}
			var c gateCode
			if at := e.At.UnixMilli(); e.At.IsZero() || at < lo || at >= hi || json.Unmarshal(e.Body, &c) != nil || c.Code == nil {
				continue
			}
			counts[group{jobRef{e.Tenant, e.JobID}, *c.Code}]++
		}
	}
	agents := map[jobRef]string{}
	for g := range counts {
		agents[g.jobRef] = ""
	}
	if len(agents) > 0 {
		if err := s.learnFacts(ctx); err != nil {
			return nil, fmt.Errorf("jsstore: read gate refusals: %w", err)
		}
		if err := s.read(ctx, &s.index.keyView, func() { s.index.latestAgents(agents) }); err != nil {
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
