package jsstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// The clarification measures read by day, so that a window's cost follows
// what happened in it, not the whole record:
//   - askday.<day> marks a day on which a question was asked, and
//     asked.<day>.<tenant>.<job> a job that had one asked that day; both
//     are blind puts of empty values in the ask's batch (markAsked), so a
//     window's jobs are the asked keys of the days from its start on.
//   - the gate's refusals are job log keys of their own class and day
//     (log.<day>.r.<tenant>.<job>.<nuid>, keyLog).
//
// A day is a UTC date, 20061231.

// keyAskDay marks a day on which a question was asked.
func keyAskDay(day string) string { return "askday." + day }

// keyAsked marks a job that had a question asked on day.
func keyAsked(day, tenant, job string) string {
	return "asked." + day + "." + enc(tenant) + "." + enc(job)
}

// markAsked records, in t, that job had a question asked at at, for
// ClarifyQuestions. Every ask writes it; the keys hold nothing.
func (t *txn) markAsked(tenant, job string, at time.Time) {
	day := logDay(at)
	t.putBlind(keyAskDay(day), nil, 0)
	t.putBlind(keyAsked(day, tenant, job), nil, 0)
}

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
// job's answers before the window.
func (s *Store) ClarifyQuestions(ctx context.Context, tenant string, since time.Time) ([]record.ClarifyQuestion, error) {
	jobs, err := s.askedSince(ctx, tenant, since)
	if err != nil {
		return nil, fmt.Errorf("jsstore: read questions for the clarification measures: %w", err)
	}
	var out []record.ClarifyQuestion
	for chunk := range slices.Chunk(jobs, clarifyJobsAtOnce) {
		docs, err := s.manyJobDocs(ctx, chunk)
		if err != nil {
			return nil, fmt.Errorf("jsstore: read questions for the clarification measures: %w", err)
		}
		for _, j := range chunk {
			out = append(out, clarifyJob(docs[j], since)...)
		}
	}
	return out, nil
}

// clarifyJobsAtOnce is how many jobs' documents ClarifyQuestions holds at
// once: a window may hold a hundred thousand.
const clarifyJobsAtOnce = 512

// askedSince lists the jobs that had a question asked on since's day or
// later (of tenant, when given), sorted by tenant and job.
func (s *Store) askedSince(ctx context.Context, tenant string, since time.Time) ([]jobRef, error) {
	days, err := s.list(ctx, keyAskDay("*"))
	if err != nil {
		return nil, err
	}
	first := logDay(since)
	seen := map[jobRef]bool{}
	for _, d := range days {
		day := strings.TrimPrefix(d.Key, keyAskDay(""))
		if day < first {
			continue
		}
		filter := "asked." + day + ".>"
		if tenant != "" {
			filter = "asked." + day + "." + enc(tenant) + ".*"
		}
		keys, err := s.list(ctx, filter)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			tok := strings.Split(k.Key, ".")
			if len(tok) == 4 {
				seen[jobRef{dec(tok[2]), dec(tok[3])}] = true
			}
		}
	}
	jobs := make([]jobRef, 0, len(seen))
	for j := range seen {
		jobs = append(jobs, j)
	}
	slices.SortFunc(jobs, func(a, b jobRef) int {
		return cmp.Or(cmp.Compare(a.tenant, b.tenant), cmp.Compare(a.job, b.job))
	})
	return jobs, nil
}

// clarifyBody is what the measures read of a question's body.
type clarifyBody struct {
	Agent        string `json:"agent"`
	MissingField string `json:"missing_field"`
}

// clarifyJob is every question of a job (docs, its documents in id
// order), in the order asked, when one was asked since since (a day's
// mark is coarser than the window); none otherwise.
func clarifyJob(docs []readDoc, since time.Time) []record.ClarifyQuestion {
	in := false
	out := make([]record.ClarifyQuestion, 0, len(docs))
	for _, rd := range docs {
		d, r := rd.d, &rd.d.Record
		in = in || r.AskedAt.UnixMilli() >= since.UnixMilli()
		var b clarifyBody
		_ = json.Unmarshal(r.Body, &b) // a body without them measures as ""
		q := record.ClarifyQuestion{Tenant: r.Tenant, JobID: r.JobID, QuestionID: r.QuestionID, Agent: b.Agent,
			MissingField: b.MissingField, State: r.State, AskedAt: r.AskedAt, SettledAt: r.SettledAt,
			TimedOut: r.State == bridge.StateTimedOut}
		for _, a := range d.Audit {
			if a.From == bridge.StatePending && a.To == r.State && a.Reason == timedOutReason {
				q.TimedOut = true
			}
		}
		out = append(out, q)
	}
	if !in {
		return nil
	}
	slices.SortStableFunc(out, func(a, b record.ClarifyQuestion) int { return a.AskedAt.Compare(b.AskedAt) })
	return out
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
	out := make([]record.GateDecision, 0, len(counts))
	agents := map[jobRef]string{}
	for g, n := range counts {
		agent, ok := agents[g.jobRef]
		if !ok {
			var err error
			if agent, err = s.latestAgent(ctx, g.tenant, g.job); err != nil {
				return nil, fmt.Errorf("jsstore: read gate refusals: %w", err)
			}
			agents[g.jobRef] = agent
		}
		out = append(out, record.GateDecision{Tenant: g.tenant, JobID: g.job, Agent: agent, Code: g.code, Count: n})
	}
	slices.SortFunc(out, func(a, b record.GateDecision) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.JobID, b.JobID), cmp.Compare(a.Code, b.Code))
	})
	return out, nil
}

// latestAgent is the agent of a job's latest question, "" when it has none.
func (s *Store) latestAgent(ctx context.Context, tenant, job string) (string, error) {
	vs, err := s.versions(ctx, tenant, job, "")
	if err != nil || len(vs) == 0 {
		return "", err
	}
	latest := slices.MaxFunc(vs, func(a, b versioned) int { return cmp.Compare(a.id, b.id) })
	d, _, ok, err := s.getQuestion(ctx, latest.id)
	if err != nil || !ok {
		return "", err
	}
	var b clarifyBody
	_ = json.Unmarshal(d.Record.Body, &b)
	return b.Agent, nil
}
