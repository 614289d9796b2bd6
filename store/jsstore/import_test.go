package jsstore_test

import (
	"cmp"
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/store/jsstore"
	"github.com/askbridge/askbridge/store/record"
	"github.com/askbridge/askbridge/store/storetest"
)

// recordOnSQLite makes a SQLite record with history (an answered question,
// a decided attempt), a pending question with a delivery, a snooze and its
// ladder to come, a pending approval with its proposal, a job log entry and
// messages not yet published.
func recordOnSQLite(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	sq, err := store.Open(ctx, filepath.Join(t.TempDir(), "askbridge.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	answered := storetest.Ask(t, sq, storetest.NewQuestion("build", "q1", 1))
	pending := storetest.Ask(t, sq, storetest.NewQuestion("build", "q2", 1))
	storetest.Ask(t, sq, storetest.NewApproval("deploy", "ship", 1, "p-1"))
	settle := storetest.Answer(answered, storetest.T0.Add(time.Minute))
	settle.AttemptID = "slack-1"
	if err := sq.Settle(ctx, settle); err != nil {
		t.Fatal(err)
	}
	if _, err := sq.RecordDelivery(ctx, pending.ID, bridge.Delivery{Platform: "slack", OK: true,
		Message: &bridge.MessageRef{Platform: "slack", Channel: "C1", MessageID: "171.1", Thread: "170.0"}}, storetest.T0); err != nil {
		t.Fatal(err)
	}
	errs, err := sq.Decide(ctx, []record.Decision{{Snooze: &record.Snooze{AttemptID: "slack-2", Question: pending.ID,
		Identity: "slack:bob", Until: storetest.T0.Add(2 * time.Hour), Via: "slack", At: storetest.T0}}})
	if err != nil || errs[0] != nil {
		t.Fatalf("snooze: %v %v", err, errs)
	}
	if err := sq.AppendLog(ctx, []record.LogEntry{{Tenant: storetest.Tenant, JobID: "build", Kind: record.LogNotice,
		Body: []byte(`{"code":"quota"}`), At: storetest.T0}}); err != nil {
		t.Fatal(err)
	}
	return sq
}

// TestImportReadsBackAsExported moves a SQLite record into JetStream and
// reads both through every query the runtime makes: the answers must be
// the same, but for the ids JetStream numbers itself (outbox rows, log
// entries).
func TestImportReadsBackAsExported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sq := recordOnSQLite(t)
	js := openJetStream(t).(*jsstore.Store)
	imp, err := jsstore.NewImporter(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	if err := sq.Export(ctx, imp); err != nil {
		t.Fatalf("export: %v", err)
	}
	got, err := imp.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := jsstore.ImportCounts{Questions: 3, Pending: 2, Jobs: 2, Proposals: 1, Log: 1, Attempts: 2, Outbox: 3}
	if got != want {
		t.Errorf("imported %+v, want %+v", got, want)
	}
	for _, q := range []struct {
		what string
		read func(storetest.Store) (any, error)
	}{
		{"questions of build", func(s storetest.Store) (any, error) { return s.JobQuestions(ctx, storetest.Tenant, "build") }},
		{"questions of deploy", func(s storetest.Store) (any, error) { return s.JobQuestions(ctx, storetest.Tenant, "deploy") }},
		{"audit of build", func(s storetest.Store) (any, error) {
			// Imported entries are numbered a question at a time: the
			// trace orders them by time, as here.
			es, err := s.JobAudit(ctx, storetest.Tenant, "build")
			for i := range es {
				es[i].ID = 0
			}
			slices.SortStableFunc(es, func(a, b record.JobAuditEntry) int {
				return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Question, b.Question))
			})
			return es, err
		}},
		{"pending list", func(s storetest.Store) (any, error) {
			return s.List(ctx, record.ListFilter{Tenant: storetest.Tenant, State: bridge.StatePending})
		}},
		{"counts", func(s storetest.Store) (any, error) { return s.CountByState(ctx) }},
		{"messages of q2", func(s storetest.Store) (any, error) { return s.Messages(ctx, 2) }},
		{"threads of build", func(s storetest.Store) (any, error) { return s.JobThreads(ctx, storetest.Tenant, "build") }},
		{"next due", func(s storetest.Store) (any, error) {
			at, ok, err := s.NextDue(ctx)
			return []any{at, ok}, err
		}},
		{"due steps", func(s storetest.Store) (any, error) { return s.DueSteps(ctx, storetest.T0.Add(5*time.Hour), 10) }},
		{"snoozes of q2", func(s storetest.Store) (any, error) { return s.Snoozes(ctx, 2, storetest.T0) }},
		{"questions to measure", func(s storetest.Store) (any, error) {
			return s.ClarifyQuestions(ctx, storetest.Tenant, storetest.T0.Add(-time.Hour))
		}},
		{"proposal p-1", func(s storetest.Store) (any, error) { return s.FindProposal(ctx, storetest.Tenant, "p-1") }},
		{"proposal of q3", func(s storetest.Store) (any, error) { return s.ProposalOf(ctx, 3) }},
		{"log of build", func(s storetest.Store) (any, error) {
			es, err := s.JobLog(ctx, storetest.Tenant, "build")
			for i := range es {
				es[i].ID = 0
			}
			return es, err
		}},
		{"unsent", func(s storetest.Store) (any, error) {
			rows, err := s.Unsent(ctx, 0, 100, time.Time{})
			var out []string
			for _, r := range rows {
				out = append(out, r.Subject+" "+string(r.Data))
			}
			return out, err
		}},
	} {
		a, errA := q.read(sq)
		b, errB := q.read(js)
		if errA != nil || errB != nil {
			t.Errorf("%s: SQLite error %v, JetStream error %v", q.what, errA, errB)
			continue
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s differ:\nSQLite    %+v\nJetStream %+v", q.what, a, b)
		}
	}

	// The decided attempt stays decided: deciding it again is a duplicate.
	rec, err := js.Get(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	again := storetest.Answer(rec, storetest.T0.Add(time.Hour))
	again.AttemptID = "slack-1"
	if err := js.Settle(ctx, again); !errors.Is(err, record.ErrDuplicate) {
		t.Errorf("an attempt decided before the move = %v, want ErrDuplicate", err)
	}
	// New questions take ids after the imported ones.
	next := storetest.Ask(t, js, storetest.NewQuestion("build", "q4", 1))
	if next.ID != 4 {
		t.Errorf("the first question after the move has id %d, want 4", next.ID)
	}
	// A second move into the same record is refused.
	if _, err := jsstore.NewImporter(ctx, js); !errors.Is(err, jsstore.ErrNotEmpty) {
		t.Errorf("a second import = %v, want ErrNotEmpty", err)
	}
}
