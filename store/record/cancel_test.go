package record

import (
	"context"
	"testing"

	"github.com/askbridge/askbridge/bridge"
)

func TestPlanCancel(t *testing.T) {
	q := func(id string, version int64) *Record {
		return &Record{Key: Key{Tenant: "acme", JobID: "job-1", QuestionID: id, TaskVersion: version}, State: bridge.StatePending}
	}
	pending := []*Record{q("q-1", 1), q("q-2", 2), q("q-3", 3)}
	tests := []struct {
		name     string
		c        JobCancel
		version  int64
		known    bool
		state    string
		reason   string
		raise    bool
		ends     []string
		readsJob bool
	}{
		{"the whole job", JobCancel{Reason: "stopped"}, 3, true, bridge.StateCancelled, "stopped", false, []string{"q-1", "q-2", "q-3"}, false},
		{"one question id", JobCancel{QuestionID: "q-2", Reason: "no longer needed"}, 3, true, bridge.StateCancelled, "no longer needed", false, []string{"q-2"}, false},
		{"a bump past the job", JobCancel{NewVersion: 3}, 2, true, bridge.StateSuperseded, SupersededText(3), true, []string{"q-1", "q-2"}, true},
		{"a bump a newer question came before", JobCancel{NewVersion: 3}, 3, true, bridge.StateSuperseded, SupersededText(3), false, []string{"q-1", "q-2"}, true},
		{"a bump of a job never asked", JobCancel{NewVersion: 1}, 0, false, bridge.StateSuperseded, SupersededText(1), true, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := false
			plan, err := PlanCancel(context.Background(), &tt.c, func(context.Context) (int64, bool, error) {
				read = true
				return tt.version, tt.known, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if plan.State != tt.state || plan.Reason != tt.reason || plan.Raise != tt.raise {
				t.Errorf("plan = %s, %q, raise %v; want %s, %q, raise %v", plan.State, plan.Reason, plan.Raise, tt.state, tt.reason, tt.raise)
			}
			if read != tt.readsJob {
				t.Errorf("read the job: %v, want %v", read, tt.readsJob)
			}
			of := pending
			if !tt.known {
				of = nil // a job never asked has no questions
			}
			var ends []string
			for _, r := range of {
				if plan.Ends(r) {
					ends = append(ends, r.QuestionID)
				}
			}
			if len(ends) != len(tt.ends) {
				t.Fatalf("ends %v, want %v", ends, tt.ends)
			}
			for i := range ends {
				if ends[i] != tt.ends[i] {
					t.Errorf("ends %v, want %v", ends, tt.ends)
				}
			}
		})
	}
}

func TestAnnounceShowsTheNewState(t *testing.T) {
	var seen string
	c := JobCancel{Outbox: func(r *Record) []Message { seen = r.State; return []Message{{Subject: "s"}} }}
	r := Record{State: bridge.StatePending}
	if msgs := c.Announce(r, bridge.StateCancelled); len(msgs) != 1 || seen != bridge.StateCancelled {
		t.Errorf("Announce built %v for state %q, want one message for cancelled", msgs, seen)
	}
	if r.State != bridge.StatePending {
		t.Errorf("Announce changed the caller's record to %s", r.State)
	}
	if msgs := (&JobCancel{}).Announce(r, bridge.StateCancelled); msgs != nil {
		t.Errorf("Announce without an Outbox built %v", msgs)
	}
}
