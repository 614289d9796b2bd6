package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/policy"
	"github.com/askbridge/askbridge/store/record"
	"github.com/nats-io/nats.go/jetstream"
)

// refundApproval asks to approve proposal id of job: a refund of amount USD.
func refundApproval(job, id string, amount float64) *bridge.Question {
	return &bridge.Question{Tenant: "acme", JobID: job, QuestionID: "q-refund", TaskVersion: 1, Kind: bridge.KindApproval,
		Question: "May I refund order 4471?", Owner: "slack:UJANE", Timeout: "1h",
		Proposal: &bridge.Proposal{ID: id, Action: "refund", Summary: []string{fmt.Sprintf("Refund $%g to Jane D.", amount)},
			Arguments: json.RawMessage(`{"order":4471,"amount":240}`), Amount: &amount, Currency: "USD"}}
}

// withPolicy holds a policy of one rule: acme's refund.
func withPolicy(rule policy.Rule) *policy.Holder {
	h := &policy.Holder{}
	h.Store(&policy.Policy{Tenants: map[string]policy.Tenant{"acme": {Actions: map[string]policy.Rule{"refund": rule}}}})
	return h
}

// eventOf waits for the event of typ about job's question.
func eventOf(t *testing.T, events *testenv.Recorder, job, typ string) bridge.Event {
	t.Helper()
	var found bridge.Event
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, ev := range events.Events() {
			if ev.JobID == job && ev.Type == typ {
				found = ev
				return nil
			}
		}
		return fmt.Errorf("no %s event of %s in %s", typ, job, events.EventTypes())
	})
	return found
}

func proposalRow(t *testing.T, env *testenv.Env, id string) *record.Proposal {
	t.Helper()
	p, err := env.Store.FindProposal(context.Background(), "acme", id)
	if err != nil {
		t.Fatalf("proposal %s: %v", id, err)
	}
	return p
}

// logOf is the job log of job: each entry's kind and body.
func logOf(t *testing.T, env *testenv.Env, job string) []string {
	t.Helper()
	entries, err := env.Store.JobLog(context.Background(), "acme", job)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Kind+" "+string(e.Body))
	}
	return out
}

