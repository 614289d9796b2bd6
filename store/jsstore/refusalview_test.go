package jsstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nuid"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// refusalAt is a gate refusal of code for job at at.
func refusalAt(tenant, job, code string, at time.Time) record.GateWrite {
	return record.GateWrite{Log: record.LogEntry{Tenant: tenant, JobID: job, Kind: record.LogGate,
		Body: json.RawMessage(`{"code":"` + code + `"}`), At: at}}
}

// refusalsOf shows what GateDecisions reads on s in [since, until).
func refusalsOf(t *testing.T, s *Store, tenant string, since, until time.Time) []string {
	t.Helper()
	ds, err := s.GateDecisions(context.Background(), tenant, since, until)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%s/%s %s %s ×%d", d.Tenant, d.JobID, d.Agent, d.Code, d.Count))
	}
	return out
}

// TestRefusalViewFollowsAnotherReplica: a replica counts the refusals
// written before its view started and those another replica writes after,
// in the window asked and of the tenant asked, and not the gate's allowed
// decisions.
func TestRefusalViewFollowsAnotherReplica(t *testing.T) {
	t.Parallel()
	open := replicaServer(t)
	a := open()
	ctx := context.Background()
	mustAsk(t, a, withAgent("job-1", "billing", "order_id"))
	write := func(ws ...record.GateWrite) {
		t.Helper()
		if err := a.GateCommit(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	write(refusalAt("acme", "job-1", bridge.GateBlockedByQuestion, t0),
		refusalAt("acme", "job-1", bridge.GateAllowed, t0.Add(time.Second)),
		refusalAt("acme", "job-1", bridge.GateBlockedByQuestion, t0.Add(2*time.Second)))
	b := open()
	day := t0.Add(24 * time.Hour)
	want := []string{"acme/job-1 billing " + bridge.GateBlockedByQuestion + " ×2"}
	if got := refusalsOf(t, b, "", t0, day); !slices.Equal(got, want) {
		t.Errorf("replica b reads %q, want %q", got, want)
	}
	write(refusalAt("acme", "job-2", bridge.GateBlockedByQuestion, t0.Add(time.Hour)),
		refusalAt("other", "job-1", bridge.GateBlockedByQuestion, t0.Add(time.Hour)),
		refusalAt("acme", "job-1", bridge.GateBlockedByQuestion, day))
	want = append(want, "acme/job-2  "+bridge.GateBlockedByQuestion+" ×1", "other/job-1  "+bridge.GateBlockedByQuestion+" ×1")
	if got := refusalsOf(t, b, "", t0, day); !slices.Equal(got, want) {
		t.Errorf("after more refusals replica b reads %q, want %q", got, want)
	}
	later := []string{"acme/job-1 billing " + bridge.GateBlockedByQuestion + " ×1", want[1]}
	if got := refusalsOf(t, b, "acme", t0.Add(time.Second), day); !slices.Equal(got, later) {
		t.Errorf("acme's refusals from t0+1s: %q, want %q", got, later)
	}
}

// TestRefusalViewLetsGoWhenTheBucketDoes: a refusal stops counting once
// its key's TTL has run out, when the bucket removes it without a word to
// the watch, and not before; one whose own time is older than the gate's
// retention (migrated from an older record) does not count, as SQLite
// prunes it.
func TestRefusalViewLetsGoWhenTheBucketDoes(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	now := time.Now().Truncate(time.Millisecond)
	old := now.Add(-gateLogTTL - time.Hour)
	err := s.GateCommit(context.Background(), []record.GateWrite{refusalAt("acme", "job-1", bridge.GateBlockedByQuestion, now),
		refusalAt("acme", "job-old", bridge.GateBlockedByQuestion, old)})
	if err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	if got := refusalsOf(t, s, "", old.Add(-time.Hour), old.Add(time.Hour)); len(got) != 0 {
		t.Errorf("a refusal of %v, past the retention: %q, want none", old, got)
	}
	at := func(clock time.Time) []string {
		s.refusals.mu.Lock()
		s.refusals.now = func() time.Time { return clock }
		s.refusals.mu.Unlock()
		return refusalsOf(t, s, "", now, now.Add(time.Hour))
	}
	want := []string{"acme/job-1  " + bridge.GateBlockedByQuestion + " ×1"}
	if got := at(written.Add(gateLogTTL - time.Minute)); !slices.Equal(got, want) {
		t.Errorf("a minute before its TTL ends: %q, want %q", got, want)
	}
	if got := at(written.Add(gateLogTTL + time.Minute)); len(got) != 0 {
		t.Errorf("a minute after its TTL ends: %q, want none", got)
	}
}

// TestRefusalViewReadsKeysWrittenWithoutItsMark: refusals written before
// batches wrote the refusals' mark are read by a replica that starts on
// them, and one written after is too.
func TestRefusalViewReadsKeysWrittenWithoutItsMark(t *testing.T) {
	t.Parallel()
	open := replicaServer(t)
	a := open()
	ctx := context.Background()
	for _, job := range []string{"job-1", "job-2"} {
		doc := fmt.Sprintf(`{"k":%q,"b":{"code":%q},"at":%d}`, record.LogGate, bridge.GateBlockedByQuestion, t0.UnixMilli())
		if _, err := a.kv.Put(ctx, keyLog(logDay(t0), logClassRefusal, "acme", job, nuid.Next()), []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	b := open()
	want := []string{"acme/job-1  " + bridge.GateBlockedByQuestion + " ×1", "acme/job-2  " + bridge.GateBlockedByQuestion + " ×1"}
	if got := refusalsOf(t, b, "", t0, t0.Add(time.Hour)); !slices.Equal(got, want) {
		t.Errorf("replica b reads %q, want %q", got, want)
	}
	if err := a.GateCommit(ctx, []record.GateWrite{refusalAt("acme", "job-3", bridge.GateBlockedByQuestion, t0)}); err != nil {
		t.Fatal(err)
	}
	want = append(want, "acme/job-3  "+bridge.GateBlockedByQuestion+" ×1")
	if got := refusalsOf(t, b, "", t0, t0.Add(time.Hour)); !slices.Equal(got, want) {
		t.Errorf("after a refusal with its mark replica b reads %q, want %q", got, want)
	}
}

// TestRefusalsWriteTheirMarkLast: a batch writing a refusal writes the
// refusals' mark after it, which is what a read of the view waits for; a
// batch of allowed decisions does not.
func TestRefusalsWriteTheirMarkLast(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	revs := func() (refusal, mark uint64) {
		t.Helper()
		var err error
		if refusal, err = s.lastRev(ctx, "log.*."+logClassRefusal+".*.*.*"); err != nil {
			t.Fatal(err)
		}
		if mark, err = s.lastRev(ctx, keyRefusalMark); err != nil {
			t.Fatal(err)
		}
		return refusal, mark
	}
	err := s.GateCommit(ctx, []record.GateWrite{refusalAt("acme", "job-1", bridge.GateBlockedByQuestion, t0),
		refusalAt("acme", "job-1", bridge.GateAllowed, t0)})
	if err != nil {
		t.Fatal(err)
	}
	refused, mark := revs()
	if refused == 0 || mark != refused+2 {
		t.Fatalf("the refusal at revision %d, the mark at %d; want the mark last in the batch, at %d", refused, mark, refused+2)
	}
	if err := s.GateCommit(ctx, []record.GateWrite{refusalAt("acme", "job-1", bridge.GateAllowed, t0)}); err != nil {
		t.Fatal(err)
	}
	if _, again := revs(); again != mark {
		t.Errorf("an allowed decision moved the refusals' mark from %d to %d", mark, again)
	}
}
