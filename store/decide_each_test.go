package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// A batch where some decisions lose: the losers write nothing, the others
// commit, and the outbox keeps the winners' messages in order.
func TestDecideBatchWithLosers(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	q1 := mustAsk(t, s, newQ("job-1", "q-1", 1)).Record
	q2 := mustAsk(t, s, newQ("job-2", "q-1", 1)).Record
	settle := func(q *record.Record, attempt string) *record.Settlement {
		return &record.Settlement{Question: q.ID, State: bridge.StateAnswered, Action: bridge.ActionAnswer, Answer: []byte(`"x"`),
			By: "slack:U1", Via: "slack", At: t0, AttemptID: attempt,
			Outbox: []record.Message{{Subject: "ev", Data: []byte(attempt + "-event")}, {Subject: "res", Data: []byte(attempt + "-resume")}}}
	}
	before := len(unsentSubjects(t, s))
	errs, err := s.Decide(ctx, []record.Decision{
		{Settle: settle(q1, "a1")},
		{Settle: settle(q1, "a2")},
		{Refuse: &record.Refusal{AttemptID: "a1", Question: q1.ID, At: t0, Outbox: []record.Message{{Subject: "ev", Data: []byte("a1-again")}}}},
		{Refuse: &record.Refusal{AttemptID: "a4", Question: q1.ID, At: t0, Outbox: []record.Message{{Subject: "ev", Data: []byte("a4-refused")}}}},
		{Settle: settle(q2, "a3")},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []error{nil, record.ErrNotPending, record.ErrDuplicate, nil, nil}
	for i := range want {
		if !errors.Is(errs[i], want[i]) || (want[i] == nil && errs[i] != nil) {
			t.Errorf("decision %d: %v, want %v", i, errs[i], want[i])
		}
	}
	got := unsentSubjects(t, s)[before:]
	wantOut := []string{"ev a1-event", "res a1-resume", "ev a4-refused", "ev a3-event", "res a3-resume"}
	if fmt.Sprint(got) != fmt.Sprint(wantOut) {
		t.Fatalf("outbox = %q, want %q", got, wantOut)
	}
	for id, seen := range map[string]bool{"a1": true, "a2": false, "a3": true, "a4": true} {
		if got, _ := s.SeenAttempt(ctx, id); got != seen {
			t.Errorf("attempt %s seen = %v, want %v", id, got, seen)
		}
	}
	if audit, _ := s.Audit(ctx, q1.ID); len(audit) != 2 {
		t.Errorf("audit of q1 = %+v, want asked and answered", audit)
	}
}

// answerIfPending decides attempt i on the question k: an answer while it
// is pending, a refusal after. It notes the state it read in seen.
func answerIfPending(ctx context.Context, l record.Lookup, k record.Key, i int, seen *[]string) (record.Decision, error) {
	a, err := l.FindAnswerable(ctx, k)
	if err != nil {
		return record.Decision{}, err
	}
	*seen = append(*seen, a.State)
	if a.State != bridge.StatePending {
		return record.Decision{Refuse: &record.Refusal{AttemptID: fmt.Sprint("a", i), Question: a.ID, At: t0}}, nil
	}
	return record.Decision{Settle: &record.Settlement{Question: a.ID, State: bridge.StateAnswered, Action: bridge.ActionAnswer,
		Answer: []byte(`"x"`), By: "slack:U1", At: t0, AttemptID: fmt.Sprint("a", i)}}, nil
}

// Each decision of a batch reads the state the decisions before it left.
func TestDecideEachSeesEarlierDecisions(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	q := mustAsk(t, s, newQ("job-1", "q-1", 1)).Record
	var seen []string
	errs, err := s.DecideEach(ctx, 2, func(i int, l record.Lookup) (record.Decision, error) {
		return answerIfPending(ctx, l, q.Key, i, &seen)
	})
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("errs %v, %v", errs, err)
	}
	if fmt.Sprint(seen) != "[pending answered]" {
		t.Fatalf("states seen = %v", seen)
	}
	// A failing decision rolls the whole batch back.
	q2 := mustAsk(t, s, newQ("job-2", "q-1", 1)).Record
	_, err = s.DecideEach(ctx, 2, func(i int, l record.Lookup) (record.Decision, error) {
		if i == 1 {
			return record.Decision{}, errors.New("boom")
		}
		return record.Decision{Settle: &record.Settlement{Question: q2.ID, State: bridge.StateAnswered, By: "slack:U1", At: t0, AttemptID: "b0"}}, nil
	})
	if err == nil {
		t.Fatal("no error from a failing decision")
	}
	if r, _ := s.Get(ctx, q2.ID); r.State != bridge.StatePending {
		t.Fatalf("q2 = %s after a rolled-back batch", r.State)
	}
	if seen, _ := s.SeenAttempt(ctx, "b0"); seen {
		t.Fatal("attempt b0 recorded by a rolled-back batch")
	}
}

// TestDecideLargeBatch decides more attempts than one multi-row statement
// holds, winners and losers mixed, and checks every one's outcome and
// every row it left (or did not).
func TestDecideLargeBatch(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	const n = 157 // 64 + 64 + 16 + 8 + 4 + 1 rows: every chunk size but 32 and 2
	var qs []*record.Record
	for i := range n {
		qs = append(qs, mustAsk(t, s, newQ(fmt.Sprint("job-", i), "q", 1)).Record)
	}
	// Attempt "old-3" was decided by an earlier batch.
	if _, err := s.Decide(ctx, []record.Decision{{Refuse: &record.Refusal{AttemptID: "old-3", Question: qs[3].ID, At: t0}}}); err != nil {
		t.Fatal(err)
	}
	// Question 5 was answered by an earlier batch.
	if errs, err := s.Decide(ctx, []record.Decision{{Settle: &record.Settlement{Question: qs[5].ID, State: bridge.StateAnswered, By: "slack:U0", At: t0, AttemptID: "early-5"}}}); err != nil || errs[0] != nil {
		t.Fatal(errs, err)
	}
	before, err := s.Unsent(ctx, 0, 1000, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var ds []record.Decision
	var want []error
	var wantOut []string
	for i, q := range qs {
		id := fmt.Sprint("a-", i)
		switch {
		case i == 3:
			id = "old-3" // decided before
		case i%20 == 7:
			id = "a-0" // the same attempt as the batch's first
		}
		st := &record.Settlement{Question: q.ID, State: bridge.StateAnswered, Action: bridge.ActionAnswer, Answer: []byte(`"x"`),
			By: "slack:U1", Via: "slack", Text: "by " + id, At: t0, AttemptID: id,
			Outbox: []record.Message{{Subject: "res", Data: []byte(fmt.Sprint("resume-", i))}}}
		ds = append(ds, record.Decision{Settle: st})
		switch {
		case i == 3 || i%20 == 7:
			want = append(want, record.ErrDuplicate)
		case i == 5:
			want = append(want, record.ErrNotPending)
		default:
			want = append(want, nil)
			wantOut = append(wantOut, fmt.Sprint("res resume-", i))
		}
		if i%10 == 9 {
			// A second answer to the same question in the same batch.
			ds = append(ds, record.Decision{Settle: &record.Settlement{Question: q.ID, State: bridge.StateAnswered, By: "slack:U2", At: t0,
				AttemptID: fmt.Sprint("second-", i), Outbox: []record.Message{{Subject: "res", Data: []byte("second")}}}})
			want = append(want, record.ErrNotPending)
		}
	}
	errs, err := s.Decide(ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !errors.Is(errs[i], want[i]) || (want[i] == nil && errs[i] != nil) {
			t.Errorf("decision %d: %v, want %v", i, errs[i], want[i])
		}
	}
	rows, err := s.Unsent(ctx, 0, 1000, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var gotOut []string
	for _, r := range rows[len(before):] {
		gotOut = append(gotOut, r.Subject+" "+string(r.Data))
	}
	if fmt.Sprint(gotOut) != fmt.Sprint(wantOut) {
		t.Fatalf("outbox:\n got %q\nwant %q", gotOut, wantOut)
	}
	for i, q := range qs {
		r, err := s.Get(ctx, q.ID)
		if err != nil {
			t.Fatal(err)
		}
		audit, err := s.Audit(ctx, q.ID)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case i == 5:
			if r.By != "slack:U0" {
				t.Errorf("question 5 answered by %q, want the earlier batch's slack:U0", r.By)
			}
		case i == 3 || i%20 == 7:
			if r.State != bridge.StatePending || len(audit) != 1 {
				t.Errorf("question %d: %s with %d audit rows after a duplicate attempt, want pending with 1", i, r.State, len(audit))
			}
		default:
			if r.State != bridge.StateAnswered || r.By != "slack:U1" || r.Text != fmt.Sprint("by a-", i) || len(audit) != 2 {
				t.Errorf("question %d: %s by %q (%q) with %d audit rows, want answered by slack:U1 with 2", i, r.State, r.By, r.Text, len(audit))
			}
			if seen, _ := s.SeenAttempt(ctx, fmt.Sprint("a-", i)); !seen {
				t.Errorf("attempt a-%d not recorded", i)
			}
		}
		if i%10 == 9 {
			if seen, _ := s.SeenAttempt(ctx, fmt.Sprint("second-", i)); seen {
				t.Errorf("losing attempt second-%d recorded", i)
			}
		}
	}
	// Only the questions still pending keep their ladder: two steps each.
	steps, err := s.DueSteps(ctx, t0.Add(24*time.Hour), 10000)
	if err != nil {
		t.Fatal(err)
	}
	left := map[int64]int{}
	for _, d := range steps {
		left[d.Question]++
	}
	for i, q := range qs {
		pending := i == 3 || i%20 == 7
		if (left[q.ID] == 2) != pending {
			t.Errorf("question %d has %d ladder steps left (pending %v)", i, left[q.ID], pending)
		}
	}
}

// TestPrefetchReadsAsFindAnswerable: a prefetched question reads exactly as
// a lookup of its own would, before and after decisions of the same batch
// change it, and what a caller does to a read copy stays its own.
func TestPrefetchReadsAsFindAnswerable(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	q1 := mustAsk(t, s, newQ("job-1", "q-1", 1)).Record
	q2 := mustAsk(t, s, newQ("job-2", "q-1", 1)).Record
	if _, err := s.RecordDelivery(ctx, q1.ID, bridge.Delivery{Platform: "slack", OK: true,
		Message: &bridge.MessageRef{Platform: "slack", Channel: "C1", MessageID: "1.2", Thread: "1.1"}}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, record.JobCancel{Tenant: "acme", JobID: "job-2", NewVersion: 3, At: t0}); err != nil {
		t.Fatal(err)
	}
	missing := record.Key{Tenant: "acme", JobID: "job-9", QuestionID: "q-1", TaskVersion: 1}
	latest := record.Key{Tenant: "acme", JobID: "job-1", QuestionID: "q-1"}
	want := map[record.Key]*record.Answerable{}
	for _, k := range []record.Key{q1.Key, q2.Key, latest} {
		a, err := s.FindAnswerable(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		want[k] = a
	}
	var seen []string
	errs, err := s.DecideEach(ctx, 3, func(i int, l record.Lookup) (record.Decision, error) {
		if i == 0 {
			if err := l.Prefetch(ctx, []record.Key{q1.Key, q2.Key, missing, latest, q1.Key}); err != nil {
				return record.Decision{}, err
			}
			for k, w := range want {
				got, err := l.FindAnswerable(ctx, k)
				if err != nil {
					return record.Decision{}, err
				}
				if fmt.Sprintf("%+v %+v", got, got.Record) != fmt.Sprintf("%+v %+v", w, w.Record) {
					t.Errorf("prefetched %s:\n got %+v %+v\nwant %+v %+v", k, got, got.Record, w, w.Record)
				}
				got.State = "scribbled" // the caller's copy
			}
			if _, err := l.FindAnswerable(ctx, missing); !errors.Is(err, record.ErrNotFound) {
				t.Errorf("missing question: %v, want ErrNotFound", err)
			}
		}
		return answerIfPending(ctx, l, q1.Key, i, &seen)
	})
	if err != nil || errs[0] != nil || errs[1] != nil || errs[2] != nil {
		t.Fatalf("errs %v, %v", errs, err)
	}
	if fmt.Sprint(seen) != "[pending answered answered]" {
		t.Fatalf("states seen = %v", seen)
	}
}