func TestApprovedProposalIsRecorded(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-pa")
	ch := ask(t, env, refundApproval("job-pa", "pr_8f2a", 240))
	asked := eventOf(t, events, "job-pa", bridge.EventAsked)
	if p := asked.Proposal; p == nil || p.ID != "pr_8f2a" || p.State != bridge.ProposalPending || p.Required != 1 || len(p.Approvals) != 0 {
		t.Fatalf("asked event's proposal: %+v", p)
	}
	row := proposalRow(t, env, "pr_8f2a")
	if row.State != bridge.ProposalPending || row.Action != "refund" || string(row.Arguments) != `{"order":4471,"amount":240}` ||
		!regexp.MustCompile(`^ik_[0-9a-f]{32}$`).MatchString(row.IdempotencyKey) || row.JobID != "job-pa" {
		t.Fatalf("recorded proposal: %+v", row)
	}

	attempt(t, env, bridge.AnswerAttempt{JobID: "job-pa", QuestionID: "q-refund", AttemptID: "a1", Action: bridge.ActionApprove, By: "slack:UOP", ByName: "kevin"})
	if out := outcome(t, ch); out.Outcome != bridge.OutcomeAnswered || string(out.Answer) != `"approved"` {
		t.Fatalf("outcome: %+v", out)
	}
	ev := eventOf(t, events, "job-pa", bridge.EventAnswered)
	if p := ev.Proposal; p == nil || p.State != bridge.ProposalApproved || len(p.Approvals) != 1 || p.Approvals[0].By != "slack:UOP" {
		t.Fatalf("answered event's proposal: %+v", p)
	}
	after := proposalRow(t, env, "pr_8f2a")
	if after.State != bridge.ProposalApproved || after.DecidedAt.IsZero() || after.IdempotencyKey != row.IdempotencyKey ||
		len(after.Approvals) != 1 || after.Approvals[0].ByName != "kevin" {
		t.Fatalf("approved proposal: %+v", after)
	}
	want := `approval {"proposal_id":"pr_8f2a","by":"slack:UOP","by_name":"kevin","via":"slack","count":1,"required":1}`
	if got := logOf(t, env, "job-pa"); !contains(got, want) {
		t.Fatalf("job log %q lacks %s", got, want)
	}
	if v := show(t, env, "slack:UADMIN", "job-pa", "q-refund").Question; v.Proposal == nil || v.Proposal.State != bridge.ProposalApproved {
		t.Fatalf("shown: %+v", v.Proposal)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestDeniedProposalKeepsTheReason(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-pd")
	ch := ask(t, env, refundApproval("job-pd", "pr_deny", 40))
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-pd", QuestionID: "q-refund", AttemptID: "d1", Action: bridge.ActionDeny, Comment: "the item was not damaged", By: "slack:UOP"})
	out := outcome(t, ch)
	if out.Outcome != bridge.OutcomeAnswered || string(out.Answer) != `"denied"` || out.Text != "The answer: denied. Reason: the item was not damaged." {
		t.Fatalf("outcome: %+v", out)
	}
	if p := eventOf(t, events, "job-pd", bridge.EventAnswered).Proposal; p == nil || p.State != bridge.ProposalDenied {
		t.Fatalf("answered event's proposal: %+v", p)
	}
	if row := proposalRow(t, env, "pr_deny"); row.State != bridge.ProposalDenied {
		t.Fatalf("proposal: %+v", row)
	}
	want := `approval {"proposal_id":"pr_deny","by":"slack:UOP","denied":true,"comment":"the item was not damaged"}`
	if got := logOf(t, env, "job-pd"); !contains(got, want) {
		t.Fatalf("job log %q lacks %s", got, want)
	}
}

func TestTwoOfThreeNeedTwoPeople(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles, Policy: withPolicy(policy.Rule{
		RequireApproval: true, RequiredApprovals: 2, Approvers: []string{"operator", "slack:UFIN", "slack:UCFO"}})})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-nm")
	ch := ask(t, env, refundApproval("job-nm", "pr_2of3", 240))
	if p := eventOf(t, events, "job-nm", bridge.EventAsked).Proposal; p.Required != 2 ||
		strings.Join(p.MayApprove, ",") != "operator,slack:UFIN,slack:UCFO" {
		t.Fatalf("asked event's proposal: %+v", p)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-nm", QuestionID: "q-refund", AttemptID: "k1", Action: bridge.ActionApprove, By: "slack:UOP", ByName: "kevin"})
	rec := eventOf(t, events, "job-nm", bridge.EventApproval)
	if rec.Text != "1 of 2 approvals: kevin" || rec.State != bridge.StatePending || rec.Proposal == nil ||
		rec.Proposal.Required != 2 || len(rec.Proposal.Approvals) != 1 || rec.Proposal.State != bridge.ProposalPending {
		t.Fatalf("approval_recorded: %q %+v", rec.Text, rec.Proposal)
	}
	// The same person again, from another card: counted once.
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-nm", QuestionID: "q-refund", AttemptID: "k2", Action: bridge.ActionApprove, By: "slack:UOP", ByName: "kevin"})
	if ev := refusalFor(t, events, "k2"); ev.Reason != bridge.RefusedAlreadyApproved ||
		ev.Text != "You have already approved this proposal; it needs 2 approvals from different people (1 of 2 approvals: kevin)." {
		t.Fatalf("second approval by the same person: %s %q", ev.Reason, ev.Text)
	}
	if row := proposalRow(t, env, "pr_2of3"); row.State != bridge.ProposalPending || len(row.Approvals) != 1 {
		t.Fatalf("after one approval: %+v", row)
	}
	// An approver by identity alone, with no role in the tenant: the
	// console and the CLI show them the approval, and they may approve.
	if v := show(t, env, "slack:UFIN", "job-nm", "q-refund").Question; v == nil || !v.CanAnswer || v.Proposal == nil ||
		v.Proposal.Required != 2 || strings.Join(v.Proposal.MayApprove, ",") != "operator,slack:UFIN,slack:UCFO" {
		t.Fatalf("shown to an approver: %+v", v)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-nm", QuestionID: "q-refund", AttemptID: "f1", Action: bridge.ActionApprove, By: "slack:UFIN", ByName: "fiona"})
	if out := outcome(t, ch); out.Outcome != bridge.OutcomeAnswered || string(out.Answer) != `"approved"` || out.By != "slack:UFIN" {
		t.Fatalf("outcome: %+v", out)
	}
	ev := eventOf(t, events, "job-nm", bridge.EventAnswered)
	if ev.Proposal == nil || ev.Proposal.State != bridge.ProposalApproved || len(ev.Proposal.Approvals) != 2 {
		t.Fatalf("answered event's proposal: %+v", ev.Proposal)
	}
	if row := proposalRow(t, env, "pr_2of3"); row.State != bridge.ProposalApproved || len(row.Approvals) != 2 {
		t.Fatalf("after two approvals: %+v", row)
	}
	log := logOf(t, env, "job-nm")
	for _, want := range []string{
		`approval {"proposal_id":"pr_2of3","by":"slack:UOP","by_name":"kevin","via":"slack","count":1,"required":2}`,
		`approval {"proposal_id":"pr_2of3","by":"slack:UFIN","by_name":"fiona","via":"slack","count":2,"required":2}`,
	} {
		if !contains(log, want) {
			t.Fatalf("job log %q lacks %s", log, want)
		}
	}
}

func TestSelfApprovalAndApproversRefused(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles, Policy: withPolicy(policy.Rule{
		RequireApproval: true, ForbidSelfApproval: true, Approvers: []string{"admin", "owner"}})})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-sa")
	q := refundApproval("job-sa", "pr_self", 40)
	q.Owner = "slack:UADMIN" // the job acts for an admin
	ch := ask(t, env, q)
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-sa", QuestionID: "q-refund", AttemptID: "self", Action: bridge.ActionApprove, By: "slack:UADMIN"})
	if ev := refusalFor(t, events, "self"); ev.Reason != bridge.RefusedSelfApproval || ev.Text !=
		"You can't approve this proposal: slack:UADMIN is the owner of the job it acts for, and the policy forbids approving one's own refund. Someone else must approve it." {
		t.Fatalf("self approval: %s %q", ev.Reason, ev.Text)
	}
	// An operator may answer questions, but the policy names who approves.
	for _, a := range []bridge.AnswerAttempt{
		{AttemptID: "op-approve", Action: bridge.ActionApprove, By: "slack:UOP"},
		{AttemptID: "op-deny", Action: bridge.ActionDeny, By: "slack:UOP"},
	} {
		a.JobID, a.QuestionID = "job-sa", "q-refund"
		attempt(t, env, a)
		verb := strings.TrimPrefix(a.AttemptID, "op-")
		if ev := refusalFor(t, events, a.AttemptID); ev.Reason != bridge.RefusedForbidden ||
			ev.Text != "You can't "+verb+" this proposal: the policy lets only admin or owner approve or deny refund." {
			t.Fatalf("%s: %s %q", a.AttemptID, ev.Reason, ev.Text)
		}
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-sa", QuestionID: "q-refund", AttemptID: "owner", Action: bridge.ActionApprove, By: "slack:UOWNER"})
	if out := outcome(t, ch); string(out.Answer) != `"approved"` || out.By != "slack:UOWNER" {
		t.Fatalf("outcome: %+v", out)
	}
}

func TestProposalAboveTheLimitIsRefusedAtIntake(t *testing.T) {
	t.Parallel()
	max := 500.0
	env := testenv.Start(t, testenv.Options{Roles: roles, Policy: withPolicy(policy.Rule{RequireApproval: true, MaxAmount: &max, Currency: "USD"})})
	out := refused(t, env, refundApproval("job-mx", "pr_big", 750))
	if out.Outcome != bridge.OutcomeInvalid || out.Text !=
		"The question was refused: proposal.amount: 750 USD is above the policy's limit for refund: max_amount 500 USD." {
		t.Fatalf("outcome: %+v", out)
	}
	if _, err := env.Store.FindProposal(context.Background(), "acme", "pr_big"); err != record.ErrNotFound {
		t.Fatalf("a refused proposal was recorded: %v", err)
	}
	euros := refundApproval("job-mx2", "pr_eur", 100)
	euros.Proposal.Currency = "EUR"
	if out := refused(t, env, euros); out.Outcome != bridge.OutcomeInvalid || out.Text !=
		"The question was refused: proposal.currency: EUR is not the currency of the policy's limit for refund (max_amount 500 USD)." {
		t.Fatalf("outcome: %+v", out)
	}
	ch := ask(t, env, refundApproval("job-mx3", "pr_ok", 500))
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-mx3", QuestionID: "q-refund", AttemptID: "ok", Action: bridge.ActionApprove, By: "slack:UOP"})
	if out := outcome(t, ch); string(out.Answer) != `"approved"` {
		t.Fatalf("at the limit: %+v", out)
	}
}

func TestDecidedProposalIDIsNeverAskedAgain(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	ch := ask(t, env, refundApproval("job-r1", "pr_once", 40))
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-r1", QuestionID: "q-refund", AttemptID: "once", Action: bridge.ActionApprove, By: "slack:UOP"})
	outcome(t, ch)
	for _, job := range []string{"job-r1", "job-r2"} {
		q := refundApproval(job, "pr_once", 40)
		q.QuestionID, q.TaskVersion = "q-again", 2
		out := refused(t, env, q)
		if out.Outcome != bridge.OutcomeInvalid || out.Text !=
			"The question was refused: proposal.id: pr_once was already approved; a proposal is decided once: propose again under a new id." {
			t.Fatalf("%s: %+v", job, out)
		}
	}
	// A pending proposal belongs to the question asking for it.
	ask(t, env, refundApproval("job-r3", "pr_live", 40))
	other := refundApproval("job-r3", "pr_live", 40)
	other.QuestionID = "q-other"
	if out := refused(t, env, other); out.Outcome != bridge.OutcomeInvalid || out.Text !=
		"The question was refused: proposal.id: pr_live is already asked for by question q-refund, which waits." {
		t.Fatalf("second live question: %+v", out)
	}
	elsewhere := refundApproval("job-r4", "pr_live", 40)
	if out := refused(t, env, elsewhere); out.Outcome != bridge.OutcomeInvalid || out.Text !=
		"The question was refused: proposal.id: pr_live is a proposal of job job-r3; a job proposes under ids of its own." {
		t.Fatalf("another job: %+v", out)
	}
}

func TestSupersededApprovalHandsItsProposalOn(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-sp")
	resumes := env.Record(t, bridge.StreamResumes, "ask.v1.resume.acme.job-sp")
	ask(t, env, refundApproval("job-sp", "pr_next", 40))
	eventOf(t, events, "job-sp", bridge.EventAsked)
	key := proposalRow(t, env, "pr_next").IdempotencyKey
	v2 := refundApproval("job-sp", "pr_next", 40)
	v2.TaskVersion = 2
	ask(t, env, v2)
	eventOf(t, events, "job-sp", bridge.EventSuperseded)
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-sp", QuestionID: "q-refund", TaskVersion: 2, AttemptID: "v2", Action: bridge.ActionApprove, By: "slack:UOP"})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, res := range resumes.Resumes() {
			if res.TaskVersion == 2 && string(res.Answer) == `"approved"` {
				return nil
			}
		}
		return fmt.Errorf("resumes %+v", resumes.Resumes())
	})
	row := proposalRow(t, env, "pr_next")
	rec, err := env.Store.Find(context.Background(), record.Key{Tenant: "acme", JobID: "job-sp", QuestionID: "q-refund", TaskVersion: 2})
	if err != nil {
		t.Fatal(err)
	}
	if row.State != bridge.ProposalApproved || row.Question != rec.ID || row.IdempotencyKey != key {
		t.Fatalf("proposal: %+v (question %d)", row, rec.ID)
	}
}

