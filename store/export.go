package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/askbridge/askbridge/store/record"
)

// Export hands the whole record to imp, for a store of another kind
// (askbridge migrate). The service must be stopped: Export reads, it does
// not lock out writers.
func (s *Store) Export(ctx context.Context, imp record.Importer) error {
	for _, part := range []struct {
		what string
		run  func(context.Context, record.Importer) error
	}{
		{"jobs", s.exportJobs},
		{"questions", s.exportQuestions},
		{"proposals", s.exportProposals},
		{"job log", s.exportLog},
		{"attempts", s.exportAttempts},
		{"outbox", s.exportOutbox},
		{"meta", s.exportMeta},
	} {
		if err := part.run(ctx, imp); err != nil {
			return fmt.Errorf("store: export %s: %w", part.what, err)
		}
	}
	return nil
}

// each runs query and calls scan for every row.
func (s *Store) each(ctx context.Context, query string, scan func(*sql.Rows) error, args ...any) error {
	rows, err := s.rs.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *Store) exportJobs(ctx context.Context, imp record.Importer) error {
	return s.each(ctx, "SELECT tenant, job_id, task_version, updated_at FROM jobs ORDER BY tenant, job_id", func(rows *sql.Rows) error {
		var j record.ExportedJob
		var at int64
		if err := rows.Scan(&j.Tenant, &j.JobID, &j.TaskVersion, &at); err != nil {
			return err
		}
		j.UpdatedAt = fromMS(at)
		return imp.Job(ctx, j)
	})
}

// exportQuestions reads questions a page at a time, each with its steps,
// deliveries, audit and snoozes.
func (s *Store) exportQuestions(ctx context.Context, imp record.Importer) error {
	var after int64
	for {
		var page []record.ExportedQuestion
		err := s.each(ctx, "SELECT "+recordColumns+", staleness FROM questions WHERE id > ? ORDER BY id LIMIT 500", func(rows *sql.Rows) error {
			var staleness int
			r, err := scanRecord(rows, &staleness)
			if err != nil {
				return err
			}
			page = append(page, record.ExportedQuestion{Record: *r, Staleness: staleness})
			return nil
		}, after)
		if err != nil || len(page) == 0 {
			return err
		}
		for i := range page {
			if err := s.exportDetails(ctx, &page[i]); err != nil {
				return fmt.Errorf("question %d: %w", page[i].ID, err)
			}
			if err := imp.Question(ctx, page[i]); err != nil {
				return fmt.Errorf("question %d: %w", page[i].ID, err)
			}
		}
		after = page[len(page)-1].ID
	}
}

// exportDetails reads a question's child rows.
func (s *Store) exportDetails(ctx context.Context, q *record.ExportedQuestion) error {
	err := s.each(ctx, "SELECT idx, target, due FROM steps WHERE question = ? ORDER BY due, idx", func(rows *sql.Rows) error {
		var st record.Step
		var due int64
		if err := rows.Scan(&st.Index, &st.Target, &due); err != nil {
			return err
		}
		st.Due = fromMS(due)
		q.Steps = append(q.Steps, st)
		return nil
	}, q.ID)
	if err != nil {
		return err
	}
	err = s.each(ctx, "SELECT identity, until, step FROM snoozes WHERE question = ? ORDER BY identity", func(rows *sql.Rows) error {
		var sn record.ExportedSnooze
		var until int64
		if err := rows.Scan(&sn.Identity, &until, &sn.Step); err != nil {
			return err
		}
		sn.Until = fromMS(until)
		q.Snoozes = append(q.Snoozes, sn)
		return nil
	}, q.ID)
	if err != nil {
		return err
	}
	err = s.each(ctx, "SELECT proposal_id FROM proposals WHERE question = ?", func(rows *sql.Rows) error {
		return rows.Scan(&q.ProposalID)
	}, q.ID)
	if err != nil {
		return err
	}
	if q.Deliveries, err = s.Deliveries(ctx, q.ID); err != nil {
		return err
	}
	q.Audit, err = s.Audit(ctx, q.ID)
	return err
}

func (s *Store) exportProposals(ctx context.Context, imp record.Importer) error {
	return s.each(ctx, "SELECT "+proposalColumns+" FROM proposals ORDER BY question", func(rows *sql.Rows) error {
		p, err := scanProposal(rows)
		if err != nil {
			return err
		}
		return imp.Proposal(ctx, *p)
	})
}

func (s *Store) exportLog(ctx context.Context, imp record.Importer) error {
	return s.each(ctx, "SELECT id, tenant, job_id, kind, question_id, body, at FROM job_log ORDER BY id", func(rows *sql.Rows) error {
		e, err := scanLogEntry(rows)
		if err != nil {
			return err
		}
		return imp.Log(ctx, e)
	})
}

func (s *Store) exportAttempts(ctx context.Context, imp record.Importer) error {
	return s.each(ctx, "SELECT attempt_id, question, at FROM attempts ORDER BY at", func(rows *sql.Rows) error {
		var a record.ExportedAttempt
		var at int64
		if err := rows.Scan(&a.ID, &a.Question, &at); err != nil {
			return err
		}
		a.At = fromMS(at)
		return imp.Attempt(ctx, a)
	})
}

func (s *Store) exportOutbox(ctx context.Context, imp record.Importer) error {
	return s.each(ctx, "SELECT subject, data, created_at FROM outbox WHERE sent_at IS NULL ORDER BY id", func(rows *sql.Rows) error {
		var m record.Message
		var at int64
		if err := rows.Scan(&m.Subject, &m.Data, &at); err != nil {
			return err
		}
		return imp.Outbox(ctx, m, fromMS(at))
	})
}

func (s *Store) exportMeta(ctx context.Context, imp record.Importer) error {
	return s.each(ctx, "SELECT key, value FROM meta ORDER BY key", func(rows *sql.Rows) error {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		return imp.Meta(ctx, k, v)
	})
}
