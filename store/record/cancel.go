package record

import (
	"context"

	"github.com/askbridge/askbridge/bridge"
)

// CancelPlan is what a JobCancel does to its job, decided by PlanCancel;
// a backend writes it as it says.
type CancelPlan struct {
	// State and Reason are what the questions the cancel ends move to,
	// and why.
	State, Reason string
	// Raise: the job's task version becomes the cancel's NewVersion.
	Raise bool
	ends  func(r *Record) bool
}

// Ends says whether the cancel ends r, a pending question of its job.
func (p CancelPlan) Ends(r *Record) bool { return p.ends(r) }

// PlanCancel decides a cancel. A version bump raises the job to its
// version when that is newer (or the job was never asked), and supersedes
// the job's pending questions below it: a question of the new version can
// be stored before the bump (they come through separate consumers) and
// stays. Otherwise the cancel ends the job's pending questions, of one
// question id when given. job reads the job's task version (known false
// for a job never asked); only a bump reads it.
func PlanCancel(ctx context.Context, c *JobCancel, job func(ctx context.Context) (version int64, known bool, err error)) (CancelPlan, error) {
	if c.NewVersion > 0 {
		version, known, err := job(ctx)
		if err != nil {
			return CancelPlan{}, err
		}
		return CancelPlan{State: bridge.StateSuperseded, Reason: SupersededText(c.NewVersion), Raise: c.NewVersion > version || !known,
			ends: func(r *Record) bool { return r.TaskVersion < c.NewVersion }}, nil
	}
	plan := CancelPlan{State: bridge.StateCancelled, Reason: c.Reason, ends: func(*Record) bool { return true }}
	if c.QuestionID != "" {
		plan.ends = func(r *Record) bool { return r.QuestionID == c.QuestionID }
	}
	return plan, nil
}

// Announce builds, with the cancel's Outbox, the messages that announce
// r's end in state.
func (c *JobCancel) Announce(r Record, state string) []Message {
	if c.Outbox == nil {
		return nil
	}
	r.State = state
	return c.Outbox(&r)
}
