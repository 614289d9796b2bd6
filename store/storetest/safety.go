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

// RunSafety runs the safety tests: proposals (asked with approvals,
// FindProposal, ProposalOf, RecordExecution), the gate (GateJob,
// GateCommit), the job log (JobLog, RecordNotice, PruneGateLog) and the
// clarification measures (ClarifyQuestions, GateDecisions).
func RunSafety(t *testing.T, open Open) {
	run(t, open, map[string]func(t *testing.T, s Store){
		"ProposalAskedWithItsApproval": testProposalIntake,
		"ProposalFreedByAnEndedAsk":    testProposalFreed,
		"ProposalDecidedIsNotAsked":    testProposalDecidedRefused,
		"GateJob":                      testGateJob,
		"GateCommitTakesOnce":          testGateCommit,
		"GateCommitAllOrNothing":       testGateCommitAllOrNothing,
		"GateExecutesAtOnce":           testGateExecutesAtOnce,
		"RecordExecution":              testRecordExecution,
		"RecordExecutionAfterGate":     testRecordExecutionAfterGate,
		"ExecutionAnnouncedWithCards":  testExecutionAnnouncedWithItsCards,
		"JobLogInOrder":                testJobLog,
		"RecordNoticeOnce":             testRecordNotice,
		"PruneGateLog":                 testPruneGateLog,
		"ClarifyQuestions":             testClarifyQuestions,
		"ClarifyFollowsWrites":         testClarifyFollowsWrites,
		"GateDecisions":                testGateDecisions,
		"RaceNotice":                   testRaceNotice,
		"RaceExecute":                  testRaceExecute,
		"RaceRecordExecution":          testRaceRecordExecution,
		"RaceProposalOfTwoJobs":        testRaceProposalJobs,
		"ProposalInOneBatch":           testProposalInOneBatch,
	})
}

// approve settles approval q as approved, deciding its proposal id.
func approve(t *testing.T, s Store, q *record.Record, id string, at time.Time) {
	t.Helper()
	err := s.Settle(ctx, record.Settlement{Question: q.ID, State: bridge.StateAnswered, Action: bridge.ActionAnswer, At: at,
		Proposal: &record.ProposalDecision{Tenant: Tenant, ID: id, State: bridge.ProposalApproved,
			Approvals: []bridge.Approval{{By: "slack:U1", At: at}}}})
	if err != nil {
		t.Fatalf("approve %s: %v", id, err)
	}
}

// testProposalIntake: an approval records its proposal; another question
// may not ask for it while it waits, nor another job; a newer version of
// the job takes it over, its approvals starting again.
func testProposalIntake(t *testing.T, s Store) {
	first := Ask(t, s, NewApproval("job-1", "q-1", 1, "pr_1"))
	p, err := s.ProposalOf(ctx, first.ID)
	if err != nil || p.Tenant != Tenant || p.ID != "pr_1" || p.JobID != "job-1" || p.Question != first.ID || p.Action != "refund" ||
		string(p.Arguments) != `{"order":1}` || p.IdempotencyKey != "ik_pr_1" || p.State != bridge.ProposalPending ||
		!p.ExpiresAt.Equal(T0.Add(24*time.Hour)) || !p.RecordedAt.Equal(T0) || len(p.Approvals) != 0 || !p.DecidedAt.IsZero() {
		t.Fatalf("proposal of the approval = %+v, %v", p, err)
	}
	if found := Proposal(t, s, "pr_1"); found.Question != first.ID {
		t.Fatalf("FindProposal = %+v", found)
	}
	if res := AskAll(t, s, NewApproval("job-1", "q-1", 1, "pr_1"))[0]; res.Status != record.Duplicate {
		t.Fatalf("the same approval again: %d %q", res.Status, res.Problem)
	}
	for _, c := range []struct {
		nq   record.NewQuestion
		want string
	}{
		{NewApproval("job-1", "q-2", 1, "pr_1"), "proposal.id: pr_1 is already asked for by question q-1, which waits"},
		{NewApproval("job-2", "q-1", 1, "pr_1"), "proposal.id: pr_1 is a proposal of job job-1; a job proposes under ids of its own"},
	} {
		res := AskAll(t, s, c.nq)[0]
		if res.Status != record.Refused || res.Problem != c.want || res.Record != nil {
			t.Errorf("%s: %d %q, want Refused: %q", c.nq.Key, res.Status, res.Problem, c.want)
		}
		if _, err := s.Find(ctx, c.nq.Key); !errors.Is(err, record.ErrNotFound) {
			t.Errorf("%s: a refused question was recorded: %v", c.nq.Key, err)
		}
	}
	if got := Unsent(t, s); len(got) != 1 {
		t.Fatalf("refused approvals wrote %q", got)
	}
	wantOutcomes(t, decideAll(t, s, record.Decision{Approve: &record.ApprovalRecord{Question: first.ID, Tenant: Tenant, ProposalID: "pr_1",
		Approvals: []bridge.Approval{{By: "slack:U1", At: T0}}, At: T0}}), nil)
	v2 := AskAll(t, s, NewApproval("job-1", "q-1", 2, "pr_1"))[0]
	if v2.Status != record.Asked {
		t.Fatalf("version 2: %d %q", v2.Status, v2.Problem)
	}
	p = Proposal(t, s, "pr_1")
	if p.Question != v2.Record.ID || p.State != bridge.ProposalPending || len(p.Approvals) != 0 || p.IdempotencyKey != "ik_pr_1" ||
		string(p.Arguments) != `{"order":1}` {
		t.Fatalf("after version 2: %+v", p)
	}
	if p, err := s.ProposalOf(ctx, first.ID); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("the superseded approval still asks for %+v, %v", p, err)
	}
	if p, err := s.ProposalOf(ctx, v2.Record.ID); err != nil || p.ID != "pr_1" {
		t.Fatalf("ProposalOf version 2 = %+v, %v", p, err)
	}
	plain := Ask(t, s, NewQuestion("job-1", "q-plain", 2))
	if p, err := s.ProposalOf(ctx, plain.ID); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("ProposalOf a question = %+v, %v", p, err)
	}
	if p, err := s.FindProposal(ctx, Tenant, "pr_none"); p != nil || !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("a proposal never recorded: %+v, %v", p, err)
	}
	if p, err := s.FindProposal(ctx, "beta", "pr_1"); p != nil || !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("another tenant's proposal: %+v, %v", p, err)
	}
}

