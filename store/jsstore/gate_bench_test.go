package jsstore

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/askbridge/askbridge/store/record"
	"github.com/askbridge/askbridge/store/storetest"
)

// BenchmarkGateCommit writes the gate's decisions in batches of 512, as
// the runtime's gate writer does under load; decisions/s is the measure.
func BenchmarkGateCommit(b *testing.B) {
	ctx := context.Background()
	s := openTest(b)
	batch := make([]record.GateWrite, 512)
	for i := range batch {
		batch[i] = record.GateWrite{Log: record.LogEntry{Tenant: "acme", JobID: "job-" + id(int64(i%50)), Kind: record.LogGate,
			Body: json.RawMessage(`{"tool":"send_report","code":"allowed","task_version":1}`), At: storetest.T0}}
	}
	b.ResetTimer()
	for b.Loop() {
		if err := s.GateCommit(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "decisions/s")
}

// BenchmarkGateJob reads a job with two pending questions, as the gate
// does for every request.
func BenchmarkGateJob(b *testing.B) {
	ctx := context.Background()
	s := openTest(b)
	for _, q := range []string{"q-1", "q-2"} {
		if res, err := s.AskMany(ctx, []record.NewQuestion{storetest.NewQuestion("job-1", q, 1)}); err != nil || res[0].Status != record.Asked {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		j, err := s.GateJob(ctx, storetest.Tenant, "job-1")
		if err != nil || len(j.Pending) != 2 {
			b.Fatal(j, err)
		}
	}
}
