package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// The clarification read takes what it needs of each question from the
// indexes of migration 007, reading no row of questions: a row read for
// each made a stats request with 23,000 questions in its window slow
// (BenchmarkStats in runtime). An expression of the query that drifts
// from the index's shows here as a plan that reads the table.
func TestClarifyReadsNoRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, job := range []string{"job-1", "job-2"} {
		mustAsk(t, s, newQ(job, "q-1", 1))
	}
	rows, err := s.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+clarifyQuery, timedOutReason, int64(0), "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	covered := 0
	for _, step := range plan {
		reads := strings.HasPrefix(step, "SEARCH q ") || strings.HasPrefix(step, "SCAN q") ||
			strings.HasPrefix(step, "SEARCH questions ") || strings.HasPrefix(step, "SCAN questions")
		switch {
		case reads && strings.Contains(step, "USING COVERING INDEX questions_by_"):
			covered++
		case reads:
			t.Errorf("the clarification read reads rows of questions: %q", step)
		}
	}
	if covered != 2 {
		t.Errorf("the clarification read uses %d covering indexes of questions, want 2; plan:\n%s", covered, strings.Join(plan, "\n"))
	}
}