// testProposalFreed: a proposal whose question ended undecided (cancelled,
// or timed out) stays pending, an approval after the end losing, and may
// be asked for again by another question of its job.
func testProposalFreed(t *testing.T, s Store) {
	q1 := Ask(t, s, NewApproval("job-1", "q-1", 1, "pr_1"))
	if _, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", QuestionID: "q-1", At: T0}); err != nil {
		t.Fatal(err)
	}
	if p := Proposal(t, s, "pr_1"); p.State != bridge.ProposalPending || p.Question != q1.ID {
		t.Fatalf("after its question was cancelled: %+v", p)
	}
	q3 := Ask(t, s, NewApproval("job-1", "q-3", 1, "pr_1"))
	if p, err := s.ProposalOf(ctx, q3.ID); err != nil || p.ID != "pr_1" || p.State != bridge.ProposalPending {
		t.Fatalf("asked again: %+v, %v", p, err)
	}
	q2 := Ask(t, s, NewApproval("job-2", "q-1", 1, "pr_2"))
	approval := func(attempt string, by ...string) record.Decision {
		a := &record.ApprovalRecord{AttemptID: attempt, Question: q2.ID, Tenant: Tenant, ProposalID: "pr_2", At: T0}
		for _, b := range by {
			a.Approvals = append(a.Approvals, bridge.Approval{By: b, At: T0})
		}
		return record.Decision{Approve: a}
	}
	wantOutcomes(t, decideAll(t, s, approval("a1", "slack:U1"),
		record.Decision{Settle: &record.Settlement{Question: q2.ID, State: bridge.StateTimedOut, At: T0}},
		approval("a2", "slack:U1", "slack:U2")), nil, nil, record.ErrNotPending)
	if p := Proposal(t, s, "pr_2"); p.State != bridge.ProposalPending || !slices.Equal(approvers(p.Approvals), []string{"slack:U1"}) {
		t.Fatalf("after its question timed out: %+v", p)
	}
	if seen(t, s, q2.ID, "a2") {
		t.Fatal("the losing approval's attempt id was kept")
	}
}

