package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// Writers at once: what several replicas (or goroutines) doing the same
// thing together must come to. Each test is registered with its area.

// racers is how many goroutines a race test runs at once.
const racers = 6

// together runs f(i) in racers goroutines at once and returns their errors.
func together(f func(i int) error) []error {
	errs := make([]error, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = f(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// oneWins fails the test unless exactly one of errs is nil and every other
// is lost.
func oneWins(t *testing.T, what string, errs []error, lost error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("%s: %d and %d both won", what, winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, lost):
			t.Fatalf("%s %d: %v, want nil or %v", what, i, err, lost)
		}
	}
	if winner < 0 {
		t.Fatalf("%s: none won", what)
	}
	return winner
}

// testRaceAskOnce: the same question asked at once is recorded once.
func testRaceAskOnce(t *testing.T, s Store) {
	statuses := make([]record.AskStatus, racers)
	errs := together(func(i int) error {
		res, err := s.AskMany(ctx, []record.NewQuestion{NewQuestion("job-1", "q-1", 1)})
		if err == nil {
			statuses[i] = res[0].Status
		}
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("ask %d: %v", i, err)
		}
	}
	slices.Sort(statuses)
	if statuses[0] != record.Asked || statuses[1] != record.Duplicate || statuses[racers-1] != record.Duplicate {
		t.Fatalf("statuses %v, want one Asked and the rest Duplicate", statuses)
	}
	if got := Unsent(t, s); len(got) != 1 {
		t.Fatalf("outbox = %q, want one ask", got)
	}
}

// testRaceAskVersions: versions of a job asked at once leave the newest
// pending and every other superseded or never recorded.
func testRaceAskVersions(t *testing.T, s Store) {
	errs := together(func(i int) error {
		res, err := s.AskMany(ctx, []record.NewQuestion{NewQuestion("job-1", fmt.Sprint("q-", i), int64(i+1))})
		if err == nil && res[0].Status != record.Asked && res[0].Status != record.Stale {
			return fmt.Errorf("status %d", res[0].Status)
		}
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("ask %d: %v", i, err)
		}
	}
	for i := range racers {
		r, err := s.Find(ctx, record.Key{Tenant: Tenant, JobID: "job-1", QuestionID: fmt.Sprint("q-", i), TaskVersion: int64(i + 1)})
		newest := i == racers-1
		switch {
		case errors.Is(err, record.ErrNotFound) && !newest: // stale: never recorded
		case err != nil:
			t.Fatalf("version %d: %v", i+1, err)
		case newest != (r.State == bridge.StatePending) || (!newest && r.State != bridge.StateSuperseded):
			t.Errorf("%s at version %d is %s", r.QuestionID, r.TaskVersion, r.State)
		}
	}
	if res := AskAll(t, s, NewQuestion("job-1", "q-probe", 1))[0]; res.Status != record.Stale || res.JobVersion != racers {
		t.Fatalf("the job after the race = %+v, want version %d", res, racers)
	}
	if recs, err := s.List(ctx, record.ListFilter{JobID: "job-1", State: bridge.StatePending}); err != nil || len(recs) != 1 {
		t.Fatalf("pending = %+v, %v; want the newest only", recs, err)
	}
}

// testRaceCancelKey: a cancel delivered to several replicas at once
// applies once.
func testRaceCancelKey(t *testing.T, s Store) {
	Ask(t, s, NewQuestion("job-1", "q-1", 1))
	ended := make([]int, racers)
	errs := together(func(i int) error {
		recs, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", NewVersion: 2, At: T0, Key: "cancel.1.1", Outbox: announce})
		ended[i] = len(recs)
		return err
	})
	w := oneWins(t, "cancel", errs, record.ErrDuplicate)
	if ended[w] != 1 {
		t.Fatalf("the winning cancel ended %d questions, want 1", ended[w])
	}
	if got := Unsent(t, s); len(got) != 2 {
		t.Fatalf("outbox = %q, want the ask and one superseded", got)
	}
}

// testRaceAttempt: one attempt decided by several replicas at once is
// decided once.
func testRaceAttempt(t *testing.T, s Store) {
	q := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	errs := together(func(i int) error {
		errs, err := s.DecideEach(ctx, 1, func(int, record.Lookup) (record.Decision, error) {
			return refuse(q.ID, "a1", fmt.Sprint("refused by ", i)), nil
		})
		if err != nil {
			return err
		}
		return errs[0]
	})
	oneWins(t, "refusal", errs, record.ErrDuplicate)
	if got := Unsent(t, s); len(got) != 2 {
		t.Fatalf("outbox = %q, want the ask and one refusal", got)
	}
}

// testRaceApprovals: approvals of several people at once, each decided on
// the proposal as it reads it, are all kept: none is written over.
func testRaceApprovals(t *testing.T, s Store) {
	q := Ask(t, s, NewApproval("job-1", "q-1", 1, "pr_1"))
	errs := together(func(i int) error {
		errs, err := s.DecideEach(ctx, 1, func(_ int, l record.Lookup) (record.Decision, error) {
			p, err := l.Proposal(ctx, Tenant, "pr_1")
			if err != nil {
				return record.Decision{}, err
			}
			as := append(slices.Clone(p.Approvals), bridge.Approval{By: fmt.Sprint("slack:U", i), At: T0})
			return record.Decision{Approve: &record.ApprovalRecord{AttemptID: fmt.Sprint("a", i), Question: q.ID, Tenant: Tenant,
				ProposalID: "pr_1", Approvals: as, At: T0}}, nil
		})
		if err != nil {
			return err
		}
		return errs[0]
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("approval %d: %v", i, err)
		}
	}
	got := approvers(Proposal(t, s, "pr_1").Approvals)
	slices.Sort(got)
	if len(got) != racers || len(slices.Compact(slices.Clone(got))) != racers {
		t.Fatalf("approvals %q, want all %d", got, racers)
	}
}

// testRaceDeliveries: reports of several platforms at once are all kept.
func testRaceDeliveries(t *testing.T, s Store) {
	q := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	errs := together(func(i int) error {
		p := fmt.Sprint("platform-", i)
		_, err := s.RecordDelivery(ctx, q.ID, delivered(p, "C1", fmt.Sprint(i), ""), T0)
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
	}
	if refs, err := s.Messages(ctx, q.ID); err != nil || len(refs) != racers {
		t.Fatalf("messages = %+v, %v; want one per platform", refs, err)
	}
}

// testRaceFireRound: a round fired by several replicas at once fires once.
func testRaceFireRound(t *testing.T, s Store) {
	Ask(t, s, NewQuestion("job-1", "q-1", 1))
	r := round("reminded answerers", dueSteps(t, s, T0.Add(time.Hour), 10)...)
	errs := together(func(int) error {
		return s.FireRound(ctx, r, T0.Add(time.Hour), []record.Message{{Subject: "x", Data: []byte("nudge")}})
	})
	oneWins(t, "round", errs, record.ErrStepGone)
	if got := queueOf(t, s, "job-1"); !slices.Equal(got, []string{"q-1 1"}) {
		t.Fatalf("queue = %q, want q-1 one round stale", got)
	}
	if got := Unsent(t, s); len(got) != 2 {
		t.Fatalf("outbox = %q, want the ask and one nudge", got)
	}
}

// testRaceNotice: a notice delivered to several replicas at once is
// recorded once.
func testRaceNotice(t *testing.T, s Store) {
	errs := together(func(int) error {
		return s.RecordNotice(ctx, record.LogEntry{Tenant: Tenant, JobID: "job-1", Body: json.RawMessage(`{"notice_id":"n-1"}`), At: T0}, "n-1",
			[]record.Message{{Subject: "x", Data: []byte("notice")}})
	})
	oneWins(t, "notice", errs, record.ErrDuplicate)
	if got := logOf(t, s, "job-1"); len(got) != 1 {
		t.Fatalf("job log = %q, want one notice", got)
	}
	if got := Unsent(t, s); len(got) != 1 {
		t.Fatalf("outbox = %q, want one notice", got)
	}
}

// testRaceExecute: an approved proposal the gates of several replicas take
// at once is taken once; each batch's log entries are those of the
// decision it committed.
func testRaceExecute(t *testing.T, s Store) {
	q := Ask(t, s, NewApproval("job-1", "q-1", 1, "pr_1"))
	approve(t, s, q, "pr_1", T0)
	errs := together(func(i int) error {
		return s.GateCommit(ctx, []record.GateWrite{{Execute: &record.GateExecute{Tenant: Tenant, ProposalID: "pr_1", At: T0,
			Decide: func(p *record.Proposal) (bool, record.LogEntry) {
				take := p != nil && p.State == bridge.ProposalApproved
				return take, gateEntry("job-1", fmt.Sprintf("take=%v", take), T0)
			}}}})
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("gate %d: %v", i, err)
		}
	}
	log := logOf(t, s, "job-1")
	if taken := slices.IndexFunc(log, func(e string) bool { return strings.Contains(e, "take=true") }); len(log) != racers || taken < 0 ||
		slices.ContainsFunc(log[taken+1:], func(e string) bool { return strings.Contains(e, "take=true") }) {
		t.Fatalf("job log = %q, want %d entries, one taking", log, racers)
	}
	if p := Proposal(t, s, "pr_1"); p.State != bridge.ProposalExecuted {
		t.Fatalf("proposal = %+v", p)
	}
}

// testRaceRecordExecution: a report delivered to several replicas at once
// is recorded once.
func testRaceRecordExecution(t *testing.T, s Store) {
	q := Ask(t, s, NewApproval("job-1", "q-1", 1, "pr_1"))
	approve(t, s, q, "pr_1", T0)
	errs := together(func(int) error {
		_, err := report(s, "job-1", "pr_1", bridge.ResultSucceeded, T0)
		return err
	})
	oneWins(t, "report", errs, record.ErrDuplicate)
	if got := Unsent(t, s); len(got) != 2 {
		t.Fatalf("outbox = %q, want the ask and one executed", got)
	}
}

// testRaceOutboxCursor: a relay reading rows after the last id it saw,
// while others write, sees every row once: no row appears below the
// cursor after it has passed.
func testRaceOutboxCursor(t *testing.T, s Store) {
	const each = 5
	done := make(chan struct{})
	var werr error
	go func() {
		defer close(done)
		for _, err := range together(func(i int) error {
			for j := range each {
				if err := s.Enqueue(ctx, []record.Message{{Subject: "ev", Data: []byte(fmt.Sprint(i, "-", j))}}); err != nil {
					return err
				}
			}
			return nil
		}) {
			werr = errors.Join(werr, err)
		}
	}()
	var cursor int64
	got := map[string]int{}
	read := func() {
		for _, r := range unsent(t, s, cursor, 1000) {
			got[string(r.Data)]++
			cursor = r.ID
		}
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		read()
	}
	read()
	if werr != nil {
		t.Fatal(werr)
	}
	if len(got) != racers*each {
		t.Fatalf("the cursor saw %d rows of %d", len(got), racers*each)
	}
	for d, n := range got {
		if n != 1 {
			t.Fatalf("row %s seen %d times", d, n)
		}
	}
}

// testRaceCancelAndSettle: a cancel and an answer at once: exactly one
// ends the question.
func testRaceCancelAndSettle(t *testing.T, s Store) {
	for round := range 3 {
		job := fmt.Sprint("job-", round)
		q := Ask(t, s, NewQuestion(job, "q-1", 1))
		var ended atomic.Int32
		errs := together(func(i int) error {
			if i%2 == 0 {
				recs, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: job, At: T0})
				if len(recs) == 1 {
					ended.Add(1)
				}
				return err
			}
			if err := s.Settle(ctx, Answer(q, T0)); !errors.Is(err, record.ErrNotPending) {
				if err == nil {
					ended.Add(1)
				}
				return err
			}
			return nil
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if n := ended.Load(); n != 1 {
			t.Fatalf("%d cancels and answers ended %s's question, want 1", n, job)
		}
	}
}

// testRaceProposalJobs: two jobs asking for one proposal id at once: one
// records it, the other is refused.
func testRaceProposalJobs(t *testing.T, s Store) {
	statuses := make([]record.AskStatus, racers)
	errs := together(func(i int) error {
		res, err := s.AskMany(ctx, []record.NewQuestion{NewApproval(fmt.Sprint("job-", i), "q-1", 1, "pr_1")})
		if err == nil {
			statuses[i] = res[0].Status
		}
		return err
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	slices.Sort(statuses)
	if statuses[0] != record.Asked || statuses[1] != record.Refused || statuses[racers-1] != record.Refused {
		t.Fatalf("statuses %v, want one Asked and the rest Refused", statuses)
	}
	p := Proposal(t, s, "pr_1")
	if q, err := s.Find(ctx, record.Key{Tenant: Tenant, JobID: p.JobID, QuestionID: "q-1"}); err != nil || q.ID != p.Question {
		t.Fatalf("the proposal's question = %+v, %v; want the one of %s", q, err, p.JobID)
	}
}
