package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// The job log and the measures read from it; part of RunSafety.

// testJobLog: a job's trail in the order it was written, whoever wrote
// it, and nothing of other jobs.
func testJobLog(t *testing.T, s Store) {
	q := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	at := T0.Add(time.Second)
	if err := s.GateCommit(ctx, []record.GateWrite{
		{Log: record.LogEntry{Tenant: Tenant, JobID: "job-1", Kind: record.LogGate, Body: json.RawMessage(`{"tool":"send_report","code":"allowed"}`), At: at}},
		{Log: record.LogEntry{Tenant: Tenant, JobID: "job-2", Kind: record.LogGate, At: at}},
		{Log: record.LogEntry{Tenant: "beta", JobID: "job-1", Kind: record.LogGate, At: at}},
	}); err != nil {
		t.Fatal(err)
	}
	wantOutcomes(t, decideAll(t, s, record.Decision{Refuse: &record.Refusal{Question: q.ID, At: T0,
		Log: []record.LogEntry{{Tenant: Tenant, JobID: "job-1", Kind: record.LogRefused, QuestionID: "q-1", Body: json.RawMessage(`{"reason":"stale"}`), At: T0}}}}), nil)
	if err := s.RecordNotice(ctx, record.LogEntry{Tenant: Tenant, JobID: "job-1", Body: json.RawMessage(`{"notice_id":"n-1"}`), At: at}, "n-1", nil); err != nil {
		t.Fatal(err)
	}
	entries, err := s.JobLog(ctx, Tenant, "job-1")
	if err != nil || len(entries) != 3 {
		t.Fatalf("job-1's log = %+v, %v", entries, err)
	}
	want := []string{`gate  {"tool":"send_report","code":"allowed"}`, `refused q-1 {"reason":"stale"}`, `notice  {"notice_id":"n-1"}`}
	if got := logOf(t, s, "job-1"); !slices.Equal(got, want) {
		t.Fatalf("job-1's log = %q, want %q", got, want)
	}
	for i, e := range entries {
		if e.Tenant != Tenant || e.JobID != "job-1" || (i > 0 && e.ID <= entries[i-1].ID) {
			t.Fatalf("entry %d = %+v", i, e)
		}
	}
	// Kept as written, though written out of time order.
	if !entries[0].At.Equal(at) || !entries[1].At.Equal(T0) {
		t.Fatalf("times changed on the way: %+v", entries)
	}
	if got := logOf(t, s, "job-2"); !slices.Equal(got, []string{"gate  {}"}) {
		t.Fatalf("job-2's log = %q, want one entry with an empty body", got)
	}
	if got := logOf(t, s, "job-none"); len(got) != 0 {
		t.Fatalf("an unknown job's log = %q", got)
	}
}

// testRecordNotice: a notice goes to its job's trail with its messages,
// once per notice id and job.
func testRecordNotice(t *testing.T, s Store) {
	entry := func(job, id string) record.LogEntry {
		return record.LogEntry{Tenant: Tenant, JobID: job, Kind: record.LogGate, // the store makes it a notice
			Body: json.RawMessage(`{"notice_id":"` + id + `","code":"ACCESS_DENIED"}`), At: T0}
	}
	msg := func(job, id string) []record.Message {
		return []record.Message{{Subject: "ask.v1.event.acme." + job, Data: []byte("notice " + id)}}
	}
	if err := s.RecordNotice(ctx, entry("job-1", "n-1"), "n-1", msg("job-1", "n-1")); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordNotice(ctx, entry("job-1", "n-1"), "n-1", msg("job-1", "n-1")); !errors.Is(err, record.ErrDuplicate) {
		t.Fatalf("the same notice again: %v, want ErrDuplicate", err)
	}
	if err := s.RecordNotice(ctx, entry("job-1", "n-2"), "n-2", msg("job-1", "n-2")); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordNotice(ctx, entry("job-2", "n-1"), "n-1", msg("job-2", "n-1")); err != nil {
		t.Fatalf("another job's notice of the same id: %v", err)
	}
	want := []string{`notice  {"notice_id":"n-1","code":"ACCESS_DENIED"}`, `notice  {"notice_id":"n-2","code":"ACCESS_DENIED"}`}
	if got := logOf(t, s, "job-1"); !slices.Equal(got, want) {
		t.Fatalf("job-1's log = %q, want %q", got, want)
	}
	wantOut := []string{"ask.v1.event.acme.job-1 notice n-1", "ask.v1.event.acme.job-1 notice n-2", "ask.v1.event.acme.job-2 notice n-1"}
	if got := Unsent(t, s); !slices.Equal(got, wantOut) {
		t.Fatalf("outbox = %q, want %q", got, wantOut)
	}
}

