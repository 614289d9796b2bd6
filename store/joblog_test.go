package store

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"
)

func TestJobLogKeepsEntriesInOrderPerJob(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ask.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.UnixMilli(1_700_000_000_000).UTC()
	entries := []LogEntry{
		{Tenant: "acme", JobID: "job-1", Kind: LogGate, Body: json.RawMessage(`{"tool":"send_report","code":"allowed"}`), At: at},
		{Tenant: "acme", JobID: "job-2", Kind: LogNotice, At: at},
		{Tenant: "acme", JobID: "job-1", Kind: LogRefused, QuestionID: "q-1", Body: json.RawMessage(`{"reason":"stale"}`), At: at.Add(time.Second)},
	}
	if err := s.AppendLog(ctx, entries); err != nil {
		t.Fatal(err)
	}
	got, err := s.JobLog(ctx, "acme", "job-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Kind != LogGate || got[1].Kind != LogRefused || got[1].QuestionID != "q-1" {
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
