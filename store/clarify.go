package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// ClarifyQuestions returns the questions of every job that had a question
// asked since since (of tenant, when given), each job's in the order they
// were asked: the earlier ones too, for a repeat or a reopen reads the
// job's answers before the window. They come from the store's index of
// every question (clarifyView), brought up to date first.
func (s *Store) ClarifyQuestions(ctx context.Context, tenant string, since time.Time) ([]record.ClarifyQuestion, error) {
	var out []record.ClarifyQuestion
	if err := s.readClarify(ctx, func(ix *record.ClarifyIndex) { out = ix.Questions(tenant, since) }); err != nil {
		return nil, fmt.Errorf("store: read questions for the clarification measures: %w", err)
	}
	return out, nil
}

// readClarify runs f on the clarification index, brought up to date first.
func (s *Store) readClarify(ctx context.Context, f func(*record.ClarifyIndex)) error {
	v := &s.clarify
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.catchUp(ctx, s.r); err != nil {
		return err
	}
	f(&v.ix)
	return nil
}

// clarifyView is the store's record.ClarifyIndex of every question, made
// on its first use and kept current by reading, at each use, only what
// was written since the last: the questions asked since (ids past the
// last one read) and those with an audit entry since (every change of a
// question's state or body writes one, and no audit entry is deleted, so
// its ids only grow). It costs the memory of every question's measures,
// about 250 bytes each.
type clarifyView struct {
	mu sync.Mutex
	ix record.ClarifyIndex
	// lastQuestion and lastAudit are the last ids read.
	lastQuestion, lastAudit int64
	// page is how many ids a read takes; 0 is catchUpPage (tests lower it).
	page int64
}

// catchUp reads into the index what was written since the last call, a
// page of ids at a time, so that a call cut short by its context leaves
// the next less to read.
func (v *clarifyView) catchUp(ctx context.Context, db *sql.DB) error {
	var lastAudit, lastQuestion int64
	if err := db.QueryRowContext(ctx, "SELECT (SELECT COALESCE(MAX(id), 0) FROM audit), (SELECT COALESCE(MAX(id), 0) FROM questions)").
		Scan(&lastAudit, &lastQuestion); err != nil {
		return err
	}
	// A question read from here on is read as it stands after every audit
	// entry up to lastAudit: only those read before need theirs.
	readBefore, page := v.lastQuestion, cmp.Or(v.page, catchUpPage)
	for v.lastQuestion < lastQuestion {
		to := min(lastQuestion, v.lastQuestion+page)
		if err := v.put(ctx, db, clarifyAsked, v.lastQuestion, to); err != nil {
			return err
		}
		v.lastQuestion = to
	}
	for v.lastAudit < lastAudit {
		to := min(lastAudit, v.lastAudit+page)
		if err := v.put(ctx, db, clarifyAudited, v.lastAudit, to, readBefore); err != nil {
			return err
		}
		v.lastAudit = to
	}
	return nil
}

// catchUpPage is how many ids catchUp reads at a time.
const catchUpPage = 10_000

// put reads the questions query selects into the index.
func (v *clarifyView) put(ctx context.Context, db *sql.DB, query string, args ...any) error {
	rows, err := db.QueryContext(ctx, query, append([]any{timedOutReason}, args...)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var q record.ClarifyQuestion
		var id, asked, settled int64
		if err := rows.Scan(&id, &q.Tenant, &q.JobID, &q.QuestionID, &q.Agent, &q.MissingField, &q.State, &asked, &settled, &q.TimedOut); err != nil {
			return err
		}
		q.AskedAt, q.SettledAt = fromMS(asked), fromMS(settled)
		q.TimedOut = q.TimedOut || q.State == bridge.StateTimedOut
		v.ix.Put(id, q)
	}
	return rows.Err()
}

// clarifyColumns are what the measures read of a question q; only a
// failed question, which a timeout may have ended, is looked up in the
// audit (?1 is timedOutReason).
const clarifyColumns = `SELECT q.id, q.tenant, q.job_id, q.question_id,
		COALESCE(json_extract(q.body, '$.agent'), ''), COALESCE(json_extract(q.body, '$.missing_field'), ''),
		q.state, q.asked_at, q.settled_at,
		q.state = 'failed' AND EXISTS (SELECT 1 FROM audit a WHERE a.question = q.id AND a.from_state = 'pending' AND a.to_state = q.state AND a.reason = ?1)
	FROM questions q `

// clarifyAsked reads the questions of ids in (?2, ?3]; clarifyAudited
// those up to ?4 with audit entries of ids in (?2, ?3].
const (
	clarifyAsked   = clarifyColumns + `WHERE q.id > ?2 AND q.id <= ?3`
	clarifyAudited = clarifyColumns + `WHERE q.id IN (SELECT question FROM audit WHERE id > ?2 AND id <= ?3) AND q.id <= ?4`
)

// timedOutReason is the audit reason of a question ended by its timeout
// (runtime/ladder.go).
const timedOutReason = "timed out"

// GateDecisions counts the gate's refusals in [since, until) (of tenant,
// when given) by job and code, as the gate wrote them (kind gate,
// docs/design.md); allowed decisions, most of the gate's rows, are not
// read (the partial index job_log_gate_refusals holds only refusals). The
// agent of each job's latest question comes from the clarification index.
func (s *Store) GateDecisions(ctx context.Context, tenant string, since, until time.Time) ([]record.GateDecision, error) {
	rows, err := s.rs.query(ctx, `SELECT l.tenant, l.job_id, COALESCE(json_extract(l.body, '$.code'), '') AS code, count(*)
		FROM job_log l INDEXED BY job_log_gate_refusals
		WHERE l.kind = 'gate' AND json_extract(l.body, '$.code') <> 'allowed' AND l.at >= ? AND l.at < ? AND (? = '' OR l.tenant = ?)
		GROUP BY l.tenant, l.job_id, code
		ORDER BY l.tenant, l.job_id, code`, ms(since), ms(until), tenant, tenant)
	if err != nil {
		return nil, fmt.Errorf("store: read gate refusals: %w", err)
	}
	defer rows.Close()
	var out []record.GateDecision
	for rows.Next() {
		var d record.GateDecision
		if err := rows.Scan(&d.Tenant, &d.JobID, &d.Code, &d.Count); err != nil {
			return nil, fmt.Errorf("store: read gate refusals: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil || len(out) == 0 {
		return out, err
	}
	err = s.readClarify(ctx, func(ix *record.ClarifyIndex) {
		for i := range out {
			out[i].Agent = ix.LatestAgent(out[i].Tenant, out[i].JobID)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("store: read gate refusals: %w", err)
	}
	return out, nil
}
