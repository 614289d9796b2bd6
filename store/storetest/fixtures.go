package storetest

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// T0 is the suite's fixed "now": every time in it is explicit.
var T0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Tenant is the tenant the fixtures ask in.
const Tenant = "acme"

var ctx = context.Background()

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// NewQuestion is a pending question of job at version, asked at T0, with a
// ladder (answerers at T0+1h, timeout at T0+4h), one outbox message
// ("ask.v1.event.acme.<job>" "asked <qid>") and a Supersede that announces
// "superseded <qid>" on "ask.v1.resume.acme.<job>".
func NewQuestion(job, qid string, version int64) record.NewQuestion {
	return record.NewQuestion{
		Key:      record.Key{Tenant: Tenant, JobID: job, QuestionID: qid, TaskVersion: version},
		Kind:     bridge.KindQuestion,
		Body:     []byte(`{"question":"Which?"}`),
		AskedAt:  T0,
		Deadline: T0.Add(4 * time.Hour),
		Steps: []record.Step{
			{Index: 0, Target: bridge.TargetAnswerers, Due: T0.Add(time.Hour)},
			{Index: 1, Target: record.StepTimeout, Due: T0.Add(4 * time.Hour)},
		},
		Outbox: []record.Message{{Subject: "ask.v1.event.acme." + job, Data: []byte("asked " + qid)}},
		Supersede: func(old *record.Record) []record.Message {
			return []record.Message{{Subject: "ask.v1.resume.acme." + job, Data: []byte("superseded " + old.QuestionID)}}
		},
	}
}

// AskAll records nqs in one AskMany and fails the test on an error.
func AskAll(t *testing.T, s Store, nqs ...record.NewQuestion) []*record.AskResult {
	t.Helper()
	res, err := s.AskMany(ctx, nqs)
	if err != nil {
		t.Fatalf("AskMany: %v", err)
	}
	if len(res) != len(nqs) {
		t.Fatalf("AskMany: %d results for %d questions", len(res), len(nqs))
	}
	return res
}

// Ask records nq, which must be Asked, and returns its record.
func Ask(t *testing.T, s Store, nq record.NewQuestion) *record.Record {
	t.Helper()
	res := AskAll(t, s, nq)[0]
	if res.Status != record.Asked || res.Record == nil {
		t.Fatalf("ask %s: status %d, record %v; want Asked", nq.Key, res.Status, res.Record)
	}
	return res.Record
}

// Answer is a settlement of rec answering "yes" by alice on Slack at at.
func Answer(rec *record.Record, at time.Time) record.Settlement {
	return record.Settlement{
		Question:   rec.ID,
		State:      bridge.StateAnswered,
		Action:     bridge.ActionAnswer,
		AnswerRaw:  []byte(`"yes"`),
		Answer:     []byte(`"yes"`),
		AnswerText: "yes",
		By:         "slack:alice",
		ByName:     "Alice",
		Via:        "slack",
		At:         at,
	}
}

// Settle settles rec as answered at at, and fails the test on an error.
func Settle(t *testing.T, s Store, rec *record.Record, at time.Time) {
	t.Helper()
	if err := s.Settle(ctx, Answer(rec, at)); err != nil {
		t.Fatalf("settle %s: %v", rec.Key, err)
	}
}

// Get reads question id, failing the test if it is not there.
func Get(t *testing.T, s Store, id int64) *record.Record {
	t.Helper()
	rec, err := s.Get(ctx, id)
	if err != nil {
		t.Fatalf("get %d: %v", id, err)
	}
	return rec
}

// Unsent is every unsent outbox message, in order, as "subject data".
func Unsent(t *testing.T, s Store) []string {
	t.Helper()
	rows, err := s.Unsent(ctx, 0, 1000, time.Time{})
	if err != nil {
		t.Fatalf("unsent: %v", err)
	}
	out := []string{}
	for _, r := range rows {
		out = append(out, r.Subject+" "+string(r.Data))
	}
	return out
}

// NewApproval is NewQuestion as an approval asking for proposal id (action
// "refund", arguments {"order":1}, idempotency key "ik_<id>").
func NewApproval(job, qid string, version int64, id string) record.NewQuestion {
	nq := NewQuestion(job, qid, version)
	nq.Kind = bridge.KindApproval
	nq.Proposal = &record.NewProposal{ID: id, Action: "refund", Arguments: []byte(`{"order":1}`),
		ExpiresAt: T0.Add(24 * time.Hour), IdempotencyKey: "ik_" + id}
	return nq
}

// Proposal reads proposal id of the fixtures' tenant, failing the test if
// it is not there.
func Proposal(t *testing.T, s Store, id string) *record.Proposal {
	t.Helper()
	p, err := s.FindProposal(ctx, Tenant, id)
	if err != nil {
		t.Fatalf("proposal %s: %v", id, err)
	}
	return p
}

// approvers are the identities of approvals, in order.
func approvers(as []bridge.Approval) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.By)
	}
	return out
}

// logOf is a job's trail as "kind question body" lines.
func logOf(t *testing.T, s Store, job string) []string {
	t.Helper()
	entries, err := s.JobLog(ctx, Tenant, job)
	if err != nil {
		t.Fatalf("job log of %s: %v", job, err)
	}
	out := []string{}
	for _, e := range entries {
		out = append(out, e.Kind+" "+e.QuestionID+" "+string(e.Body))
	}
	return out
}