// testProposalDecidedRefused: a decided proposal is never asked again,
// in any job.
func testProposalDecidedRefused(t *testing.T, s Store) {
	q := Ask(t, s, NewApproval("job-1", "q-1", 1, "pr_1"))
	approve(t, s, q, "pr_1", T0)
	for _, nq := range []record.NewQuestion{NewApproval("job-1", "q-1", 2, "pr_1"), NewApproval("job-3", "q-1", 1, "pr_1")} {
		res := AskAll(t, s, nq)[0]
		if want := bridge.DecidedProposalText("pr_1", bridge.ProposalApproved); res.Status != record.Refused || res.Problem != want {
			t.Errorf("%s asking for a decided proposal: %d %q, want %q", nq.Key, res.Status, res.Problem, want)
		}
	}
	if p := Proposal(t, s, "pr_1"); p.State != bridge.ProposalApproved || p.Question != q.ID ||
		!slices.Equal(approvers(p.Approvals), []string{"slack:U1"}) || !p.DecidedAt.Equal(T0) {
		t.Fatalf("the decided proposal changed: %+v", p)
	}
}

// testGateJob: the job's version and its pending questions in the order
// they were asked; Known once the job has been seen.
func testGateJob(t *testing.T, s Store) {
	if j, err := s.GateJob(ctx, Tenant, "job-1"); err != nil || j.Known || len(j.Pending) != 0 {
		t.Fatalf("a job never seen: %+v, %v", j, err)
	}
	AskAll(t, s, NewQuestion("job-1", "q-1", 2), NewQuestion("job-1", "q-2", 2), NewQuestion("job-2", "q-3", 5))
	if _, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", QuestionID: "q-1", At: T0}); err != nil {
		t.Fatal(err)
	}
	q4 := NewQuestion("job-1", "q-4", 2)
	q4.Body = []byte(`{"question":"Which one?"}`)
	Ask(t, s, q4)
	j, err := s.GateJob(ctx, Tenant, "job-1")
	if err != nil || !j.Known || j.Version != 2 || len(j.Pending) != 2 || j.Pending[0].QuestionID != "q-2" || j.Pending[1].QuestionID != "q-4" ||
		string(j.Pending[0].Body) != `{"question":"Which?"}` || string(j.Pending[1].Body) != `{"question":"Which one?"}` {
		t.Fatalf("job-1: %+v, %v", j, err)
	}
	if _, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-1", At: T0}); err != nil {
		t.Fatal(err)
	}
	if j, err := s.GateJob(ctx, Tenant, "job-1"); err != nil || !j.Known || j.Version != 2 || len(j.Pending) != 0 {
		t.Fatalf("job-1 with nothing pending: %+v, %v", j, err)
	}
	if _, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-9", NewVersion: 4, At: T0}); err != nil {
		t.Fatal(err)
	}
	if j, err := s.GateJob(ctx, Tenant, "job-9"); err != nil || !j.Known || j.Version != 4 {
		t.Fatalf("a job known by its bump: %+v, %v", j, err)
	}
	if j, err := s.GateJob(ctx, "beta", "job-2"); err != nil || j.Known {
		t.Fatalf("another tenant's job: %+v, %v", j, err)
	}
}

// gateEntry is a gate decision of job-1 with code, at at.
func gateEntry(job, code string, at time.Time) record.LogEntry {
	return record.LogEntry{Tenant: Tenant, JobID: job, Kind: record.LogGate, Body: json.RawMessage(`{"code":"` + code + `"}`), At: at}
}

// testGateCommit: executes in a batch see those before them; an approved
// proposal is taken once; every log entry is written in order.
func testGateCommit(t *testing.T, s Store) {
	q := Ask(t, s, NewApproval("job-1", "q-1", 1, "pr_1"))
	approve(t, s, q, "pr_1", T0)
	var seen []string
	exec := func(id string) record.GateWrite {
		return record.GateWrite{Execute: &record.GateExecute{Tenant: Tenant, ProposalID: id, At: T0.Add(time.Minute), Decide: func(p *record.Proposal) (bool, record.LogEntry) {
			state := "none"
			if p != nil {
				state = p.State
			}
			seen = append(seen, state)
			return state == bridge.ProposalApproved, gateEntry("job-1", "execute "+id+" "+state, T0)
		}}}
	}
	if err := s.GateCommit(ctx, []record.GateWrite{exec("pr_1"), {Log: gateEntry("job-1", "allowed", T0)}, exec("pr_1"), exec("pr_none")}); err != nil {
		t.Fatal(err)
	}
	if want := []string{bridge.ProposalApproved, bridge.ProposalExecuted, "none"}; !slices.Equal(seen, want) {
		t.Fatalf("executes saw %q, want %q", seen, want)
	}
	p := Proposal(t, s, "pr_1")
	if p.State != bridge.ProposalExecuted || !p.ExecutedAt.Equal(T0.Add(time.Minute)) || p.IdempotencyKey != "ik_pr_1" || !p.ReportedAt.IsZero() ||
		string(p.Arguments) != `{"order":1}` {
		t.Fatalf("after: %+v", p)
	}
	want := []string{`gate  {"code":"execute pr_1 approved"}`, `gate  {"code":"allowed"}`, `gate  {"code":"execute pr_1 executed"}`,
		`gate  {"code":"execute pr_none none"}`}
	if got := logOf(t, s, "job-1"); !slices.Equal(got, want) {
		t.Fatalf("job log = %q, want %q", got, want)
	}
	if err := s.GateCommit(ctx, nil); err != nil {
		t.Fatalf("an empty batch: %v", err)
	}
}

