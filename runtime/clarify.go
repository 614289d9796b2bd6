package runtime

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// The clarification measures (docs/contract.md, "Clarification metrics"),
// computed from the record: the questions and the gate's log entries.

// clarifyGroup accumulates one group's measures and its times to answer.
type clarifyGroup struct {
	m     bridge.ClarificationMeasures
	waits []float64
}

// grouper names the group of a question or gate decision: the tenant and
// agent themselves for the API, bounded label values for /metrics.
type grouper func(tenant, agent string) (string, string)

// clarify computes the measures of the questions asked in [since, until)
// and the gate decisions made then. qs come as the record's ClarifyQuestions
// returns them: by job, in the order they were asked, earlier ones too.
func clarify(qs []record.ClarifyQuestion, gates []record.GateDecision, since, until time.Time, group grouper) (total *clarifyGroup, groups []*clarifyGroup) {
	total = &clarifyGroup{}
	byKey := map[[2]string]*clarifyGroup{}
	groupOf := func(tenant, agent string) *clarifyGroup {
		t, a := group(tenant, agent)
		g := byKey[[2]string{t, a}]
		if g == nil {
			g = &clarifyGroup{m: bridge.ClarificationMeasures{Tenant: t, Agent: a}}
			byKey[[2]string{t, a}] = g
			groups = append(groups, g)
		}
		return g
	}
	for start := 0; start < len(qs); {
		end := start + 1
		for end < len(qs) && qs[end].Tenant == qs[start].Tenant && qs[end].JobID == qs[start].JobID {
			end++
		}
		job := qs[start:end]
		for i := range job {
			q := &job[i]
			if q.AskedAt.Before(since) || !q.AskedAt.Before(until) {
				continue
			}
			repeated, reopened := repeatsOrReopens(job[:i], q)
			for _, g := range []*clarifyGroup{total, groupOf(q.Tenant, q.Agent)} {
				g.count(q, repeated, reopened)
			}
		}
		start = end
	}
	for _, d := range gates { // refusals of [since, until), counted
		if d.Code == bridge.GateAllowed || d.Code == "" {
			continue
		}
		for _, g := range []*clarifyGroup{total, groupOf(d.Tenant, d.Agent)} {
			g.gate(d.Code, d.Count)
		}
	}
	slices.SortFunc(groups, func(a, b *clarifyGroup) int {
		if a.m.Tenant != b.m.Tenant {
			return cmp.Compare(a.m.Tenant, b.m.Tenant)
		}
		return cmp.Compare(a.m.Agent, b.m.Agent)
	})
	total.finish()
	for _, g := range groups {
		g.finish()
	}
	return total, groups
}

// repeatsOrReopens reports whether q, asked after the questions before it
// on its job, repeats a missing_field one of them had answered, and
// whether it came within bridge.ReopenWindow of one of their answers.
func repeatsOrReopens(before []record.ClarifyQuestion, q *record.ClarifyQuestion) (repeated, reopened bool) {
	for _, p := range before {
		if p.State != bridge.StateAnswered || p.SettledAt.After(q.AskedAt) {
			continue
		}
		if q.MissingField != "" && p.MissingField == q.MissingField {
			repeated = true
		}
		if q.AskedAt.Sub(p.SettledAt) <= bridge.ReopenWindow {
			reopened = true
		}
	}
	return repeated, reopened
}

func (g *clarifyGroup) count(q *record.ClarifyQuestion, repeated, reopened bool) {
	m := &g.m
	m.Asked++
	switch {
	case q.TimedOut:
		m.TimedOut++
	case q.State == bridge.StateAnswered:
		m.Answered++
		g.waits = append(g.waits, q.SettledAt.Sub(q.AskedAt).Seconds())
	case q.State == bridge.StateDeclined:
		m.Declined++
	case q.State == bridge.StateCancelled:
		m.Cancelled++
	case q.State == bridge.StateSuperseded:
		m.Superseded++
	case q.State == bridge.StateFailed:
		m.Failed++
	default:
		m.Pending++
	}
	if repeated {
		m.Repeated++
	}
	if reopened {
		m.Reopened++
	}
}

func (g *clarifyGroup) gate(code string, n int64) {
	if g.m.GateRefusals == nil {
		g.m.GateRefusals = map[string]int64{}
	}
	g.m.GateRefusals[code] += n
	if code != bridge.GateInvalid && code != bridge.GateUnavailable {
		g.m.PrematureActionsBlocked += n
	}
}

// finish works out the rates and the times to answer.
func (g *clarifyGroup) finish() {
	m := &g.m
	if m.GateRefusals == nil {
		m.GateRefusals = map[string]int64{}
	}
	if m.Asked > 0 {
		n := float64(m.Asked)
		m.ResolutionRate = float64(m.Answered) / n
		m.DeclineRate = float64(m.Declined) / n
		m.AbandonmentRate = float64(m.TimedOut) / n
		m.RepetitionRate = float64(m.Repeated) / n
		m.ReopenRate = float64(m.Reopened) / n
	}
	slices.Sort(g.waits)
	m.TimeToAnswerP50, m.TimeToAnswerP90 = nearestRank(g.waits, 0.5), nearestRank(g.waits, 0.9)
}

// nearestRank is the p quantile of sorted by the nearest-rank method: the
// smallest value with at least p of them at or below it; 0 when empty.
func nearestRank(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}
