package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// A round fires the due steps of a job together: one nudge message, each
// question's staleness one higher; a second firing of the same steps does
// nothing.
func TestFireRoundBumpsStaleness(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	a := mustAsk(t, s, newQ("job-1", "q-a", 1)).Record
	later := newQ("job-1", "q-b", 1)
	later.AskedAt = t0.Add(time.Minute)
	b := mustAsk(t, s, later).Record
	mustAsk(t, s, newQ("job-2", "q-c", 1))
	due, err := s.DueSteps(ctx, t0.Add(2*time.Hour), 10)
	if err != nil || len(due) != 3 {
		t.Fatalf("due %v, %v", due, err)
	}
	var round []record.RoundStep
	for _, d := range due {
		if d.Question == a.ID || d.Question == b.ID {
			round = append(round, record.RoundStep{DueStep: d, Reason: "reminded answerers"})
		}
	}
	before := len(unsentSubjects(t, s))
	nudge := []record.Message{{Subject: "ask.v1.event.acme.job-1", Data: []byte("nudge")}}
	if err := s.FireRound(ctx, round, t0.Add(2*time.Hour), nudge); err != nil {
		t.Fatal(err)
	}
	if got := len(unsentSubjects(t, s)); got != before+1 {
		t.Fatalf("outbox grew by %d, want one nudge", got-before)
	}
	if err := s.FireRound(ctx, round, t0.Add(2*time.Hour), nudge); !errors.Is(err, record.ErrStepGone) {
		t.Fatalf("second firing: %v, want ErrStepGone", err)
	}
	q, err := s.JobQueue(ctx, "acme", "job-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(q) != 2 || q[0].QuestionID != "q-a" || q[1].QuestionID != "q-b" || q[0].Staleness != 1 || q[1].Staleness != 1 {
		t.Fatalf("queue %+v", q)
	}
	if err := s.Settle(ctx, record.Settlement{Question: a.ID, State: bridge.StateAnswered, At: t0.Add(3 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if q, _ := s.JobQueue(ctx, "acme", "job-1"); len(q) != 1 || q[0].QuestionID != "q-b" {
		t.Fatalf("queue after an answer %+v", q)
	}
	audit, _ := s.Audit(ctx, b.ID)
	if last := audit[len(audit)-1]; last.Reason != "reminded answerers" {
		t.Fatalf("audit %+v", audit)
	}
}
