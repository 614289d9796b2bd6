package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// RunDecide runs the decision tests: DecideEach (settle, refuse, approve,
// delegate, snooze), Settle, Audit, and the deliveries (RecordDelivery,
// RecordDeliveries, Messages, JobThreads).
func RunDecide(t *testing.T, open Open) {
	run(t, open, map[string]func(t *testing.T, s Store){
		"SettleOnceAndDedupe":          testSettleOnce,
		"ConcurrentSettlesOneWins":     testConcurrentSettles,
		"BatchWithLosers":              testBatchWithLosers,
		"BatchSeesEarlierDecisions":    testBatchSeesEarlier,
		"FailingDecisionRollsBack":     testDecideRollsBack,
		"LookupFindAnswerable":         testLookupFindAnswerable,
		"LookupPrefetch":               testLookupPrefetch,
		"RefusalOfAnEndedQuestion":     testRefusalOfEnded,
		"ApprovalsOneOfSeveral":        testApprovals,
		"DelegationRewritesTheBody":    testDelegation,
		"SnoozesHoldOnePerson":         testSnoozes,
		"DeliveriesLatestPerPlatform":  testDeliveries,
		"RecordDeliveriesInOrder":      testRecordDeliveries,
		"JobThreads":                   testJobThreads,
		"AuditOldestFirst":             testAudit,
		"DecisionsWriteTheirLogsOnWin": testDecisionLogs,
		"LargeBatch":                   testLargeBatch,
		"RaceAttempt":                  testRaceAttempt,
		"RaceApprovals":                testRaceApprovals,
		"RaceDeliveries":               testRaceDeliveries,
	})
	t.Run("BatchMatchesOneByOne", func(t *testing.T) { testBatchMatchesOneByOne(t, open) })
}

// decideAll decides ds as one batch and returns each one's outcome.
func decideAll(t *testing.T, s Store, ds ...record.Decision) []error {
	t.Helper()
	errs, err := s.DecideEach(ctx, len(ds), func(i int, _ record.Lookup) (record.Decision, error) { return ds[i], nil })
	if err != nil {
		t.Fatalf("DecideEach: %v", err)
	}
	if len(errs) != len(ds) {
		t.Fatalf("DecideEach: %d outcomes of %d decisions", len(errs), len(ds))
	}
	return errs
}

// wantOutcomes fails the test unless each outcome is its want (nil is nil).
func wantOutcomes(t *testing.T, got []error, want ...error) {
	t.Helper()
	for i := range want {
		if (want[i] == nil && got[i] != nil) || !errors.Is(got[i], want[i]) {
			t.Errorf("decision %d: %v, want %v", i, got[i], want[i])
		}
	}
}

// refuse is a refusal of attempt on question q, announcing data.
func refuse(q int64, attempt, data string) record.Decision {
	return record.Decision{Refuse: &record.Refusal{AttemptID: attempt, Question: q, At: T0,
		Outbox: []record.Message{{Subject: "ev", Data: []byte(data)}}}}
}

// seen reports whether attempt was decided before: a refusal of it, which
// needs no pending question, then says ErrDuplicate. (Unless it was not,
// the probe records it.)
func seen(t *testing.T, s Store, q int64, attempt string) bool {
	t.Helper()
	err := decideAll(t, s, record.Decision{Refuse: &record.Refusal{AttemptID: attempt, Question: q, At: T0}})[0]
	if err != nil && !errors.Is(err, record.ErrDuplicate) {
		t.Fatalf("probe of attempt %s: %v", attempt, err)
	}
	return err != nil
}

