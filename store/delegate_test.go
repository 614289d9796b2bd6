package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// TestSnoozesStepsAndEnd: a snooze holds one identity until its step;
// a second snooze of theirs moves the same step; another person's takes
// its own; firing the step forgets the snooze; a settled question takes
// no snooze.
func TestSnoozesStepsAndEnd(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	rec := mustAsk(t, s, newQ("job-1", "q-1", 1)).Record
	snooze := func(id, who string, until time.Time) error {
		errs, err := s.Decide(ctx, []record.Decision{{Snooze: &record.Snooze{AttemptID: id, Question: rec.ID, Identity: who, Until: until, Reason: "snoozed", At: t0}}})
		if err != nil {
			return err
		}
		return errs[0]
	}
	if err := snooze("a1", "slack:UANA", t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := snooze("a2", "slack:UANA", t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := snooze("a3", "slack:UBEN", t0.Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := snooze("a3", "slack:UBEN", t0.Add(30*time.Minute)); !errors.Is(err, record.ErrDuplicate) {
		t.Fatalf("the same attempt again: %v", err)
	}
	held, err := s.Snoozes(ctx, rec.ID, t0)
	if err != nil || len(held) != 2 || !held["slack:UANA"].Equal(t0.Add(3*time.Hour)) {
		t.Fatalf("snoozes = %v, %v", held, err)
	}
	var snoozeSteps []record.DueStep
	due, _ := s.DueSteps(ctx, t0.Add(5*time.Hour), 10)
	for _, d := range due {
		if d.Target == record.StepSnooze {
			snoozeSteps = append(snoozeSteps, d)
		}
	}
	if len(snoozeSteps) != 2 || snoozeSteps[0].Index == snoozeSteps[1].Index || !snoozeSteps[1].Due.Equal(t0.Add(3*time.Hour)) {
		t.Fatalf("snooze steps = %+v", snoozeSteps)
	}
	who, until, err := s.SnoozeOf(ctx, rec.ID, snoozeSteps[1].Index)
	if err != nil || who != "slack:UANA" || !until.Equal(t0.Add(3*time.Hour)) {
		t.Fatalf("snooze of step %d: %s %v %v", snoozeSteps[1].Index, who, until, err)
	}
	if err := s.FireStep(ctx, snoozeSteps[1], t0.Add(3*time.Hour), "reminded snooze", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SnoozeOf(ctx, rec.ID, snoozeSteps[1].Index); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("the fired snooze is still on record: %v", err)
	}
	// Settled: no snooze taken.
	if errs, err := s.Decide(ctx, []record.Decision{{Settle: &record.Settlement{Question: rec.ID, State: bridge.StateAnswered, Action: bridge.ActionAnswer, At: t0}}}); err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	if err := snooze("a4", "slack:UCAT", t0.Add(time.Hour)); !errors.Is(err, record.ErrNotPending) {
		t.Fatalf("a snooze on a settled question: %v", err)
	}
}

// TestDelegationRewritesThePendingQuestion: the body is written anew and
// audited; a settled question takes no delegation.
func TestDelegationRewritesThePendingQuestion(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	rec := mustAsk(t, s, newQ("job-1", "q-1", 1)).Record
	body := []byte(`{"question":"Which?","answerers":["slack:UDANA"]}`)
	errs, err := s.Decide(ctx, []record.Decision{{Delegate: &record.Delegation{AttemptID: "d1", Question: rec.ID, Body: body, By: "slack:UANA", Via: "slack",
		Reason: "slack:UANA asked slack:UDANA to answer.", At: t0}}})
	if err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	got, _ := s.Get(ctx, rec.ID)
	if string(got.Body) != string(body) || got.State != bridge.StatePending {
		t.Fatalf("record after the delegation: %s %s", got.Body, got.State)
	}
	audit, _ := s.Audit(ctx, rec.ID)
	if last := audit[len(audit)-1]; last.By != "slack:UANA" || last.Reason != "slack:UANA asked slack:UDANA to answer." || last.To != bridge.StatePending {
		t.Fatalf("audit = %+v", audit)
	}
	if errs, err := s.Decide(ctx, []record.Decision{{Settle: &record.Settlement{Question: rec.ID, State: bridge.StateAnswered, Action: bridge.ActionAnswer, At: t0}}}); err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	errs, err = s.Decide(ctx, []record.Decision{{Delegate: &record.Delegation{AttemptID: "d2", Question: rec.ID, Body: []byte(`{}`), At: t0}}})
	if err != nil || !errors.Is(errs[0], record.ErrNotPending) {
		t.Fatalf("a delegation on a settled question: %v %v", err, errs)
	}
}