func TestProposalExpires(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-ex")
	q := refundApproval("job-ex", "pr_soon", 40)
	q.Proposal.ExpiresAt = clock.Now().Add(10 * time.Minute).UTC().Truncate(time.Second)
	ch := ask(t, env, q)
	asked := eventOf(t, events, "job-ex", bridge.EventAsked)
	if !asked.Deadline.Equal(q.Proposal.ExpiresAt) || !asked.Proposal.ExpiresAt.Equal(q.Proposal.ExpiresAt) {
		t.Fatalf("deadline %s, proposal %+v; want the expiry %s", asked.Deadline, asked.Proposal, q.Proposal.ExpiresAt)
	}
	clock.Advance(10 * time.Minute)
	out := outcomeAdvancing(t, clock, ch)
	want := "The proposal pr_soon expired at " + q.Proposal.ExpiresAt.Format(time.RFC3339) + " before it was approved."
	if out.Outcome != bridge.OutcomeTimedOut || out.Text != want {
		t.Fatalf("outcome: %+v", out)
	}
	ev := eventOf(t, events, "job-ex", bridge.EventTimedOut)
	if ev.Text != want || ev.Proposal == nil || ev.Proposal.State != bridge.ProposalExpired {
		t.Fatalf("timed_out event: %q %+v", ev.Text, ev.Proposal)
	}
	if row := proposalRow(t, env, "pr_soon"); row.State != bridge.ProposalExpired {
		t.Fatalf("proposal: %+v", row)
	}
	// Expired is decided: the id is not asked for again.
	again := refundApproval("job-ex", "pr_soon", 40)
	again.QuestionID = "q-again"
	if out := refused(t, env, again); out.Outcome != bridge.OutcomeInvalid || !strings.Contains(out.Text, "pr_soon was already expired") {
		t.Fatalf("asked again: %+v", out)
	}
	// One already past at intake is refused.
	late := refundApproval("job-ex2", "pr_late", 40)
	late.Proposal.ExpiresAt = clock.Now().Add(-time.Minute)
	if out := refused(t, env, late); out.Outcome != bridge.OutcomeInvalid || !strings.Contains(out.Text, "proposal.expires_at: ") ||
		!strings.Contains(out.Text, "has already passed") {
		t.Fatalf("expired at intake: %+v", out)
	}
}

