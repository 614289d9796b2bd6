package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/store/jsstore"
	"github.com/askbridge/askbridge/store/record"
)

// BenchmarkStats measures a stats request (ask.v1.api.stats, as
// `askbridge stats` sends it) and a /metrics scrape on a SQLite record of
// 100,000 questions over the last 30 days, two a job: a third answered, a
// few declined or failed on their timeout, a gate refusal for one job in
// ten and an allowed decision for every job. The default 7-day window
// holds about 23,000 of them; stats-90d asks for all of them.
func BenchmarkStats(b *testing.B) {
	for _, name := range []string{"sqlite", "jetstream"} {
		b.Run(name, func(b *testing.B) { benchStats(b, name) })
	}
}

func benchStats(b *testing.B, backend string) {
	ctx := context.Background()
	n, err := bridge.ConnectNATS(ctx, bridge.NATSOptions{StoreDir: filepath.Join(b.TempDir(), "nats"), Listen: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	var st record.Backend
	switch backend {
	case "sqlite":
		s, err := store.Open(ctx, filepath.Join(b.TempDir(), "askbridge.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		st = s
	default:
		s, err := jsstore.Open(ctx, n.Conn, jsstore.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		st = s
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	seedStats(b, st, now.Add(-30*24*time.Hour), 100_000)
	reg := prometheus.NewRegistry()
	r, err := New(Options{NATS: n, Store: st, Registerer: reg, Logger: slog.New(slog.DiscardHandler),
		Clarify: ClarifyMetrics{Agents: []string{"support", "billing"}}})
	if err != nil {
		b.Fatal(err)
	}
	// stats is the default 7-day window; stats-90d holds every question.
	for _, c := range []struct {
		name, body string
		lo, hi     int64
	}{{"stats", `{}`, 23_000, 23_700}, {"stats-90d", `{"since":"90d"}`, 100_000, 100_000}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				reply, ok := r.apiStats(ctx, []byte(c.body)).(bridge.StatsReply)
				if !ok || reply.Error != "" || reply.Clarification == nil {
					b.Fatalf("stats: %+v", reply)
				}
				if asked := reply.Clarification.Total.Asked; asked < c.lo || asked > c.hi {
					b.Fatalf("stats: %d questions asked in the window", asked)
				}
			}
		})
	}
	b.Run("metrics", func(b *testing.B) {
		for range b.N {
			families, err := reg.Gather()
			if err != nil || len(families) == 0 {
				b.Fatalf("scrape: %d families, %v", len(families), err)
			}
		}
	})
}

// seedStats asks n questions from start on, evenly spread over the 30
// days after it, and settles and logs them as BenchmarkStats says.
func seedStats(b *testing.B, st record.Backend, start time.Time, n int) {
	ctx := context.Background()
	step := 30 * 24 * time.Hour / time.Duration(n)
	agents := []string{"support", "billing", "deploy"}
	var nqs []record.NewQuestion
	var ds []record.Decision
	var logs []record.GateWrite
	flush := func() {
		res, err := st.AskMany(ctx, nqs)
		if err != nil {
			b.Fatal(err)
		}
		for i, r := range res {
			if d := seedSettle(i, r.Record); d != nil {
				ds = append(ds, *d)
			}
		}
		if _, err := st.DecideEach(ctx, len(ds), func(i int, _ record.Lookup) (record.Decision, error) { return ds[i], nil }); err != nil {
			b.Fatal(err)
		}
		if err := st.GateCommit(ctx, logs); err != nil {
			b.Fatal(err)
		}
		nqs, ds, logs = nqs[:0], ds[:0], logs[:0]
	}
	for i := range n {
		job, at := fmt.Sprintf("job-%d", i/2), start.Add(time.Duration(i)*step)
		body, _ := json.Marshal(map[string]any{"question": "Which colour should the new landing page use for its main button?",
			"agent": agents[i/2%len(agents)], "missing_field": "colour", "choices": []string{"red", "blue", "green"},
			"context": "The design review left this open; the release is due on Friday."})
		nqs = append(nqs, record.NewQuestion{
			Key:  record.Key{Tenant: "acme", JobID: job, QuestionID: fmt.Sprintf("q-%d", i%2), TaskVersion: 1},
			Kind: bridge.KindQuestion, Body: body, AskedAt: at, Deadline: at.Add(4 * time.Hour),
		})
		if i%2 == 0 {
			logs = append(logs, record.GateWrite{Log: seedGateEntry(job, bridge.GateAllowed, at.Add(time.Second))})
			if i%20 == 0 {
				logs = append(logs, record.GateWrite{Log: seedGateEntry(job, bridge.GateBlockedByQuestion, at.Add(2*time.Second))})
			}
		}
		if len(nqs) == 100 { // a JetStream batch takes 1,000 keys
			flush()
		}
	}
	flush()
}

// seedSettle settles the i-th question of a batch: a third answered ten
// minutes after it was asked, one in twenty declined, one in fifty failed
// on its timeout, the rest pending.
func seedSettle(i int, rec *record.Record) *record.Decision {
	s := &record.Settlement{Question: rec.ID, At: rec.AskedAt.Add(10 * time.Minute)}
	switch {
	case i%3 == 0:
		s.State = bridge.StateAnswered
	case i%20 == 1:
		s.State = bridge.StateDeclined
	case i%50 == 2:
		s.State, s.Reason, s.At = bridge.StateFailed, "timed out", rec.Deadline // as the ladder ends it
	default:
		return nil
	}
	return &record.Decision{Settle: s}
}

func seedGateEntry(job, code string, at time.Time) record.LogEntry {
	return record.LogEntry{Tenant: "acme", JobID: job, Kind: record.LogGate, Body: json.RawMessage(`{"code":"` + code + `"}`), At: at}
}
