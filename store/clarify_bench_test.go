package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/askbridge/askbridge/store/record"
)

// BenchmarkClarifyQuestions measures what a stats request or a /metrics
// scrape reads for the clarification measures: 100,000 questions over 30
// days, two a job, of which a 7-day window holds about 23,000.
func BenchmarkClarifyQuestions(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "askbridge.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const n = 100_000
	step := 30 * 24 * time.Hour / n
	var nqs []record.NewQuestion
	for i := range n {
		nq := newQ(fmt.Sprintf("job-%d", i/2), fmt.Sprintf("q-%d", i%2), 1)
		nq.Body = []byte(`{"question":"Which colour?","agent":"support","missing_field":"colour","choices":["red","blue"]}`)
		nq.AskedAt = t0.Add(time.Duration(i) * step)
		nq.Deadline = nq.AskedAt.Add(4 * time.Hour)
		nq.Supersede = nil
		nqs = append(nqs, nq)
		if len(nqs) == 500 {
			if _, err := s.AskMany(ctx, nqs); err != nil {
				b.Fatal(err)
			}
			nqs = nqs[:0]
		}
	}
	since := t0.Add(23 * 24 * time.Hour)
	b.ResetTimer()
	for range b.N {
		qs, err := s.ClarifyQuestions(ctx, "", since)
		if err != nil {
			b.Fatal(err)
		}
		if len(qs) < 23_000 || len(qs) > 23_400 {
			b.Fatalf("%d questions in the window", len(qs))
		}
	}
}