// logAt writes entries of kinds at offsets from T0 to job-1's trail.
func logAt(t *testing.T, s Store, entries ...record.LogEntry) {
	t.Helper()
	var batch []record.GateWrite
	for _, e := range entries {
		batch = append(batch, record.GateWrite{Log: e})
	}
	if err := s.GateCommit(ctx, batch); err != nil {
		t.Fatal(err)
	}
}

// GateLogExpiry is a store whose gate decisions go on their own once they
// are as old as the runtime keeps them (key TTLs in JetStream), so that
// its PruneGateLog has nothing to delete. Its own tests show them go.
type GateLogExpiry interface {
	GateLogExpiry() time.Duration
}

// testPruneGateLog: only the gate's decisions written before the cutoff
// go; the trail's other entries stay.
func testPruneGateLog(t *testing.T, s Store) {
	entry := func(kind string, at time.Duration) record.LogEntry {
		return record.LogEntry{Tenant: Tenant, JobID: "job-1", Kind: kind, At: T0.Add(at)}
	}
	kinds := func() []string {
		t.Helper()
		got, err := s.JobLog(ctx, Tenant, "job-1")
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, e := range got {
			out = append(out, e.Kind+"@"+e.At.Sub(T0).String())
		}
		return out
	}
	logAt(t, s, entry(record.LogGate, 0), entry(record.LogApproval, time.Second), entry(record.LogGate, 2*time.Second),
		entry(record.LogGate, 3*time.Second), entry(record.LogGate, time.Hour), entry(record.LogNotice, time.Hour))
	if e, ok := s.(GateLogExpiry); ok {
		// The runtime keeps gate decisions 30 days (runtime/prune.go).
		if d := e.GateLogExpiry(); d != 30*24*time.Hour {
			t.Fatalf("gate decisions expire after %v, want the runtime's 30 days", d)
		}
		if n, err := s.PruneGateLog(ctx, T0.Add(time.Minute)); err != nil || n != 0 {
			t.Fatalf("PruneGateLog of a store whose gate decisions expire = %d, %v; want 0", n, err)
		}
		want := []string{"gate@0s", "approval@1s", "gate@2s", "gate@3s", "gate@1h0m0s", "notice@1h0m0s"}
		if got := kinds(); !slices.Equal(got, want) {
			t.Fatalf("after the prune: %v, want %v", got, want)
		}
		return
	}
	if n, err := s.PruneGateLog(ctx, T0.Add(time.Minute)); err != nil || n != 3 {
		t.Fatalf("PruneGateLog = %d, %v; want the 3 old gate decisions", n, err)
	}
	if got, want := kinds(), []string{"approval@1s", "gate@1h0m0s", "notice@1h0m0s"}; !slices.Equal(got, want) {
		t.Fatalf("after the prune: %v, want %v", got, want)
	}
	logAt(t, s, entry(record.LogGate, 2*time.Hour))
	if n, err := s.PruneGateLog(ctx, T0.Add(90*time.Minute)); err != nil || n != 1 {
		t.Fatalf("second PruneGateLog = %d, %v; want the gate decision at 1h", n, err)
	}
	if got, want := kinds(), []string{"approval@1s", "notice@1h0m0s", "gate@2h0m0s"}; !slices.Equal(got, want) {
		t.Fatalf("after the second prune: %v, want %v", got, want)
	}
	if n, err := s.PruneGateLog(ctx, T0.Add(90*time.Minute)); err != nil || n != 0 {
		t.Fatalf("a prune with nothing old = %d, %v", n, err)
	}
}