// testSettleOnce: a settlement takes a pending question once; the same
// attempt again is ErrDuplicate, another ErrNotPending, and a loser
// leaves nothing behind.
func testSettleOnce(t *testing.T, s Store) {
	rec := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	at := T0.Add(time.Minute)
	st := record.Settlement{
		Question: rec.ID, State: bridge.StateAnswered, Action: bridge.ActionAnswer, Answer: []byte(`"blue"`), AnswerRaw: []byte(`"Blue"`),
		AnswerText: "blue", Comment: "my pick", By: "slack:U1", ByName: "kevin", Via: "slack", Text: "The answer: blue", At: at,
		AttemptID: "a1", Outbox: []record.Message{{Subject: "ask.v1.resume.acme.job-1", Data: []byte("answered")}},
	}
	if err := s.Settle(ctx, st); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, st); !errors.Is(err, record.ErrDuplicate) {
		t.Fatalf("the same attempt again: %v, want ErrDuplicate", err)
	}
	st.AttemptID, st.By = "a2", "slack:U2"
	if err := s.Settle(ctx, st); !errors.Is(err, record.ErrNotPending) {
		t.Fatalf("a second answer: %v, want ErrNotPending", err)
	}
	st.AttemptID = ""
	if err := s.Settle(ctx, st); !errors.Is(err, record.ErrNotPending) {
		t.Fatalf("a second answer without an attempt id: %v, want ErrNotPending", err)
	}
	r := Get(t, s, rec.ID)
	if r.State != bridge.StateAnswered || r.Action != bridge.ActionAnswer || string(r.Answer) != `"blue"` || string(r.AnswerRaw) != `"Blue"` ||
		r.AnswerText != "blue" || r.Comment != "my pick" || r.By != "slack:U1" || r.ByName != "kevin" || r.Via != "slack" ||
		r.Text != "The answer: blue" || !r.SettledAt.Equal(at) {
		t.Fatalf("record = %+v", r)
	}
	want := []string{"ask.v1.event.acme.job-1 asked q-1", "ask.v1.resume.acme.job-1 answered"}
	if got := Unsent(t, s); !slices.Equal(got, want) {
		t.Fatalf("outbox = %q, want %q", got, want)
	}
	if !seen(t, s, rec.ID, "a1") || seen(t, s, rec.ID, "a2") {
		t.Fatal("a1 should be recorded and the losing a2 not")
	}
	if err := s.Settle(ctx, record.Settlement{Question: rec.ID + 1000, State: bridge.StateAnswered, At: at}); !errors.Is(err, record.ErrNotPending) {
		t.Fatalf("settle of an unknown question: %v, want ErrNotPending", err)
	}
}

// testConcurrentSettles: of many settlements at once, exactly one wins.
func testConcurrentSettles(t *testing.T, s Store) {
	rec := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	const n = 20
	results := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.Settle(ctx, record.Settlement{Question: rec.ID, State: bridge.StateAnswered, By: fmt.Sprint("slack:U", i),
				AttemptID: fmt.Sprint("a", i), At: T0, Outbox: []record.Message{{Subject: "res", Data: []byte(fmt.Sprint(i))}}})
		}()
	}
	wg.Wait()
	winner := -1
	for i, err := range results {
		switch {
		case err == nil && winner < 0:
			winner = i
		case err == nil:
			t.Fatalf("settlements %d and %d both won", winner, i)
		case !errors.Is(err, record.ErrNotPending):
			t.Fatalf("settlement %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no settlement won")
	}
	if got := Get(t, s, rec.ID); got.By != fmt.Sprint("slack:U", winner) {
		t.Fatalf("answered by %s, but settlement %d won", got.By, winner)
	}
	if got := Unsent(t, s); len(got) != 2 || got[1] != fmt.Sprint("res ", winner) {
		t.Fatalf("outbox = %q, want the winner's message only", got)
	}
}

// settlement answers q for attempt, announcing it in two messages.
func settlement(q int64, attempt string) *record.Settlement {
	return &record.Settlement{Question: q, State: bridge.StateAnswered, Action: bridge.ActionAnswer, Answer: []byte(`"x"`),
		By: "slack:U1", Via: "slack", At: T0, AttemptID: attempt,
		Outbox: []record.Message{{Subject: "ev", Data: []byte(attempt + "-event")}, {Subject: "res", Data: []byte(attempt + "-resume")}}}
}

// testBatchWithLosers: in a batch, the losers write nothing and do not
// disturb the others; the winners' messages keep the batch's order.
func testBatchWithLosers(t *testing.T, s Store) {
	q1 := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	q2 := Ask(t, s, NewQuestion("job-2", "q-1", 1))
	errs := decideAll(t, s,
		record.Decision{Settle: settlement(q1.ID, "a1")},
		record.Decision{Settle: settlement(q1.ID, "a2")}, // q1 is answered
		refuse(q1.ID, "a1", "a1-again"),                  // a1 was decided
		refuse(q1.ID, "a4", "a4-refused"),
		record.Decision{Settle: settlement(q2.ID, "a3")},
	)
	wantOutcomes(t, errs, nil, record.ErrNotPending, record.ErrDuplicate, nil, nil)
	want := []string{"ev a1-event", "res a1-resume", "ev a4-refused", "ev a3-event", "res a3-resume"}
	if got := Unsent(t, s)[2:]; !slices.Equal(got, want) {
		t.Fatalf("outbox = %q, want %q", got, want)
	}
	if got := Get(t, s, q1.ID); got.State != bridge.StateAnswered || got.By != "slack:U1" {
		t.Fatalf("q1 = %+v", got)
	}
	if audit, err := s.Audit(ctx, q1.ID); err != nil || len(audit) != 2 {
		t.Fatalf("audit of q1 = %+v, %v; want asked and answered", audit, err)
	}
	for attempt, want := range map[string]bool{"a1": true, "a2": false, "a3": true, "a4": true} {
		if got := seen(t, s, q1.ID, attempt); got != want {
			t.Errorf("attempt %s recorded = %v, want %v", attempt, got, want)
		}
	}
}

