package storetest

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// The decisions that keep a question waiting (approvals of several,
// delegations, snoozes) and the trail decisions write; part of RunDecide.

// testApprovals: an approval of several is recorded on its proposal while
// the question waits; the settlement decides the proposal, keeping the
// approvals recorded when it names none; after it, an approval loses.
func testApprovals(t *testing.T, s Store) {
	q := Ask(t, s, NewApproval("job-1", "q-1", 1, "pr_1"))
	other := Ask(t, s, NewQuestion("job-1", "q-2", 1))
	u1 := bridge.Approval{By: "slack:U1", ByName: "Una", Via: "slack", At: T0}
	u2 := bridge.Approval{By: "slack:U2", At: T0.Add(time.Minute)}
	approve := func(attempt string, question int64, as ...bridge.Approval) record.Decision {
		return record.Decision{Approve: &record.ApprovalRecord{AttemptID: attempt, Question: question, Tenant: Tenant, ProposalID: "pr_1",
			Approvals: as, At: T0, Outbox: []record.Message{{Subject: "ev", Data: []byte("approval " + attempt)}}}}
	}
	wantOutcomes(t, decideAll(t, s, approve("a1", q.ID, u1)), nil)
	wantOutcomes(t, decideAll(t, s, approve("a1", q.ID, u1, u2)), record.ErrDuplicate)
	// Another question does not ask for pr_1.
	wantOutcomes(t, decideAll(t, s, approve("a9", other.ID, u1, u2)), record.ErrNotPending)
	p := Proposal(t, s, "pr_1")
	if p.State != bridge.ProposalPending || !slices.Equal(approvers(p.Approvals), []string{"slack:U1"}) ||
		p.Approvals[0].ByName != "Una" || !p.Approvals[0].At.Equal(T0) || !p.DecidedAt.IsZero() {
		t.Fatalf("after one approval: %+v", p)
	}
	if got := Get(t, s, q.ID); got.State != bridge.StatePending {
		t.Fatalf("the approval after one approval of several = %s", got.State)
	}
	decided := T0.Add(time.Hour)
	wantOutcomes(t, decideAll(t, s,
		approve("a2", q.ID, u1, u2),
		record.Decision{Settle: &record.Settlement{Question: q.ID, State: bridge.StateAnswered, Action: bridge.ActionAnswer, At: decided,
			AttemptID: "a3", Proposal: &record.ProposalDecision{Tenant: Tenant, ID: "pr_1", State: bridge.ProposalApproved}}},
		approve("a4", q.ID, u1, u2, bridge.Approval{By: "slack:U3", At: T0}),
	), nil, nil, record.ErrNotPending)
	p = Proposal(t, s, "pr_1")
	if p.State != bridge.ProposalApproved || !slices.Equal(approvers(p.Approvals), []string{"slack:U1", "slack:U2"}) || !p.DecidedAt.Equal(decided) {
		t.Fatalf("after the deciding settlement: %+v", p)
	}
	if seen(t, s, q.ID, "a4") || seen(t, s, q.ID, "a9") {
		t.Fatal("a losing approval's attempt id was kept")
	}
	want := []string{"ev approval a1", "ev approval a2"}
	if got := Unsent(t, s)[2:]; !slices.Equal(got, want) {
		t.Fatalf("outbox = %q, want %q", got, want)
	}
	// A settlement naming the approvals writes them: a denial of pr_2.
	q2 := Ask(t, s, NewApproval("job-2", "q-1", 1, "pr_2"))
	wantOutcomes(t, decideAll(t, s, record.Decision{Settle: &record.Settlement{Question: q2.ID, State: bridge.StateDeclined,
		Action: bridge.ActionDecline, At: decided, Proposal: &record.ProposalDecision{Tenant: Tenant, ID: "pr_2",
			State: bridge.ProposalDenied, Approvals: []bridge.Approval{u2}}}}), nil)
	if p := Proposal(t, s, "pr_2"); p.State != bridge.ProposalDenied || !slices.Equal(approvers(p.Approvals), []string{"slack:U2"}) {
		t.Fatalf("denied: %+v", p)
	}
}

