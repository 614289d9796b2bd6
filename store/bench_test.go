package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// BenchmarkDecideBatch measures the store's share of the answer path: one
// answer read and settled per op, 64 to a transaction (group commit), the
// batch's questions prefetched as the runtime does.
func BenchmarkDecideBatch(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "askbridge.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	body := []byte(`{"question":"Which colour?","choices":["red","blue"],"fields":[]}`)
	var nqs []record.NewQuestion
	for i := range b.N {
		nq := newQ(fmt.Sprintf("job-%d", i), "q", 1)
		nq.Body = body
		nq.Steps = append(nq.Steps, record.Step{Index: 2, Target: bridge.TargetAdmins, Due: t0.Add(2 * time.Hour)}, record.Step{Index: 3, Target: bridge.TargetOwner, Due: t0.Add(3 * time.Hour)})
		nqs = append(nqs, nq)
		if len(nqs) == 500 || i == b.N-1 {
			if _, err := s.AskMany(ctx, nqs); err != nil {
				b.Fatal(err)
			}
			nqs = nqs[:0]
		}
	}
	event := make([]byte, 600)
	b.ResetTimer()
	for lo := 0; lo < b.N; lo += 64 {
		n := min(64, b.N-lo)
		keys := make([]record.Key, n)
		for i := range keys {
			keys[i] = record.Key{Tenant: "acme", JobID: fmt.Sprintf("job-%d", lo+i), QuestionID: "q", TaskVersion: 1}
		}
		errs, err := s.DecideEach(ctx, n, func(i int, l record.Lookup) (record.Decision, error) {
			if i == 0 {
				if err := l.Prefetch(ctx, keys); err != nil {
					return record.Decision{}, err
				}
			}
			a, err := l.FindAnswerable(ctx, keys[i])
			if err != nil {
				return record.Decision{}, err
			}
			return record.Decision{Settle: &record.Settlement{Question: a.ID, State: bridge.StateAnswered, Action: bridge.ActionAnswer,
				AnswerRaw: []byte(`"blue"`), Answer: []byte(`"blue"`), AnswerText: "blue", By: "slack:U1", Via: "slack",
				Text: "The answer: blue", At: t0, AttemptID: fmt.Sprintf("a-%d", lo+i),
				Outbox: []record.Message{{Subject: "ask.v1.event.acme.job", Data: event}, {Subject: "ask.v1.resume.acme.job", Data: event}}}}, nil
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range errs {
			if e != nil {
				b.Fatal(e)
			}
		}
	}
}

// BenchmarkOutboxMsgID is the Nats-Msg-Id the relay names each outbox row
// with, for a real database instance id and a row id of a busy store.
func BenchmarkOutboxMsgID(b *testing.B) {
	row := record.OutboxRow{ID: 123456789, Instance: "6f1c2a9e4b7d4e0f8a3b5c7d9e1f2a3b"}
	b.ReportAllocs()
	for b.Loop() {
		if row.MsgID() == "" {
			b.Fatal("empty")
		}
	}
}

// BenchmarkUnsent is the outbox relay's read: one op is a page of 256
// rows of 600 bytes (an answer writes two, its event and its resume).
func BenchmarkUnsent(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "askbridge.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	event := make([]byte, 600)
	var nqs []record.NewQuestion
	for i := range 2560 {
		nq := newQ(fmt.Sprintf("job-%d", i), "q", 1)
		nq.Outbox = []record.Message{{Subject: "ask.v1.event.acme.job", Data: event}}
		nqs = append(nqs, nq)
		if len(nqs) == 500 || i == 2559 {
			if _, err := s.AskMany(ctx, nqs); err != nil {
				b.Fatal(err)
			}
			nqs = nqs[:0]
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		rows, err := s.Unsent(ctx, 0, 256, time.Time{})
		if err != nil || len(rows) != 256 {
			b.Fatal(len(rows), err)
		}
	}
}

// BenchmarkDecideRefusals measures refused attempts, 64 to a transaction,
// with and without the job log entry each writes for the trace.
func BenchmarkDecideRefusals(b *testing.B) {
	for _, withLog := range []bool{false, true} {
		b.Run(fmt.Sprintf("log=%v", withLog), func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "askbridge.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			event := make([]byte, 600)
			body := []byte(`{"by":"slack:U1","action":"answer","reason":"invalid_answer","text":"answer: must be one of: red, blue","attempt_id":"slack-1","task_version":1}`)
			b.ResetTimer()
			for lo := 0; lo < b.N; lo += 64 {
				n := min(64, b.N-lo)
				errs, err := s.DecideEach(ctx, n, func(i int, _ record.Lookup) (record.Decision, error) {
					r := &record.Refusal{AttemptID: fmt.Sprintf("a-%d", lo+i), At: t0,
						Outbox: []record.Message{{Subject: "ask.v1.event.acme.job", Data: event}}}
					if withLog {
						r.Log = []record.LogEntry{{Tenant: "acme", JobID: "job", Kind: record.LogRefused, QuestionID: "q", Body: body, At: t0}}
					}
					return record.Decision{Refuse: r}, nil
				})
				if err != nil {
					b.Fatal(err)
				}
				for _, e := range errs {
					if e != nil {
						b.Fatal(e)
					}
				}
			}
		})
	}
}
