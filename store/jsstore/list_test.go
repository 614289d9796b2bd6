package jsstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/askbridge/askbridge/store/record"
)

// TestManyJobDocsPastOneRead: a job with more questions than one multi
// read answers (1,024 keys) is read in parts, and every question of every
// job comes back, each job's in the order asked.
func TestManyJobDocsPastOneRead(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	asked := map[string]int{"job-big": 1100, "job-small": 10}
	for job, n := range asked {
		for first := 0; first < n; first += 100 {
			var nqs []record.NewQuestion
			for i := first; i < min(first+100, n); i++ {
				nqs = append(nqs, newQ(job, fmt.Sprintf("q-%04d", i), 1))
			}
			if _, err := s.AskMany(ctx, nqs); err != nil {
				t.Fatal(err)
			}
		}
	}
	jobs := []jobRef{{"acme", "job-big"}, {"acme", "job-small"}, {"acme", "job-none"}}
	got, err := s.manyJobDocs(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		docs := got[j]
		if len(docs) != asked[j.job] {
			t.Fatalf("%s: %d questions, want %d", j.job, len(docs), asked[j.job])
		}
		for i, rd := range docs {
			if want := fmt.Sprintf("q-%04d", i); rd.d.Record.QuestionID != want || rd.d.Record.JobID != j.job {
				t.Fatalf("%s: question %d is %s/%s, want %s", j.job, i, rd.d.Record.JobID, rd.d.Record.QuestionID, want)
			}
		}
	}
}