// testGateCommitAllOrNothing: a batch that fails (taking a proposal not
// approved) writes nothing.
func testGateCommitAllOrNothing(t *testing.T, s Store) {
	Ask(t, s, NewApproval("job-1", "q-1", 1, "pr_1"))
	take := record.GateWrite{Execute: &record.GateExecute{Tenant: Tenant, ProposalID: "pr_1", At: T0,
		Decide: func(*record.Proposal) (bool, record.LogEntry) { return true, gateEntry("job-1", "take", T0) }}}
	err := s.GateCommit(ctx, []record.GateWrite{{Log: gateEntry("job-1", "allowed", T0)}, take})
	if err == nil {
		t.Fatal("taking a pending proposal did not fail")
	}
	if got := logOf(t, s, "job-1"); len(got) != 0 {
		t.Fatalf("a failed batch wrote %q", got)
	}
	if p := Proposal(t, s, "pr_1"); p.State != bridge.ProposalPending || !p.ExecutedAt.IsZero() {
		t.Fatalf("a failed batch changed the proposal: %+v", p)
	}
}

// report reports proposal id of job executed with result at at.
func report(s Store, job, id, result string, at time.Time) (*record.Proposal, error) {
	return s.RecordExecution(ctx, record.ExecutionReport{Tenant: Tenant, JobID: job, ProposalID: id, Result: result, Detail: "done " + result, At: at,
		Announce: func(p *record.Proposal, q *record.Answerable) []record.Message {
			return []record.Message{{Subject: "ask.v1.event.acme." + job, Data: []byte("executed " + q.QuestionID + " " + p.State)}}
		},
		Log: []record.LogEntry{{Tenant: Tenant, JobID: job, Kind: record.LogExecuted, QuestionID: "q-1", At: at}}})
}

// testRecordExecution: a report is recorded once, of an approved proposal
// of the reporter's job; the others say why and write nothing.
func testRecordExecution(t *testing.T, s Store) {
	q := Ask(t, s, NewApproval("job-1", "q-1", 1, "pr_1"))
	if _, err := report(s, "job-1", "pr_none", bridge.ResultSucceeded, T0); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("unknown: %v, want ErrNotFound", err)
	}
	if p, err := report(s, "job-1", "pr_1", bridge.ResultSucceeded, T0); !errors.Is(err, record.ErrProposalNotApproved) || p == nil || p.State != bridge.ProposalPending {
		t.Fatalf("pending: %+v, %v; want ErrProposalNotApproved", p, err)
	}
	approve(t, s, q, "pr_1", T0)
	if p, err := report(s, "job-2", "pr_1", bridge.ResultSucceeded, T0); !errors.Is(err, record.ErrNotFound) || p != nil {
		t.Fatalf("another job's: %+v, %v; want ErrNotFound and no proposal", p, err)
	}
	at := T0.Add(time.Hour)
	p, err := report(s, "job-1", "pr_1", bridge.ResultSucceeded, at)
	if err != nil || p.State != bridge.ProposalExecuted || !p.ExecutedAt.Equal(at) || !p.ReportedAt.Equal(at) ||
		p.Result != bridge.ResultSucceeded || p.Detail != "done succeeded" {
		t.Fatalf("reported: %+v, %v", p, err)
	}
	if p, err := report(s, "job-1", "pr_1", bridge.ResultFailed, at.Add(time.Hour)); !errors.Is(err, record.ErrDuplicate) || p == nil ||
		p.Result != bridge.ResultSucceeded || p.Detail != "done succeeded" {
		t.Fatalf("again: %+v, %v; want ErrDuplicate and the first report", p, err)
	}
	if got := Proposal(t, s, "pr_1"); got.State != bridge.ProposalExecuted || got.Result != bridge.ResultSucceeded || !got.ReportedAt.Equal(at) {
		t.Fatalf("stored: %+v", got)
	}
	// The executed event and log entry, once: repeats and refusals write none.
	want := []string{"ask.v1.event.acme.job-1 asked q-1", "ask.v1.event.acme.job-1 executed q-1 executed"}
	if got := Unsent(t, s); !slices.Equal(got, want) {
		t.Fatalf("outbox = %q, want %q", got, want)
	}
	if got := logOf(t, s, "job-1"); !slices.Equal(got, []string{"executed q-1 {}"}) {
		t.Fatalf("job log = %q", got)
	}
	// A failed execution.
	q2 := Ask(t, s, NewApproval("job-2", "q-1", 1, "pr_2"))
	approve(t, s, q2, "pr_2", T0)
	if p, err := report(s, "job-2", "pr_2", bridge.ResultFailed, at); err != nil || p.State != bridge.ProposalExecutionFailed || p.Result != bridge.ResultFailed {
		t.Fatalf("a failed execution: %+v, %v", p, err)
	}
}

