package store

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/askbridge/askbridge/store/record"
)

func TestJobLogKeepsEntriesInOrderPerJob(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ask.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.UnixMilli(1_700_000_000_000).UTC()
	entries := []record.LogEntry{
		{Tenant: "acme", JobID: "job-1", Kind: record.LogGate, Body: json.RawMessage(`{"tool":"send_report","code":"allowed"}`), At: at},
		{Tenant: "acme", JobID: "job-2", Kind: record.LogNotice, At: at},
		{Tenant: "acme", JobID: "job-1", Kind: record.LogRefused, QuestionID: "q-1", Body: json.RawMessage(`{"reason":"stale"}`), At: at.Add(time.Second)},
	}
	if err := s.AppendLog(ctx, entries); err != nil {
		t.Fatal(err)
	}
	got, err := s.JobLog(ctx, "acme", "job-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Kind != record.LogGate || got[1].Kind != record.LogRefused || got[1].QuestionID != "q-1" {
		t.Fatalf("job-1's log = %+v", got)
	}
	if string(got[0].Body) != `{"tool":"send_report","code":"allowed"}` || !got[1].At.Equal(at.Add(time.Second)) {
		t.Fatalf("entries changed on the way: %+v", got)
	}
	other, err := s.JobLog(ctx, "acme", "job-2")
	if err != nil {
		t.Fatal(err)
	}
	if len(other) != 1 || string(other[0].Body) != "{}" {
		t.Fatalf("job-2's log = %+v, want one entry with an empty body", other)
	}
}

func TestPruneGateLogDeletesOnlyOldGateDecisions(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ask.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.UnixMilli(1_700_000_000_000).UTC()
	entry := func(kind string, at time.Time) record.LogEntry {
		return record.LogEntry{Tenant: "acme", JobID: "job-1", Kind: kind, At: at}
	}
	// Old: three gate decisions around an approval; new: a gate decision
	// and a notice.
	if err := s.AppendLog(ctx, []record.LogEntry{entry(record.LogGate, t0), entry(record.LogApproval, t0.Add(time.Second)), entry(record.LogGate, t0.Add(2*time.Second)),
		entry(record.LogGate, t0.Add(3*time.Second)), entry(record.LogGate, t0.Add(time.Hour)), entry(record.LogNotice, t0.Add(time.Hour))}); err != nil {
		t.Fatal(err)
	}
	kinds := func() []string {
		t.Helper()
		got, err := s.JobLog(ctx, "acme", "job-1")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range got {
			out = append(out, e.Kind+"@"+e.At.Sub(t0).String())
		}
		return out
	}
	if n, err := s.PruneGateLog(ctx, t0.Add(time.Minute)); err != nil || n != 3 {
		t.Fatalf("PruneGateLog = %d, %v; want 3 old gate decisions deleted", n, err)
	}
	if got, want := kinds(), []string{"approval@1s", "gate@1h0m0s", "notice@1h0m0s"}; !slices.Equal(got, want) {
		t.Fatalf("after the prune: %v, want %v", got, want)
	}
	// A later prune starts where this one stopped and takes what aged since.
	if err := s.AppendLog(ctx, []record.LogEntry{entry(record.LogGate, t0.Add(2*time.Hour))}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneGateLog(ctx, t0.Add(90*time.Minute)); err != nil || n != 1 {
		t.Fatalf("second PruneGateLog = %d, %v; want the gate decision at 1h", n, err)
	}
	if got, want := kinds(), []string{"approval@1s", "notice@1h0m0s", "gate@2h0m0s"}; !slices.Equal(got, want) {
		t.Fatalf("after the second prune: %v, want %v", got, want)
	}
	if n, err := s.PruneGateLog(ctx, t0.Add(90*time.Minute)); err != nil || n != 0 {
		t.Fatalf("a prune with nothing old = %d, %v", n, err)
	}
}