// clarifyQ is a question of agent about field, asked at T0+at.
func clarifyQ(tenant, job, qid, agent, field string, at time.Duration) record.NewQuestion {
	nq := NewQuestion(job, qid, 1)
	nq.Tenant = tenant
	nq.Body = []byte(fmt.Sprintf(`{"question":"Which?","agent":%q,"missing_field":%q}`, agent, field))
	nq.AskedAt = T0.Add(at)
	return nq
}

// testClarifyQuestions: every question of each job with one asked since
// the time (the earlier ones too), by job and time asked; a question that
// ended on its timeout says so.
func testClarifyQuestions(t *testing.T, s Store) {
	res := AskAll(t, s,
		clarifyQ(Tenant, "job-1", "q-1", "billing", "order_id", -2*time.Hour),
		clarifyQ(Tenant, "job-1", "q-2", "billing", "", time.Minute),
		clarifyQ(Tenant, "job-2", "q-1", "billing", "amount", -time.Hour), // its job had nothing since
		clarifyQ("beta", "job-3", "q-1", "", "", 2*time.Minute),
		clarifyQ(Tenant, "job-4", "q-b", "support", "", 3*time.Minute),
		clarifyQ(Tenant, "job-4", "q-a", "support", "", 3*time.Minute),
	)
	settle := func(i int, state, reason string, at time.Duration) {
		t.Helper()
		if err := s.Settle(ctx, record.Settlement{Question: res[i].Record.ID, State: state, Reason: reason, At: T0.Add(at)}); err != nil {
			t.Fatal(err)
		}
	}
	settle(0, bridge.StateTimedOut, "timed out", -time.Hour)
	settle(1, bridge.StateFailed, "timed out", time.Hour)     // on_timeout: fail
	settle(4, bridge.StateFailed, "agent gave up", time.Hour) // failed, not on its timeout
	show := func(qs []record.ClarifyQuestion) []string {
		out := []string{}
		for _, q := range qs {
			out = append(out, fmt.Sprintf("%s/%s/%s %s %s %s timedout=%v asked=%v settled=%v", q.Tenant, q.JobID, q.QuestionID, q.Agent,
				q.MissingField, q.State, q.TimedOut, q.AskedAt.Sub(T0), q.SettledAt.Sub(T0)))
		}
		return out
	}
	never := time.Time{}.Sub(T0)
	all := []string{
		"acme/job-1/q-1 billing order_id timed_out timedout=true asked=-2h0m0s settled=-1h0m0s",
		"acme/job-1/q-2 billing  failed timedout=true asked=1m0s settled=1h0m0s",
		"acme/job-4/q-b support  failed timedout=false asked=3m0s settled=1h0m0s",
		fmt.Sprintf("acme/job-4/q-a support  pending timedout=false asked=3m0s settled=%v", never),
		fmt.Sprintf("beta/job-3/q-1   pending timedout=false asked=2m0s settled=%v", never),
	}
	for _, c := range []struct {
		tenant string
		since  time.Duration
		want   []string
	}{
		{"", 0, all},
		{Tenant, 0, all[:4]},
		{"beta", 0, all[4:]},
		{Tenant, 3 * time.Minute, all[2:4]},
		{"", time.Hour, []string{}},
	} {
		got, err := s.ClarifyQuestions(ctx, c.tenant, T0.Add(c.since))
		if err != nil || !slices.Equal(show(got), c.want) {
			t.Errorf("ClarifyQuestions(%q, T0+%v) =\n %q, %v\nwant\n %q", c.tenant, c.since, show(got), err, c.want)
		}
	}
}

