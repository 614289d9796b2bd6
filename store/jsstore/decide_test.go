package jsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
	"github.com/askbridge/askbridge/store/storetest"
)

// written lists what the decisions wrote, by question: the data of the
// outbox rows on "res.<question>" and the bodies of the log entries.
func written(t *testing.T, s *Store) (outbox, log map[string][]string) {
	t.Helper()
	ctx := context.Background()
	outbox, log = map[string][]string{}, map[string][]string{}
	rows, err := s.list(ctx, "out.>")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rows {
		var o outboxDoc
		if err := json.Unmarshal(e.Value, &o); err != nil {
			t.Fatal(err)
		}
		if q, ok := strings.CutPrefix(o.Subject, "res."); ok {
			outbox[q] = append(outbox[q], string(o.Data))
		}
	}
	entries, err := s.list(ctx, "log.>")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		l, err := logEntry(storetest.Tenant, "job", e)
		if err != nil {
			t.Fatal(err)
		}
		log[l.QuestionID] = append(log[l.QuestionID], string(l.Body))
	}
	return outbox, log
}

// answer is replica r's answer to question q: one resume, one log entry.
func answer(q int64, r string) record.Decision {
	return record.Decision{Settle: &record.Settlement{Question: q, State: bridge.StateAnswered, Action: bridge.ActionAnswer,
		Answer: []byte(`"` + r + `"`), By: "slack:" + r, AttemptID: fmt.Sprint(r, "-", q), At: storetest.T0,
		Outbox: []record.Message{{Subject: fmt.Sprint("res.", q), Data: []byte(r)}},
		Log:    []record.LogEntry{{Tenant: storetest.Tenant, JobID: "job", Kind: record.LogApproval, QuestionID: fmt.Sprint(q), Body: json.RawMessage(`"` + r + `"`), At: storetest.T0}}}}
}

// TestTwoReplicasDecideOneQuestionOnce: two replicas on one server answer
// the same questions at once, each in a batch of its own (in opposite
// orders, so each batch conflicts with the other), again and again. Each
// question is settled exactly once: one replica's answer wins, the other
// gets ErrNotPending, and only the winner's resume and log entry are
// written, and only its attempt recorded.
func TestTwoReplicasDecideOneQuestionOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := twoReplicas(t)
	const rounds, perRound = 12, 3
	var nqs []record.NewQuestion
	for i := range rounds * perRound {
		nqs = append(nqs, storetest.NewQuestion(fmt.Sprint("job-", i), "q", 1))
	}
	res, err := a.AskMany(ctx, nqs)
	if err != nil {
		t.Fatal(err)
	}
	winners := map[int64]string{}
	for round := range rounds {
		var qs []int64
		for _, r := range res[round*perRound : (round+1)*perRound] {
			qs = append(qs, r.Record.ID)
		}
		var outcomes [2][]error
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, s := range []*Store{a, b} {
			order := slices.Clone(qs)
			if i == 1 {
				slices.Reverse(order)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ds := make([]record.Decision, len(order))
				for j, q := range order {
					ds[j] = answer(q, fmt.Sprint("r", i))
				}
				errs, err := s.Decide(ctx, ds)
				if err != nil {
					t.Error(err)
					return
				}
				if i == 1 {
					slices.Reverse(errs)
				}
				outcomes[i] = errs
			}()
		}
		close(start)
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		for j, q := range qs {
			ea, eb := outcomes[0][j], outcomes[1][j]
			winner := "r0"
			switch {
			case ea == nil && errors.Is(eb, record.ErrNotPending):
			case eb == nil && errors.Is(ea, record.ErrNotPending):
				winner = "r1"
			default:
				t.Fatalf("round %d question %d: outcomes %v and %v, want one nil and one ErrNotPending", round, q, ea, eb)
			}
			rec, err := b.Get(ctx, q)
			if err != nil || rec.State != bridge.StateAnswered || rec.By != "slack:"+winner {
				t.Fatalf("round %d question %d: %+v, %v; want answered by %s", round, q, rec, err, winner)
			}
			winners[q] = winner
			loser := map[string]string{"r0": "r1", "r1": "r0"}[winner]
			for r, want := range map[string]bool{winner: true, loser: false} {
				if _, _, ok, err := a.get(ctx, keyAttempt(fmt.Sprint(r, "-", q))); err != nil || ok != want {
					t.Fatalf("round %d question %d: attempt of %s recorded %v (%v), want %v", round, q, r, ok, err, want)
				}
			}
		}
	}
	outbox, log := written(t, b)
	for q, winner := range winners {
		if got := outbox[fmt.Sprint(q)]; !slices.Equal(got, []string{winner}) {
			t.Errorf("question %d: resumes %q, want %s's alone", q, got, winner)
		}
		if got := log[fmt.Sprint(q)]; !slices.Equal(got, []string{`"` + winner + `"`}) {
			t.Errorf("question %d: log entries %q, want %s's alone", q, got, winner)
		}
	}
	if len(outbox) != len(winners) || len(log) != len(winners) {
		t.Errorf("resumes of %d questions and log entries of %d, want %d", len(outbox), len(log), len(winners))
	}
}

// TestTwoReplicasDecideAsTheRuntimeDoes: two replicas decide answers to one
// question as the runtime does, reading it through the Lookup: the one
// whose batch loses the race decides again on what the other left, and
// refuses. Exactly one answer settles the question and one resume is
// written.
func TestTwoReplicasDecideAsTheRuntimeDoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := twoReplicas(t)
	var again atomic.Int64
	const rounds = 15
	var nqs []record.NewQuestion
	for i := range rounds {
		nqs = append(nqs, storetest.NewQuestion(fmt.Sprint("job-", i), "q", 1))
	}
	asked, err := a.AskMany(ctx, nqs)
	if err != nil {
		t.Fatal(err)
	}
	winners := map[int64]string{}
	for round := range rounds {
		rec := asked[round].Record
		var refused atomic.Int64
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, s := range []*Store{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				calls := 0
				errs, err := s.DecideEach(ctx, 1, func(_ int, l record.Lookup) (record.Decision, error) {
					if calls++; calls > 1 {
						again.Add(1)
					}
					found, err := l.FindAnswerable(ctx, rec.Key)
					if err != nil {
						return record.Decision{}, err
					}
					if found.State != bridge.StatePending {
						refused.Add(1)
						return record.Decision{Refuse: &record.Refusal{AttemptID: fmt.Sprint("r", i, "-", rec.ID), Question: rec.ID, At: storetest.T0}}, nil
					}
					return answer(rec.ID, fmt.Sprint("r", i)), nil
				})
				if err != nil || errs[0] != nil {
					t.Errorf("replica %d: %v, %v", i, errs, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		got, err := a.Get(ctx, rec.ID)
		if err != nil || got.State != bridge.StateAnswered {
			t.Fatalf("round %d: %+v, %v", round, got, err)
		}
		winners[rec.ID] = strings.TrimPrefix(got.By, "slack:")
		if refused.Load() != 1 {
			t.Fatalf("round %d: %d refusals, want the loser's one", round, refused.Load())
		}
	}
	outbox, log := written(t, b)
	for q, winner := range winners {
		if got := outbox[fmt.Sprint(q)]; !slices.Equal(got, []string{winner}) || len(log[fmt.Sprint(q)]) != 1 {
			t.Errorf("question %d: resumes %q and log %q, want %s's alone", q, got, log[fmt.Sprint(q)], winner)
		}
	}
	t.Logf("%d of %d rounds decided a loser again after a conflict", again.Load(), rounds)
}
