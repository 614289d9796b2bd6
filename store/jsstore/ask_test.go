package jsstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newQ(job, qid string, version int64) store.NewQuestion {
	return store.NewQuestion{
		Key:      store.Key{Tenant: "acme", JobID: job, QuestionID: qid, TaskVersion: version},
		Kind:     bridge.KindQuestion,
		Body:     []byte(`{"question":"Which?"}`),
		AskedAt:  t0,
		Deadline: t0.Add(4 * time.Hour),
		Steps: []store.Step{
			{Index: 0, Target: bridge.TargetAnswerers, Due: t0.Add(time.Hour)},
			{Index: 1, Target: store.StepTimeout, Due: t0.Add(4 * time.Hour)},
		},
		Outbox: []store.Message{{Subject: "ask.v1.event.acme." + job, Data: []byte(`asked`)}},
		Supersede: func(old *store.Record) []store.Message {
			return []store.Message{{Subject: "ask.v1.resume.acme." + job, Data: []byte("superseded " + old.QuestionID)}}
		},
	}
}

func mustAsk(t testing.TB, s *Store, nq store.NewQuestion) *store.AskResult {
	t.Helper()
	res, err := s.AskMany(context.Background(), []store.NewQuestion{nq})
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

// outboxOf reads the outbox rows in the order they were written.
func outboxOf(t testing.TB, s *Store) []string {
	t.Helper()
	entries, err := s.list(context.Background(), "out.>")
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.Rev, b.Rev) })
	var out []string
	for _, e := range entries {
		var o outboxDoc
		if err := jsonDecode(e.Value, &o); err != nil {
			t.Fatal(err)
		}
		out = append(out, o.Subject+" "+string(o.Data))
	}
	return out
}

// dueOf reads every due key: question id → its next step.
func dueOf(t testing.TB, s *Store) map[int64]dueDoc {
	t.Helper()
	entries, err := s.list(context.Background(), "due.>")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]dueDoc{}
	for _, e := range entries {
		var d dueDoc
		if err := jsonDecode(e.Value, &d); err != nil {
			t.Fatal(err)
		}
		out[d.Question] = d
	}
	return out
}

func TestAskDuplicateStaleAndSupersede(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	first := mustAsk(t, s, newQ("job-1", "q-1", 2))
	if first.Status != store.Asked || first.Record == nil || first.JobVersion != 2 {
		t.Fatalf("first ask = %+v", first)
	}
	if res := mustAsk(t, s, newQ("job-1", "q-1", 2)); res.Status != store.Duplicate {
		t.Fatalf("same ask again = %+v", res)
	}
	if res := mustAsk(t, s, newQ("job-1", "q-old", 1)); res.Status != store.Stale || res.JobVersion != 2 {
		t.Fatalf("older version = %+v", res)
	}
	got, err := s.Get(ctx, first.Record.ID)
	if err != nil || fmt.Sprint(*got) != fmt.Sprint(*first.Record) || !got.AskedAt.Equal(t0) {
		t.Fatalf("get = %+v, %v; want %+v", got, err, first.Record)
	}
	if due := dueOf(t, s); len(due) != 1 || due[first.Record.ID].Index != 0 || !due[first.Record.ID].Due.Equal(t0.Add(time.Hour)) {
		t.Fatalf("due keys = %+v, want q-1's first step", due)
	}
	mustAsk(t, s, newQ("job-1", "q-2", 2))
	res := mustAsk(t, s, newQ("job-1", "q-3", 3))
	if res.Status != store.Asked || len(res.Superseded) != 2 || res.Superseded[0].State != bridge.StateSuperseded {
		t.Fatalf("newer version = %+v", res)
	}
	for _, qid := range []string{"q-1", "q-2"} {
		r, err := s.Find(ctx, store.Key{Tenant: "acme", JobID: "job-1", QuestionID: qid})
		if err != nil || r.State != bridge.StateSuperseded || r.Text != "superseded by task version 3" {
			t.Fatalf("%s = %+v, %v", qid, r, err)
		}
		audit, _ := s.Audit(ctx, r.ID)
		if len(audit) != 2 || audit[1].From != bridge.StatePending || audit[1].To != bridge.StateSuperseded {
			t.Fatalf("%s audit = %+v", qid, audit)
		}
	}
	want := []string{
		"ask.v1.event.acme.job-1 asked", "ask.v1.event.acme.job-1 asked",
		"ask.v1.resume.acme.job-1 superseded q-1", "ask.v1.resume.acme.job-1 superseded q-2", "ask.v1.event.acme.job-1 asked",
	}
	if got := outboxOf(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("outbox = %q", got)
	}
	if due := dueOf(t, s); len(due) != 1 || due[res.Record.ID].Target != bridge.TargetAnswerers {
		t.Fatalf("due keys = %+v, want q-3's only", due)
	}
	if _, err := s.Get(ctx, 999); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get of no question: %v", err)
	}
	if _, err := s.Find(ctx, store.Key{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 9}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("find of no version: %v", err)
	}
}

func jsonDecode(data []byte, v any) error { return json.Unmarshal(data, v) }
