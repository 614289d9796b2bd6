package jsstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/store/record"
)

// viewQuestions is how many questions BenchmarkCountByState fills the
// record with: docs/benchmarks.md's stats target is for 100,000.
const viewQuestions = 100_000

// BenchmarkCountByState counts 100,000 questions by state, a third of them
// answered, as each /metrics scrape and `askbridge stats` do: from the
// replica's state view, and (the baseline) by reading the state index.
// first-ms is the first count's, which starts the view's watch and reads
// the index once.
func BenchmarkCountByState(b *testing.B) {
	ctx := context.Background()
	s := openTest(b)
	fillQuestions(b, s, viewQuestions)
	b.Run("view", func(b *testing.B) {
		start := time.Now()
		if _, err := s.CountByState(ctx); err != nil {
			b.Fatal(err)
		}
		first := time.Since(start)
		for b.Loop() {
			if _, err := s.CountByState(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(first.Microseconds())/1000, "first-ms")
	})
	// The rest of a stats request or a scrape: the clarification
	// measures read the view's questions of the jobs asked in the window.
	for _, c := range []struct {
		name  string
		since time.Time
	}{{"clarify-none-in-window", t0.Add(24 * time.Hour)}, {"clarify-all-in-window", t0.Add(-time.Hour)}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.ClarifyQuestions(ctx, "", c.since); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("backlog", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.OutboxBacklogAfter(ctx, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("index-scan", func(b *testing.B) {
		for b.Loop() {
			if keys, err := s.states(ctx, "qs.>"); err != nil || len(keys) != viewQuestions {
				b.Fatalf("%d keys, %v", len(keys), err)
			}
		}
	})
}

// fillQuestions asks n questions, 100 a transaction from 8 writers, and
// answers every third.
func fillQuestions(b *testing.B, s *Store, n int) {
	b.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for first := w * 100; first < n; first += 800 {
				nqs := make([]record.NewQuestion, 0, 100)
				for i := first; i < min(first+100, n); i++ {
					nqs = append(nqs, newQ(fmt.Sprintf("job-%06d", i), "q-1", 1))
				}
				res, err := s.AskMany(ctx, nqs)
				if err != nil {
					errs <- err
					return
				}
				var ds []record.Decision
				for i, r := range res {
					if (first+i)%3 == 0 {
						ds = append(ds, answer(r.Record.ID, "red"))
					}
				}
				if _, err := s.Decide(ctx, ds); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