// testClarifyFollowsWrites: ClarifyQuestions read after each kind of
// write shows it: an ask, a delegation to another body, an answer, a
// supersede by a new task version and a timeout. A store that keeps what
// the measures read between calls must miss none of them.
func testClarifyFollowsWrites(t *testing.T, s Store) {
	read := func(want ...string) {
		t.Helper()
		qs, err := s.ClarifyQuestions(ctx, "", T0)
		got := []string{}
		for _, q := range qs {
			got = append(got, fmt.Sprintf("%s/%s %s %s %s timedout=%v settled=%v", q.JobID, q.QuestionID, q.Agent, q.MissingField,
				q.State, q.TimedOut, q.SettledAt.Sub(T0)))
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ClarifyQuestions =\n %q, %v\nwant\n %q", got, err, want)
		}
	}
	never := time.Time{}.Sub(T0)
	first := Ask(t, s, clarifyQ(Tenant, "job-1", "q-1", "billing", "order_id", 0))
	read(fmt.Sprintf("job-1/q-1 billing order_id pending timedout=false settled=%v", never))
	wantOutcomes(t, decideAll(t, s, record.Decision{Delegate: &record.Delegation{AttemptID: "delegate-1", Question: first.ID,
		Body: []byte(`{"question":"Which?","agent":"billing-v2","missing_field":"amount"}`), By: "slack:UANA", Via: "slack", At: T0}}), nil)
	read(fmt.Sprintf("job-1/q-1 billing-v2 amount pending timedout=false settled=%v", never))
	if err := s.Settle(ctx, record.Settlement{Question: first.ID, State: bridge.StateAnswered, By: "slack:UANA", At: T0.Add(10 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	read("job-1/q-1 billing-v2 amount answered timedout=false settled=10m0s")
	Ask(t, s, clarifyQ(Tenant, "job-2", "q-1", "support", "", time.Minute))
	newer := clarifyQ(Tenant, "job-2", "q-1", "support", "", 2*time.Minute)
	newer.TaskVersion = 2
	third := Ask(t, s, newer)
	read("job-1/q-1 billing-v2 amount answered timedout=false settled=10m0s",
		"job-2/q-1 support  superseded timedout=false settled=2m0s",
		fmt.Sprintf("job-2/q-1 support  pending timedout=false settled=%v", never))
	if err := s.Settle(ctx, record.Settlement{Question: third.ID, State: bridge.StateFailed, Reason: "timed out", At: T0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	read("job-1/q-1 billing-v2 amount answered timedout=false settled=10m0s",
		"job-2/q-1 support  superseded timedout=false settled=2m0s",
		"job-2/q-1 support  failed timedout=true settled=1h0m0s")
}

// testGateDecisions: the gate's refusals in a window, counted by job and
// code, with the agent of the job's latest question.
func testGateDecisions(t *testing.T, s Store) {
	AskAll(t, s, clarifyQ(Tenant, "job-1", "q-1", "billing", "", 0), clarifyQ(Tenant, "job-1", "q-2", "billing-v2", "", time.Minute))
	beta := func(e record.LogEntry) record.LogEntry { e.Tenant = "beta"; return e }
	logAt(t, s,
		gateEntry("job-1", "allowed", T0),
		gateEntry("job-1", "tool_denied", T0),
		gateEntry("job-1", "tool_denied", T0.Add(time.Minute)),
		gateEntry("job-1", "approval_pending", T0.Add(2*time.Minute)),
		gateEntry("job-1", "tool_denied", T0.Add(time.Hour)),    // after the window
		gateEntry("job-1", "tool_denied", T0.Add(-time.Second)), // before it
		gateEntry("job-2", "tool_denied", T0),                   // no question: no agent
		beta(gateEntry("job-1", "tool_denied", T0)),
		record.LogEntry{Tenant: Tenant, JobID: "job-1", Kind: record.LogRefused, Body: json.RawMessage(`{"code":"tool_denied"}`), At: T0},
	)
	show := func(ds []record.GateDecision) []string {
		out := []string{}
		for _, d := range ds {
			out = append(out, fmt.Sprintf("%s/%s %s %s %d", d.Tenant, d.JobID, d.Agent, d.Code, d.Count))
		}
		return out
	}
	all := []string{"acme/job-1 billing-v2 approval_pending 1", "acme/job-1 billing-v2 tool_denied 2", "acme/job-2  tool_denied 1",
		"beta/job-1  tool_denied 1"}
	for _, c := range []struct {
		tenant string
		want   []string
	}{
		{"", all},
		{Tenant, all[:3]},
		{"beta", all[3:]},
		{"gamma", []string{}},
	} {
		got, err := s.GateDecisions(ctx, c.tenant, T0, T0.Add(time.Hour))
		if err != nil || !slices.Equal(show(got), c.want) {
			t.Errorf("GateDecisions(%q) = %q, %v; want %q", c.tenant, show(got), err, c.want)
		}
	}
}
