package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// TestDecideBatchMatchesOneByOne decides random sequences of attempts (the
// same questions and attempt ids again and again, reads and blind writes,
// settlements and refusals) once as one batch and once one attempt per
// transaction, and checks the two stores end alike: every outcome, every
// question, audit row, ladder, dedupe row and outbox row, in order.
// The ordinary run decides these seeds; FuzzDecideBatchMatchesOneByOne
// (run by .ci/fuzz) explores others.
func TestDecideBatchMatchesOneByOne(t *testing.T) {
	t.Parallel()
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			batchMatchesOneByOne(t, seed)
		})
	}
}

// FuzzDecideBatchMatchesOneByOne is TestDecideBatchMatchesOneByOne over
// any seed. Its seed corpus is empty: the test decides the first seeds.
func FuzzDecideBatchMatchesOneByOne(f *testing.F) {
	f.Fuzz(batchMatchesOneByOne)
}

// batchMatchesOneByOne is one random sequence of decisions, made by seed.
func batchMatchesOneByOne(t *testing.T, seed uint64) {
	ctx := context.Background()
	batched, single := open(t), open(t)
	const questions = 23
	var keys []record.Key
	for i := range questions {
		nq := newQ(fmt.Sprint("job-", i), "q", 1)
		nq.Steps = append(nq.Steps, record.Step{Index: 2, Target: bridge.TargetAdmins, Due: t0.Add(2 * time.Hour)})
		mustAsk(t, batched, nq)
		mustAsk(t, single, nq)
		keys = append(keys, nq.Key)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	n := 64 + rng.IntN(200)
	type plan struct {
		key      record.Key
		attempt  string
		read     bool // decide on what the lookup reads; else settle blindly
		prefetch bool
	}
	plans := make([]plan, n)
	for i := range plans {
		plans[i] = plan{key: keys[rng.IntN(questions)], attempt: fmt.Sprint("a-", rng.IntN(n)), read: rng.IntN(4) > 0, prefetch: rng.IntN(2) == 0}
		if rng.IntN(10) == 0 {
			plans[i].attempt = "" // not deduplicated
		}
		if rng.IntN(12) == 0 {
			plans[i].key.TaskVersion = 0 // the latest version
		}
	}
	decide := func(i int, l record.Lookup) (record.Decision, error) {
		p := plans[i]
		if i == 0 && p.prefetch {
			all := make([]record.Key, len(plans))
			for j := range plans {
				all[j] = plans[j].key
			}
			if err := l.Prefetch(ctx, all); err != nil {
				return record.Decision{}, err
			}
		}
		a, err := l.FindAnswerable(ctx, p.key)
		if err != nil {
			return record.Decision{}, err
		}
		at := t0.Add(time.Duration(i) * time.Second)
		out := []record.Message{{Subject: "ev", Data: []byte(fmt.Sprintf("%d %s %s read %s", i, p.attempt, a.QuestionID+"@"+a.JobID, a.State))}}
		if p.read && a.State != bridge.StatePending {
			return record.Decision{Refuse: &record.Refusal{AttemptID: p.attempt, Question: a.ID, At: at, Outbox: out}}, nil
		}
		return record.Decision{Settle: &record.Settlement{Question: a.ID, State: bridge.StateAnswered, Action: bridge.ActionAnswer,
			Answer: []byte(fmt.Sprint(i)), By: fmt.Sprint("slack:U", i), Via: "slack", Text: fmt.Sprint("answer ", i), At: at,
			AttemptID: p.attempt, Outbox: out}}, nil
	}
	bErrs, err := batched.DecideEach(ctx, n, decide)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		errs, err := single.DecideEach(ctx, 1, func(_ int, l record.Lookup) (record.Decision, error) { return decide(i, l) })
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(errs[0]) != fmt.Sprint(bErrs[i]) {
			t.Errorf("decision %d (%+v): batched %v, one by one %v", i, plans[i], bErrs[i], errs[0])
		}
	}
	if b, s := dump(t, batched), dump(t, single); b != s {
		t.Fatalf("the stores differ:\nbatched:\n%s\none by one:\n%s", b, s)
	}
}

// dump is everything a decision can write, in a stable order.
func dump(t *testing.T, s *Store) string {
	t.Helper()
	var out string
	for _, q := range []string{
		"SELECT id, state, action, answer, by_id, via, text, settled_at FROM questions ORDER BY id",
		"SELECT question, from_state, to_state, by_id, via, reason, at FROM audit ORDER BY id",
		"SELECT question, idx, target, due FROM steps ORDER BY question, idx",
		"SELECT attempt_id, question, at FROM attempts ORDER BY attempt_id",
		"SELECT id, subject, CAST(data AS TEXT), created_at FROM outbox ORDER BY id",
	} {
		rows, err := s.w.QueryContext(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out += fmt.Sprintln(vals...)
		}
		rows.Close()
		out += "--\n"
	}
	return out
}
