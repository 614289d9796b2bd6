package store

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "sub", "askbridge.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newQ(job, qid string, version int64) record.NewQuestion {
	return record.NewQuestion{
		Key:      record.Key{Tenant: "acme", JobID: job, QuestionID: qid, TaskVersion: version},
		Kind:     bridge.KindQuestion,
		Body:     []byte(`{"question":"Which?"}`),
		AskedAt:  t0,
		Deadline: t0.Add(4 * time.Hour),
		Steps: []record.Step{
			{Index: 0, Target: bridge.TargetAnswerers, Due: t0.Add(time.Hour)},
			{Index: 1, Target: record.StepTimeout, Due: t0.Add(4 * time.Hour)},
		},
		Outbox: []record.Message{{Subject: "ask.v1.event.acme." + job, Data: []byte(`asked`)}},
		Supersede: func(old *record.Record) []record.Message {
			return []record.Message{{Subject: "ask.v1.resume.acme." + job, Data: []byte("superseded " + old.QuestionID)}}
		},
	}
}

func mustAsk(t *testing.T, s *Store, nq record.NewQuestion) *record.AskResult {
	t.Helper()
	res, err := s.Ask(context.Background(), nq)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestMigrationsAndReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	// Every embedded migration is applied, whoever adds the next one.
	names, _ := fs.Glob(migrations, "migrations/*.sql")
	v, err := s.SchemaVersion(context.Background())
	if err != nil || v != len(names) || v < 4 {
		t.Fatalf("schema version %d of %d migrations, %v", v, len(names), err)
	}
	mustAsk(t, s, newQ("job-1", "q-1", 1))
	s.Close()
	s, err = Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Find(context.Background(), record.Key{Tenant: "acme", JobID: "job-1", QuestionID: "q-1"})
	if err != nil || r.State != bridge.StatePending || !r.AskedAt.Equal(t0) {
		t.Fatalf("after reopen: %+v, %v", r, err)
	}
	var mode string
	if err := s.r.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal mode %q, %v", mode, err)
	}
	var sync int
	if err := s.w.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil || sync != 2 {
		t.Fatalf("synchronous %d (want 2, FULL), %v", sync, err)
	}
}

// TestInstanceIsKeptAcrossOpens checks a database keeps its id when opened
// again (a restart: the adapters' posting claims and the runtime's lease
// name this replica by it), and another database has another.
func TestInstanceIsKeptAcrossOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "askbridge.db")
	first, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	id := first.Instance()
	first.Close()
	again, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if id == "" || again.Instance() != id {
		t.Fatalf("instance %q after reopening, want %q", again.Instance(), id)
	}
	if other := open(t).Instance(); other == id {
		t.Fatalf("another database has the same instance %q", other)
	}
}