// refused asks q, which the runtime refuses, and returns the outcome.
func refused(t *testing.T, env *testenv.Env, q *bridge.Question) *bridge.Resume {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := env.Agent.Ask(ctx, q)
	if err != nil {
		t.Fatalf("ask %s: %v", q.QuestionID, err)
	}
	return out
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// TestSimultaneousApprovals checks approvals decided in one batch see each
// other: of three people approving a 2-of-3 proposal at once, one is
// recorded, one decides it, and one finds it decided; of one person
// approving twice at once, one counts.
func TestSimultaneousApprovals(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles, Policy: withPolicy(policy.Rule{RequiredApprovals: 2})})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.>")
	ch := ask(t, env, refundApproval("job-sim", "pr_sim", 40))
	ask(t, env, refundApproval("job-twice", "pr_twice", 40))
	var futures []jetstream.PubAckFuture
	publish := func(job, id, by string) {
		a := bridge.AnswerAttempt{Tenant: "acme", JobID: job, QuestionID: "q-refund", AttemptID: id, Action: bridge.ActionApprove, By: by}
		f, err := env.NATS.JS.PublishAsync(bridge.AnswerSubject("acme", job), mustJSON(a))
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
	}
	publish("job-sim", "s1", "slack:UOP")
	publish("job-sim", "s2", "slack:UADMIN")
	publish("job-sim", "s3", "slack:UOWNER")
	publish("job-twice", "t1", "cli:kevin")
	publish("job-twice", "t2", "cli:kevin")
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			t.Fatal(err)
		case <-time.After(testenv.Patience):
			t.Fatal("attempt not stored")
		}
	}
	if out := outcome(t, ch); string(out.Answer) != `"approved"` {
		t.Fatalf("outcome: %+v", out)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		count := map[string]int{}
		for _, ev := range events.Events() {
			count[ev.JobID+" "+ev.Type+" "+ev.Reason]++
		}
		want := map[string]int{"job-sim asked ": 1, "job-sim approval_recorded ": 1, "job-sim answered ": 1, "job-sim refused not_pending": 1,
			"job-twice asked ": 1, "job-twice approval_recorded ": 1, "job-twice refused already_approved": 1}
		if fmt.Sprint(count) != fmt.Sprint(want) {
			return fmt.Errorf("events %v, want %v", count, want)
		}
		return nil
	})
	if row := proposalRow(t, env, "pr_sim"); row.State != bridge.ProposalApproved || len(row.Approvals) != 2 {
		t.Fatalf("proposal: %+v", row)
	}
	if row := proposalRow(t, env, "pr_twice"); row.State != bridge.ProposalPending || len(row.Approvals) != 1 {
		t.Fatalf("proposal approved twice by one person: %+v", row)
	}
}

