package store

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/askbridge/askbridge/store/record"
)

func TestRecordNoticeOnceByID(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ask.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.UnixMilli(1_700_000_000_000).UTC()
	entry := func(id string) record.LogEntry {
		return record.LogEntry{Tenant: "acme", JobID: "job-1", Body: json.RawMessage(`{"notice_id":"` + id + `","code":"ACCESS_DENIED"}`), At: at}
	}
	msg := []record.Message{{Subject: "ask.v1.event.acme.job-1", Data: []byte(`{"type":"notice"}`)}}
	if err := s.RecordNotice(ctx, entry("n-1"), "n-1", msg); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordNotice(ctx, entry("n-1"), "n-1", msg); !errors.Is(err, record.ErrDuplicate) {
		t.Fatalf("the same notice again: err %v, want ErrDuplicate", err)
	}
	if err := s.RecordNotice(ctx, entry("n-2"), "n-2", msg); err != nil {
		t.Fatal(err)
	}
	log, err := s.JobLog(ctx, "acme", "job-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 || log[0].Kind != record.LogNotice || log[1].Kind != record.LogNotice {
		t.Fatalf("job log %+v", log)
	}
	if n, _ := s.OutboxBacklog(ctx); n != 2 {
		t.Fatalf("outbox holds %d messages, want 2", n)
	}
}
