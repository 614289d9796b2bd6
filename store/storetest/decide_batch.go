package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// testLargeBatch decides a batch of hundreds of attempts, winners and
// losers mixed (attempts decided before and within the batch, questions
// settled before and within it), and checks every outcome and what each
// left, or did not.
func testLargeBatch(t *testing.T, s Store) {
	const n = 157 // more than one multi-row statement holds: SQLite's chunks of 64, 64, 16, 8, 4 and 1
	var nqs []record.NewQuestion
	for i := range n {
		nqs = append(nqs, NewQuestion(fmt.Sprint("job-", i), "q", 1))
	}
	var qs []*record.Record
	for _, res := range AskAll(t, s, nqs...) {
		qs = append(qs, res.Record)
	}
	// Attempt "old-3" was decided by an earlier batch, question 5 answered.
	early := settlement(qs[5].ID, "early-5")
	early.Text = "by early-5"
	wantOutcomes(t, decideAll(t, s, refuse(qs[3].ID, "old-3", "old"), record.Decision{Settle: early}), nil, nil)
	before := len(Unsent(t, s))
	var ds []record.Decision
	var want []error
	var wantOut []string
	for i, q := range qs {
		id := fmt.Sprint("a-", i)
		switch {
		case i == 3:
			id = "old-3"
		case i%20 == 7:
			id = "a-0" // the same attempt as the batch's first
		}
		st := settlement(q.ID, id)
		st.Text = "by " + id
		st.Outbox = []record.Message{{Subject: "res", Data: []byte(fmt.Sprint("resume-", i))}}
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
			second := settlement(q.ID, fmt.Sprint("second-", i))
			ds = append(ds, record.Decision{Settle: second})
			want = append(want, record.ErrNotPending)
		}
	}
	wantOutcomes(t, decideAll(t, s, ds...), want...)
	if got := Unsent(t, s)[before:]; !slices.Equal(got, wantOut) {
		t.Fatalf("outbox:\n got %q\nwant %q", got, wantOut)
	}
	largeBatchLeft(t, s, qs)
}

// largeBatchLeft checks what testLargeBatch's batch left of each question:
// its state and audit, its ladder (a question still pending keeps both
// steps, the others none) and the attempts recorded (every winner's, no
// loser's: a refusal of a recorded one is a duplicate).
func largeBatchLeft(t *testing.T, s Store, qs []*record.Record) {
	t.Helper()
	steps := map[int64]int{}
	for _, d := range dueSteps(t, s, T0.Add(24*time.Hour), 10*len(qs)) {
		steps[d.Question]++
	}
	var probes []record.Decision
	var recorded []bool
	probe := func(q *record.Record, attempt string, was bool) {
		probes = append(probes, record.Decision{Refuse: &record.Refusal{AttemptID: attempt, Question: q.ID, At: T0}})
		recorded = append(recorded, was)
	}
	for i, q := range qs {
		r := Get(t, s, q.ID)
		audit, err := s.Audit(ctx, q.ID)
		if err != nil {
			t.Fatal(err)
		}
		pending := i == 3 || i%20 == 7
		switch {
		case i == 5:
			if r.Text != "by early-5" {
				t.Errorf("question 5 answered %q, want by the earlier batch", r.Text)
			}
			probe(q, "a-5", false)
		case pending:
			if r.State != bridge.StatePending || len(audit) != 1 {
				t.Errorf("question %d: %s with %d audit entries after a duplicate attempt, want pending with 1", i, r.State, len(audit))
			}
		default:
			if r.State != bridge.StateAnswered || r.Text != fmt.Sprint("by a-", i) || len(audit) != 2 {
				t.Errorf("question %d: %s %q with %d audit entries, want answered by a-%d with 2", i, r.State, r.Text, len(audit), i)
			}
			probe(q, fmt.Sprint("a-", i), true)
		}
		want := 0 // an ended question keeps no step
		if pending {
			want = 2
		}
		if steps[q.ID] != want {
			t.Errorf("question %d has %d ladder steps left, want %d", i, steps[q.ID], want)
		}
		if i%10 == 9 {
			probe(q, fmt.Sprint("second-", i), false)
		}
	}
	for j, err := range decideAll(t, s, probes...) {
		if err != nil && !errors.Is(err, record.ErrDuplicate) {
			t.Fatalf("probe of attempt %s: %v", probes[j].Refuse.AttemptID, err)
		}
		if was := err != nil; was != recorded[j] {
			t.Errorf("attempt %s recorded = %v, want %v", probes[j].Refuse.AttemptID, was, recorded[j])
		}
	}
}