// testRecordExecutionAfterGate: the gate's execute time stays when the
// agent reports later.
func testRecordExecutionAfterGate(t *testing.T, s Store) {
	q := Ask(t, s, NewApproval("job-1", "q-1", 1, "pr_1"))
	approve(t, s, q, "pr_1", T0)
	taken := T0.Add(time.Minute)
	if err := s.GateCommit(ctx, []record.GateWrite{{Execute: &record.GateExecute{Tenant: Tenant, ProposalID: "pr_1", At: taken,
		Decide: func(*record.Proposal) (bool, record.LogEntry) { return true, gateEntry("job-1", "allowed", taken) }}}}); err != nil {
		t.Fatal(err)
	}
	p, err := report(s, "job-1", "pr_1", bridge.ResultSucceeded, T0.Add(time.Hour))
	if err != nil || p.State != bridge.ProposalExecuted || !p.ExecutedAt.Equal(taken) || !p.ReportedAt.Equal(T0.Add(time.Hour)) {
		t.Fatalf("reported after the gate took it: %+v, %v", p, err)
	}
}

// testProposalInOneBatch: the questions of one batch see each other's
// proposals, whatever their jobs.
func testProposalInOneBatch(t *testing.T, s Store) {
	res := AskAll(t, s,
		NewApproval("job-1", "q-1", 1, "pr_1"),
		NewApproval("job-2", "q-1", 1, "pr_1"), // another job's id
		NewApproval("job-1", "q-2", 1, "pr_1"), // waited on by q-1
		NewApproval("job-3", "q-1", 1, "pr_3"),
	)
	want := []record.AskStatus{record.Asked, record.Refused, record.Refused, record.Asked}
	for i, w := range want {
		if res[i].Status != w {
			t.Errorf("result %d: status %d (%q), want %d", i, res[i].Status, res[i].Problem, w)
		}
	}
	if p := Proposal(t, s, "pr_1"); p.JobID != "job-1" || p.Question != res[0].Record.ID {
		t.Fatalf("pr_1 = %+v, want job-1's q-1's", p)
	}
}

// testExecutionAnnouncedWithItsCards: the execution is announced from the
// proposal as recorded and the question as it stands, with the messages
// showing it (to update its cards).
func testExecutionAnnouncedWithItsCards(t *testing.T, s Store) {
	q := Ask(t, s, NewApproval("job-1", "q-1", 1, "pr_1"))
	card := delivered("slack", "C1", "1.2", "1.1")
	if _, err := s.RecordDelivery(ctx, q.ID, card, T0); err != nil {
		t.Fatal(err)
	}
	approve(t, s, q, "pr_1", T0)
	var seen *record.Answerable
	var proposal *record.Proposal
	_, err := s.RecordExecution(ctx, record.ExecutionReport{Tenant: Tenant, JobID: "job-1", ProposalID: "pr_1", Result: bridge.ResultSucceeded,
		At: T0.Add(time.Hour), Announce: func(p *record.Proposal, a *record.Answerable) []record.Message {
			seen, proposal = a, p
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if seen == nil || seen.ID != q.ID || seen.State != bridge.StateAnswered || seen.JobVersion != 1 || len(seen.Messages) != 1 || seen.Messages[0] != *card.Message {
		t.Fatalf("announced with the question %+v", seen)
	}
	if proposal.State != bridge.ProposalExecuted || !proposal.ReportedAt.Equal(T0.Add(time.Hour)) || proposal.IdempotencyKey != "ik_pr_1" {
		t.Fatalf("announced with the proposal %+v", proposal)
	}
}