// answerIfPending decides attempt i on k as the runtime does: an answer
// while the question is pending, a refusal after. It notes what it read.
func answerIfPending(l record.Lookup, k record.Key, i int, read *[]string) (record.Decision, error) {
	a, err := l.FindAnswerable(ctx, k)
	if err != nil {
		return record.Decision{}, err
	}
	*read = append(*read, a.State)
	if a.State != bridge.StatePending {
		return record.Decision{Refuse: &record.Refusal{AttemptID: fmt.Sprint("a", i), Question: a.ID, At: T0}}, nil
	}
	return record.Decision{Settle: &record.Settlement{Question: a.ID, State: bridge.StateAnswered, Action: bridge.ActionAnswer,
		Answer: []byte(`"x"`), By: fmt.Sprint("slack:U", i), At: T0, AttemptID: fmt.Sprint("a", i)}}, nil
}

// testBatchSeesEarlier: each decision of a batch reads what the decisions
// before it left, through FindAnswerable and Find alike.
func testBatchSeesEarlier(t *testing.T, s Store) {
	q := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	var read []string
	errs, err := s.DecideEach(ctx, 3, func(i int, l record.Lookup) (record.Decision, error) {
		if i == 2 {
			r, err := l.Find(ctx, record.Key{Tenant: Tenant, JobID: "job-1", QuestionID: "q-1"})
			if err != nil {
				return record.Decision{}, err
			}
			read = append(read, "find "+r.State)
		}
		return answerIfPending(l, q.Key, i, &read)
	})
	if err != nil {
		t.Fatal(err)
	}
	wantOutcomes(t, errs, nil, nil, nil)
	if want := []string{"pending", "answered", "find answered", "answered"}; !slices.Equal(read, want) {
		t.Fatalf("read %q, want %q", read, want)
	}
	if got := Get(t, s, q.ID); got.By != "slack:U0" {
		t.Fatalf("answered by %s, want the first decision's slack:U0", got.By)
	}
}

// testDecideRollsBack: a decide error undoes the whole batch.
func testDecideRollsBack(t *testing.T, s Store) {
	q := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	boom := errors.New("boom")
	_, err := s.DecideEach(ctx, 3, func(i int, l record.Lookup) (record.Decision, error) {
		switch i {
		case 0:
			return record.Decision{Settle: settlement(q.ID, "b0")}, nil
		case 1:
			return refuse(q.ID, "b1", "b1-refused"), nil
		}
		return record.Decision{}, boom
	})
	if err == nil {
		t.Fatal("no error from a failing decision")
	}
	if got := Get(t, s, q.ID); got.State != bridge.StatePending {
		t.Fatalf("question = %s after a rolled-back batch", got.State)
	}
	if got := Unsent(t, s); len(got) != 1 {
		t.Fatalf("outbox = %q after a rolled-back batch", got)
	}
	if seen(t, s, q.ID, "b0") || seen(t, s, q.ID, "b1") {
		t.Fatal("a rolled-back batch recorded its attempts")
	}
}