// testBatchMatchesOneByOne runs BatchMatchesOneByOne on the first seeds.
func testBatchMatchesOneByOne(t *testing.T, open Open) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			BatchMatchesOneByOne(t, open(t), open(t), seed)
		})
	}
}

// BatchMatchesOneByOne decides a random sequence of attempts made by seed
// (the same questions and attempt ids again and again, reads and blind
// settlements, refusals) in batched as one batch and in single one
// attempt per DecideEach, both empty stores of one backend, and checks
// the two end alike: every outcome, every question and its audit, its
// ladder, every attempt recorded and the outbox, in order. A backend's
// fuzzing explores other seeds with it.
func BatchMatchesOneByOne(t *testing.T, batched, single Store, seed uint64) {
	t.Helper()
	const questions = 17
	var nqs []record.NewQuestion
	for i := range questions {
		nqs = append(nqs, NewQuestion(fmt.Sprint("job-", i), "q", 1))
	}
	AskAll(t, batched, nqs...)
	AskAll(t, single, nqs...)
	rng := rand.New(rand.NewPCG(seed, 7))
	n := 48 + rng.IntN(150)
	type plan struct {
		key      record.Key
		attempt  string
		read     bool // decide on what the lookup reads; else settle blindly
		prefetch bool
	}
	plans := make([]plan, n)
	for i := range plans {
		plans[i] = plan{key: nqs[rng.IntN(questions)].Key, attempt: fmt.Sprint("a-", rng.IntN(n)), read: rng.IntN(4) > 0, prefetch: rng.IntN(2) == 0}
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
		at := T0.Add(time.Duration(i) * time.Second)
		out := []record.Message{{Subject: "ev", Data: fmt.Appendf(nil, "%d %s %s read %s", i, p.attempt, a.JobID, a.State)}}
		if p.read && a.State != bridge.StatePending {
			return record.Decision{Refuse: &record.Refusal{AttemptID: p.attempt, Question: a.ID, At: at, Outbox: out}}, nil
		}
		return record.Decision{Settle: &record.Settlement{Question: a.ID, State: bridge.StateAnswered, Action: bridge.ActionAnswer,
			Answer: fmt.Append(nil, i), By: fmt.Sprint("slack:U", i), Via: "slack", Text: fmt.Sprint("answer ", i), At: at,
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
	if b, o := dump(t, batched, questions, n), dump(t, single, questions, n); b != o {
		t.Fatalf("the stores differ:\nbatched:\n%s\none by one:\n%s", b, o)
	}
}

// dump is what deciding left in s, in a stable order: the questions (ids
// 1 to questions) and their audits, the ladder steps still due, the
// outbox, and which of the attempt ids a-0 to a-<attempts-1> were decided.
func dump(t *testing.T, s Store, questions, attempts int) string {
	t.Helper()
	var out string
	for id := range int64(questions) {
		rec, err := s.Find(ctx, record.Key{Tenant: Tenant, JobID: fmt.Sprint("job-", id), QuestionID: "q", TaskVersion: 1})
		if err != nil {
			t.Fatal(err)
		}
		audit, err := s.Audit(ctx, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		out += fmt.Sprintln(rec.JobID, rec.State, rec.Action, string(rec.Answer), rec.By, rec.Via, rec.Text, rec.SettledAt, audit)
	}
	due, err := s.DueSteps(ctx, T0.Add(24*time.Hour), 10*questions)
	if err != nil {
		t.Fatal(err)
	}
	out += fmt.Sprintln("ladder", due)
	for _, m := range Unsent(t, s) {
		out += m + "\n"
	}
	var decided []int
	for i := range attempts {
		if seen(t, s, 0, fmt.Sprint("a-", i)) {
			decided = append(decided, i)
		}
	}
	return out + fmt.Sprintln("decided attempts", decided)
}
