package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// TestJobAuditReadsEveryVersionOfTheJob: the trace's source for questions'
// transitions holds every question and task version of the job, and
// nothing of another job.
func TestJobAuditReadsEveryVersionOfTheJob(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ask.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.UnixMilli(1_700_000_000_000).UTC()
	ask := func(job, qid string, version int64, at time.Time) {
		t.Helper()
		res, err := s.Ask(ctx, record.NewQuestion{Key: record.Key{Tenant: "acme", JobID: job, QuestionID: qid, TaskVersion: version},
			Kind: bridge.KindQuestion, Body: []byte(`{}`), AskedAt: at, Deadline: at.Add(time.Hour)})
		if err != nil || res.Status != record.Asked {
			t.Fatalf("ask %s/%s@%d: %v %+v", job, qid, version, err, res)
		}
	}
	ask("job-1", "q-1", 1, at)
	ask("job-2", "q-1", 1, at)
	ask("job-1", "q-1", 2, at.Add(time.Second))
	got, err := s.JobAudit(ctx, "acme", "job-1")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		qid      string
		version  int64
		from, to string
		reason   string
	}
	want := []row{
		{"q-1", 1, "", bridge.StatePending, "asked"},
		{"q-1", 1, bridge.StatePending, bridge.StateSuperseded, "superseded by task version 2"},
		{"q-1", 2, "", bridge.StatePending, "asked"},
	}
	if len(got) != len(want) {
		t.Fatalf("job-1's audit = %+v", got)
	}
	for i, w := range want {
		g := got[i]
		if (row{g.QuestionID, g.TaskVersion, g.From, g.To, g.Reason}) != w {
			t.Errorf("entry %d = %+v, want %+v", i, g, w)
		}
	}
	if !got[1].At.Equal(at.Add(time.Second)) || got[0].Question == got[2].Question {
		t.Errorf("times or rows wrong: %+v", got)
	}
	qs, err := s.JobQuestions(ctx, "acme", "job-1")
	if err != nil || len(qs) != 2 || qs[0].TaskVersion != 1 || qs[1].TaskVersion != 2 || qs[0].State != bridge.StateSuperseded {
		t.Fatalf("job-1's questions = %+v, %v", qs, err)
	}
}