// TestProposalAskedAgainAfterItsQuestionEnded checks a proposal whose
// question ended undecided (cancelled, declined) may be asked for by a
// later question of its job, which starts its approvals again.
func TestProposalAskedAgainAfterItsQuestionEnded(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles, Policy: withPolicy(policy.Rule{RequiredApprovals: 2})})
	ctx := context.Background()
	first := ask(t, env, refundApproval("job-ag", "pr_ag", 40))
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-ag", QuestionID: "q-refund", AttemptID: "one", Action: bridge.ActionApprove, By: "slack:UOP"})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if n := len(proposalRow(t, env, "pr_ag").Approvals); n != 1 {
			return fmt.Errorf("%d approvals", n)
		}
		return nil
	})
	if err := bridge.Publish(ctx, env.NATS.JS, bridge.CancelSubject("acme", "job-ag"), "cancel-ag",
		bridge.Cancel{Tenant: "acme", JobID: "job-ag", QuestionID: "q-refund", Reason: "wrong order"}); err != nil {
		t.Fatal(err)
	}
	if out := outcome(t, first); out.Outcome != bridge.OutcomeCanceled {
		t.Fatalf("first: %+v", out)
	}
	if row := proposalRow(t, env, "pr_ag"); row.State != bridge.ProposalPending {
		t.Fatalf("a cancel decided the proposal: %+v", row)
	}
	again := refundApproval("job-ag", "pr_ag", 40)
	again.QuestionID = "q-again"
	ch := ask(t, env, again)
	rec, err := env.Store.Find(ctx, record.Key{Tenant: "acme", JobID: "job-ag", QuestionID: "q-again"})
	if err != nil {
		t.Fatal(err)
	}
	if row := proposalRow(t, env, "pr_ag"); row.Question != rec.ID || len(row.Approvals) != 0 {
		t.Fatalf("asked again: %+v", row)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-ag", QuestionID: "q-again", AttemptID: "decline", Action: bridge.ActionDecline, By: "slack:UOP"})
	if out := outcome(t, ch); out.Outcome != bridge.OutcomeDeclined {
		t.Fatalf("declined: %+v", out)
	}
	if row := proposalRow(t, env, "pr_ag"); row.State != bridge.ProposalPending {
		t.Fatalf("a decline decided the proposal: %+v", row)
	}
}