// testLookupFindAnswerable: the answer path's read gives the question, its
// job's version and the messages showing it.
func testLookupFindAnswerable(t *testing.T, s Store) {
	rec := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	ref := bridge.MessageRef{Platform: "slack", Channel: "C1", MessageID: "1.2", Thread: "1.1"}
	if _, err := s.RecordDelivery(ctx, rec.ID, bridge.Delivery{Platform: "slack", OK: true, Message: &ref}, T0); err != nil {
		t.Fatal(err)
	}
	Ask(t, s, NewQuestion("job-1", "q-next", 3))
	Ask(t, s, NewQuestion("job-2", "q-1", 1))
	_, err := s.DecideEach(ctx, 1, func(int, record.Lookup) (record.Decision, error) { return record.Decision{}, nil })
	if err != nil {
		t.Fatalf("a batch deciding nothing: %v", err)
	}
	_, err = s.DecideEach(ctx, 1, func(_ int, l record.Lookup) (record.Decision, error) {
		a, err := l.FindAnswerable(ctx, rec.Key)
		if err != nil || a.ID != rec.ID || a.JobVersion != 3 || a.TaskVersion != 1 || a.State != bridge.StateSuperseded ||
			len(a.Messages) != 1 || a.Messages[0] != ref {
			t.Errorf("answerable after the job moved on = %+v, %v", a, err)
		}
		a, err = l.FindAnswerable(ctx, record.Key{Tenant: Tenant, JobID: "job-2", QuestionID: "q-1"})
		if err != nil || a.JobID != "job-2" || a.JobVersion != 1 || a.Messages != nil || a.State != bridge.StatePending {
			t.Errorf("answerable, latest version, no messages = %+v, %v", a, err)
		}
		if _, err := l.FindAnswerable(ctx, record.Key{Tenant: Tenant, JobID: "job-1", QuestionID: "q-1", TaskVersion: 9}); !errors.Is(err, record.ErrNotFound) {
			t.Errorf("answerable, unknown version: %v, want ErrNotFound", err)
		}
		if _, err := l.Find(ctx, record.Key{Tenant: Tenant, JobID: "job-9", QuestionID: "q-1"}); !errors.Is(err, record.ErrNotFound) {
			t.Errorf("find, unknown job: %v, want ErrNotFound", err)
		}
		return record.Decision{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// testLookupPrefetch: a prefetched question reads as a lookup of its own
// would, before and after a decision of the batch changes it, and a
// caller's changes to what it read stay its own.
func testLookupPrefetch(t *testing.T, s Store) {
	q1 := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	q2 := Ask(t, s, NewQuestion("job-2", "q-1", 1))
	if _, err := s.RecordDelivery(ctx, q1.ID, bridge.Delivery{Platform: "slack", OK: true,
		Message: &bridge.MessageRef{Platform: "slack", Channel: "C1", MessageID: "1.2", Thread: "1.1"}}, T0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, record.JobCancel{Tenant: Tenant, JobID: "job-2", NewVersion: 3, At: T0}); err != nil {
		t.Fatal(err)
	}
	missing := record.Key{Tenant: Tenant, JobID: "job-9", QuestionID: "q-1", TaskVersion: 1}
	latest := record.Key{Tenant: Tenant, JobID: "job-1", QuestionID: "q-1"}
	show := func(a *record.Answerable) string {
		return fmt.Sprintf("%+v %d %v", *a.Record, a.JobVersion, a.Messages)
	}
	want := map[record.Key]string{}
	_, err := s.DecideEach(ctx, 1, func(_ int, l record.Lookup) (record.Decision, error) {
		for _, k := range []record.Key{q1.Key, q2.Key, latest} {
			a, err := l.FindAnswerable(ctx, k)
			if err != nil {
				return record.Decision{}, err
			}
			if k == q2.Key && (a.JobVersion != 3 || a.State != bridge.StateSuperseded) {
				t.Errorf("job-2's question after a bump to 3 = %s at job version %d", a.State, a.JobVersion)
			}
			want[k] = show(a)
		}
		return record.Decision{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var read []string
	errs, err := s.DecideEach(ctx, 3, func(i int, l record.Lookup) (record.Decision, error) {
		if i == 0 {
			if err := l.Prefetch(ctx, []record.Key{q1.Key, q2.Key, missing, latest, q1.Key}); err != nil {
				return record.Decision{}, err
			}
			for _, k := range []record.Key{q1.Key, q2.Key, latest} {
				got, err := l.FindAnswerable(ctx, k)
				if err != nil {
					return record.Decision{}, err
				}
				if show(got) != want[k] {
					t.Errorf("prefetched %s:\n got %s\nwant %s", k, show(got), want[k])
				}
				got.State = "scribbled" // the caller's copy
			}
			if _, err := l.FindAnswerable(ctx, missing); !errors.Is(err, record.ErrNotFound) {
				t.Errorf("a missing question: %v, want ErrNotFound", err)
			}
		}
		return answerIfPending(l, q1.Key, i, &read)
	})
	if err != nil {
		t.Fatal(err)
	}
	wantOutcomes(t, errs, nil, nil, nil)
	if want := []string{"pending", "answered", "answered"}; !slices.Equal(read, want) {
		t.Fatalf("read %q, want %q", read, want)
	}
}

// testRefusalOfEnded: a refusal needs no pending question: it is recorded
// and announced whatever the question's state, once per attempt.
func testRefusalOfEnded(t *testing.T, s Store) {
	q := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	Settle(t, s, q, T0)
	wantOutcomes(t, decideAll(t, s, refuse(q.ID, "r1", "refused")), nil)
	wantOutcomes(t, decideAll(t, s, refuse(q.ID, "r1", "refused again")), record.ErrDuplicate)
	wantOutcomes(t, decideAll(t, s, refuse(q.ID, "", "no id"), refuse(q.ID, "", "no id")), nil, nil)
	want := []string{"ev refused", "ev no id", "ev no id"}
	if got := Unsent(t, s)[1:]; !slices.Equal(got, want) {
		t.Fatalf("outbox = %q, want %q", got, want)
	}
	if audit, _ := s.Audit(ctx, q.ID); len(audit) != 2 {
		t.Fatalf("a refusal audited the question: %+v", audit)
	}
}