// testDelegation: a delegation writes the pending question's body anew
// and audits it; a settled question takes none.
func testDelegation(t *testing.T, s Store) {
	rec := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	body := []byte(`{"question":"Which?","answerers":["slack:UDANA"]}`)
	delegate := func(attempt string, body []byte) record.Decision {
		return record.Decision{Delegate: &record.Delegation{AttemptID: attempt, Question: rec.ID, Body: body, By: "slack:UANA", Via: "slack",
			Reason: "slack:UANA asked slack:UDANA to answer.", At: T0.Add(time.Minute),
			Outbox: []record.Message{{Subject: "ev", Data: []byte("delegated " + attempt)}}}}
	}
	wantOutcomes(t, decideAll(t, s, delegate("d1", body)), nil)
	wantOutcomes(t, decideAll(t, s, delegate("d1", []byte(`{}`))), record.ErrDuplicate)
	got := Get(t, s, rec.ID)
	if string(got.Body) != string(body) || got.State != bridge.StatePending {
		t.Fatalf("record after the delegation: %s %s", got.Body, got.State)
	}
	audit, err := s.Audit(ctx, rec.ID)
	if err != nil || len(audit) != 2 {
		t.Fatalf("audit = %+v, %v", audit, err)
	}
	want := bridge.AuditEntry{From: bridge.StatePending, To: bridge.StatePending, By: "slack:UANA", Via: "slack",
		Reason: "slack:UANA asked slack:UDANA to answer.", At: T0.Add(time.Minute)}
	if last := audit[1]; last.From != want.From || last.To != want.To || last.By != want.By || last.Via != want.Via ||
		last.Reason != want.Reason || !last.At.Equal(want.At) {
		t.Fatalf("the delegation's audit entry = %+v, want %+v", last, want)
	}
	Settle(t, s, rec, T0.Add(time.Hour))
	wantOutcomes(t, decideAll(t, s, delegate("d2", []byte(`{}`))), record.ErrNotPending)
	if got := Get(t, s, rec.ID); string(got.Body) != string(body) {
		t.Fatalf("a losing delegation wrote the body: %s", got.Body)
	}
	if got := Unsent(t, s)[1:]; !slices.Equal(got, []string{"ev delegated d1"}) {
		t.Fatalf("outbox = %q", got)
	}
}

