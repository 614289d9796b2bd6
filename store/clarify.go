package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// ClarifyQuestions returns the questions of every job that had a question
// asked since since (of tenant, when given), each job's in the order they
// were asked: the earlier ones too, for a repeat or a reopen reads the
// job's answers before the window. It reads two indexes and no row
// (migration 007): the expressions are the ones questions_by_job holds,
// and only a failed question, which a timeout may have ended, is looked up
// in the audit.
func (s *Store) ClarifyQuestions(ctx context.Context, tenant string, since time.Time) ([]record.ClarifyQuestion, error) {
	var inWindow int
	if err := s.rs.queryRow(ctx, `SELECT count(*) FROM questions WHERE asked_at >= ? AND (? = '' OR tenant = ?)`,
		ms(since), tenant, tenant).Scan(&inWindow); err != nil {
		return nil, fmt.Errorf("store: read questions for the clarification measures: %w", err)
	}
	rows, err := s.rs.query(ctx, clarifyQuery, timedOutReason, ms(since), tenant, tenant)
	if err != nil {
		return nil, fmt.Errorf("store: read questions for the clarification measures: %w", err)
	}
	defer rows.Close()
	// The window's questions and a few earlier ones of its jobs: sized once,
	// for growing a slice of 23,000 was a quarter of the read.
	out := make([]record.ClarifyQuestion, 0, inWindow+inWindow/8)
	var words interned
	var tenantB, agentB, fieldB, stateB sql.RawBytes
	for rows.Next() {
		var q record.ClarifyQuestion
		var asked, settled int64
		if err := rows.Scan(&tenantB, &q.JobID, &q.QuestionID, &agentB, &fieldB, &stateB, &asked, &settled, &q.TimedOut); err != nil {
			return nil, fmt.Errorf("store: read questions for the clarification measures: %w", err)
		}
		q.Tenant, q.Agent, q.MissingField, q.State = words.of(tenantB), words.of(agentB), words.of(fieldB), words.of(stateB)
		q.AskedAt, q.SettledAt = fromMS(asked), fromMS(settled)
		q.TimedOut = q.TimedOut || q.State == bridge.StateTimedOut
		out = append(out, q)
	}
	return out, rows.Err()
}

// interned hands out one string for each distinct value read: a window's
// questions share a few tenants, agents, fields and states.
type interned map[string]string

func (m *interned) of(b []byte) string {
	if s, ok := (*m)[string(b)]; ok {
		return s
	}
	if *m == nil {
		*m = map[string]string{}
	}
	s := string(b)
	(*m)[s] = s
	return s
}

// clarifyQuery reads what ClarifyQuestions returns, from the indexes
// questions_by_asked and questions_by_job alone (TestClarifyReadsNoRow).
const clarifyQuery = `SELECT q.tenant, q.job_id, q.question_id,
			COALESCE(json_extract(q.body, '$.agent'), ''), COALESCE(json_extract(q.body, '$.missing_field'), ''),
			q.state, q.asked_at, q.settled_at,
			q.state = 'failed' AND EXISTS (SELECT 1 FROM audit a WHERE a.question = q.id AND a.from_state = 'pending' AND a.to_state = q.state AND a.reason = ?)
		FROM questions q
		WHERE (q.tenant, q.job_id) IN (SELECT tenant, job_id FROM questions WHERE asked_at >= ? AND (? = '' OR tenant = ?))
		ORDER BY q.tenant, q.job_id, q.asked_at, q.id`

// timedOutReason is the audit reason of a question ended by its timeout
// (runtime/ladder.go).
const timedOutReason = "timed out"

// GateDecisions counts the gate's refusals in [since, until) (of tenant,
// when given) by job and code, as the gate wrote them (kind gate,
// docs/design.md); allowed decisions, most of the gate's rows, are not
// read (the partial index job_log_gate_refusals holds only refusals).
func (s *Store) GateDecisions(ctx context.Context, tenant string, since, until time.Time) ([]record.GateDecision, error) {
	rows, err := s.rs.query(ctx, `SELECT g.tenant, g.job_id,
			COALESCE((SELECT json_extract(q.body, '$.agent') FROM questions q WHERE q.tenant = g.tenant AND q.job_id = g.job_id ORDER BY q.id DESC LIMIT 1), ''),
			g.code, g.n
		FROM (SELECT l.tenant, l.job_id, COALESCE(json_extract(l.body, '$.code'), '') AS code, count(*) AS n
			FROM job_log l INDEXED BY job_log_gate_refusals
			WHERE l.kind = 'gate' AND json_extract(l.body, '$.code') <> 'allowed' AND l.at >= ? AND l.at < ? AND (? = '' OR l.tenant = ?)
			GROUP BY l.tenant, l.job_id, code) g
		ORDER BY g.tenant, g.job_id, g.code`, ms(since), ms(until), tenant, tenant)
	if err != nil {
		return nil, fmt.Errorf("store: read gate refusals: %w", err)
	}
	defer rows.Close()
	var out []record.GateDecision
	for rows.Next() {
		var d record.GateDecision
		if err := rows.Scan(&d.Tenant, &d.JobID, &d.Agent, &d.Code, &d.Count); err != nil {
			return nil, fmt.Errorf("store: read gate refusals: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