// snoozeSteps are the question's snooze steps due by until, earliest first.
func snoozeSteps(t *testing.T, s Store, q int64, until time.Time) []record.DueStep {
	t.Helper()
	due, err := s.DueSteps(ctx, until, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []record.DueStep
	for _, d := range due {
		if d.Question == q && d.Target == record.StepSnooze {
			out = append(out, d)
		}
	}
	return out
}

// testSnoozes: a snooze holds one person's reminders until its step; a
// second snooze of theirs moves the same step; another person's takes a
// step of its own; a settled question takes none and drops them.
func testSnoozes(t *testing.T, s Store) {
	rec := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	snooze := func(attempt, who string, until time.Time) error {
		return decideAll(t, s, record.Decision{Snooze: &record.Snooze{AttemptID: attempt, Question: rec.ID, Identity: who, Until: until,
			Via: "slack", Reason: who + " snoozed", At: T0}})[0]
	}
	for _, c := range []struct {
		attempt, who string
		until        time.Duration
		want         error
	}{
		{"a1", "slack:UANA", 2 * time.Hour, nil},
		{"a2", "slack:UANA", 3 * time.Hour, nil},
		{"a3", "slack:UBEN", 30 * time.Minute, nil},
		{"a3", "slack:UBEN", 5 * time.Hour, record.ErrDuplicate},
	} {
		if err := snooze(c.attempt, c.who, T0.Add(c.until)); (c.want == nil && err != nil) || !errors.Is(err, c.want) {
			t.Fatalf("snooze %s of %s: %v, want %v", c.attempt, c.who, err, c.want)
		}
	}
	for _, c := range []struct {
		now  time.Duration
		want map[string]time.Duration
	}{
		{0, map[string]time.Duration{"slack:UANA": 3 * time.Hour, "slack:UBEN": 30 * time.Minute}},
		{30 * time.Minute, map[string]time.Duration{"slack:UANA": 3 * time.Hour}},
		{3 * time.Hour, map[string]time.Duration{}},
	} {
		held, err := s.Snoozes(ctx, rec.ID, T0.Add(c.now))
		if err != nil || len(held) != len(c.want) {
			t.Fatalf("snoozes at T0+%v = %v, %v; want %v", c.now, held, err, c.want)
		}
		for who, until := range c.want {
			if !held[who].Equal(T0.Add(until)) {
				t.Errorf("snoozes at T0+%v: %s until %v, want T0+%v", c.now, who, held[who], until)
			}
		}
	}
	steps := snoozeSteps(t, s, rec.ID, T0.Add(5*time.Hour))
	if len(steps) != 2 || steps[0].Index == steps[1].Index || !steps[0].Due.Equal(T0.Add(30*time.Minute)) || !steps[1].Due.Equal(T0.Add(3*time.Hour)) {
		t.Fatalf("snooze steps = %+v", steps)
	}
	for _, st := range steps {
		if st.Index == 0 || st.Index == 1 {
			t.Fatalf("a snooze step took a ladder step's index: %+v", st)
		}
	}
	for i, want := range []struct {
		who   string
		until time.Duration
	}{{"slack:UBEN", 30 * time.Minute}, {"slack:UANA", 3 * time.Hour}} {
		who, until, err := s.SnoozeOf(ctx, rec.ID, steps[i].Index)
		if err != nil || who != want.who || !until.Equal(T0.Add(want.until)) {
			t.Errorf("snooze of step %d = %s %v, %v; want %s", steps[i].Index, who, until, err, want.who)
		}
	}
	if _, _, err := s.SnoozeOf(ctx, rec.ID, 0); !errors.Is(err, record.ErrNotFound) {
		t.Errorf("snooze of a ladder step: %v, want ErrNotFound", err)
	}
	if audit, _ := s.Audit(ctx, rec.ID); len(audit) != 4 || audit[3].By != "slack:UBEN" || audit[3].Reason != "slack:UBEN snoozed" ||
		audit[3].To != bridge.StatePending {
		t.Errorf("audit = %+v, want asked and three snoozes", audit)
	}
	Settle(t, s, rec, T0.Add(time.Minute))
	if steps := snoozeSteps(t, s, rec.ID, T0.Add(5*time.Hour)); len(steps) != 0 {
		t.Errorf("snooze steps of a settled question: %+v", steps)
	}
	if err := snooze("a4", "slack:UCAT", T0.Add(time.Hour)); !errors.Is(err, record.ErrNotPending) {
		t.Fatalf("a snooze of a settled question: %v, want ErrNotPending", err)
	}
	if seen(t, s, rec.ID, "a4") {
		t.Fatal("the losing snooze's attempt id was kept")
	}
}

// testDecisionLogs: a decision's log entries go to the job's trail when it
// wins, in the batch's order; a losing one writes none.
func testDecisionLogs(t *testing.T, s Store) {
	q := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	entry := func(kind, body string) []record.LogEntry {
		return []record.LogEntry{{Tenant: Tenant, JobID: "job-1", Kind: kind, QuestionID: "q-1", Body: json.RawMessage(body), At: T0}}
	}
	st := settlement(q.ID, "a1")
	st.Log = entry(record.LogApproval, `{"n":1}`)
	lost := settlement(q.ID, "a2")
	lost.Log = entry(record.LogApproval, `{"n":2}`)
	wantOutcomes(t, decideAll(t, s,
		record.Decision{Refuse: &record.Refusal{AttemptID: "r1", Question: q.ID, At: T0, Log: entry(record.LogRefused, `{"n":0}`)}},
		record.Decision{Settle: st},
		record.Decision{Settle: lost},
		record.Decision{Refuse: &record.Refusal{AttemptID: "r1", Question: q.ID, At: T0, Log: entry(record.LogRefused, `{"n":3}`)}},
		record.Decision{Refuse: &record.Refusal{AttemptID: "r4", Question: q.ID, At: T0, Log: entry(record.LogRefused, `{"n":4}`)}},
	), nil, nil, record.ErrNotPending, record.ErrDuplicate, nil)
	want := []string{`refused q-1 {"n":0}`, `approval q-1 {"n":1}`, `refused q-1 {"n":4}`}
	if got := logOf(t, s, "job-1"); !slices.Equal(got, want) {
		t.Fatalf("job log = %q, want %q", got, want)
	}
}
