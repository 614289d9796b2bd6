package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// RunOutbox runs the outbox and upkeep tests: Unsent, MarkSent,
// OutboxBacklogAfter, PruneSent, PruneAttempts, Meta, SetMeta and Reask.
func RunOutbox(t *testing.T, open Open) {
	run(t, open, map[string]func(t *testing.T, s Store){
		"UnsentInOrderAfterAnID":     testUnsentOrder,
		"UnsentOld":                  testUnsentOld,
		"MarkSentAndBacklog":         testMarkSent,
		"PruneSentKeepsIDsGoingUp":   testPruneSent,
		"PruneAttempts":              testPruneAttempts,
		"PruneAttemptsForgetsCancel": testPruneCancelKeys,
		"Meta":                       testMeta,
		"ReaskPages":                 testReaskPages,
		"ReaskBuildErrorUndoesPage":  testReaskBuildError,
		"RaceOutboxCursor":           testRaceOutboxCursor,
	})
}

// unsent reads up to limit unsent rows after id after.
func unsent(t *testing.T, s Store, after int64, limit int) []record.OutboxRow {
	t.Helper()
	rows, err := s.Unsent(ctx, after, limit, time.Time{})
	if err != nil {
		t.Fatalf("unsent after %d: %v", after, err)
	}
	return rows
}

// datas are the rows' data, in order.
func datas(rows []record.OutboxRow) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, string(r.Data))
	}
	return out
}

// enqueue writes messages of subject "ev" with the given data.
func enqueue(t *testing.T, s Store, data ...string) {
	t.Helper()
	var msgs []record.Message
	for _, d := range data {
		msgs = append(msgs, record.Message{Subject: "ev", Data: []byte(d)})
	}
	if err := s.Enqueue(ctx, msgs); err != nil {
		t.Fatal(err)
	}
}

// testUnsentOrder: rows come in the order they were written, with ids
// going up, a page at a time after an id, each named apart.
func testUnsentOrder(t *testing.T, s Store) {
	if rows := unsent(t, s, 0, 10); len(rows) != 0 {
		t.Fatalf("an empty outbox holds %+v", rows)
	}
	enqueue(t, s, "a", "b", "c")
	enqueue(t, s, "d")
	enqueue(t, s, "e")
	rows := unsent(t, s, 0, 10)
	if got := datas(rows); !slices.Equal(got, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("unsent = %q", got)
	}
	ids := map[string]bool{}
	for i, r := range rows {
		if r.Subject != "ev" || r.Instance != s.Instance() || s.Instance() == "" {
			t.Fatalf("row %+v of instance %q", r, s.Instance())
		}
		if i > 0 && r.ID <= rows[i-1].ID {
			t.Fatalf("ids do not go up: %d after %d", r.ID, rows[i-1].ID)
		}
		if ids[r.MsgID()] {
			t.Fatalf("message id %s twice", r.MsgID())
		}
		ids[r.MsgID()] = true
	}
	if got := datas(unsent(t, s, 0, 2)); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("first page = %q", got)
	}
	if got := datas(unsent(t, s, rows[1].ID, 2)); !slices.Equal(got, []string{"c", "d"}) {
		t.Fatalf("page after b = %q", got)
	}
	if got := datas(unsent(t, s, rows[4].ID, 2)); len(got) != 0 {
		t.Fatalf("page after the last = %q", got)
	}
}

// testUnsentOld: the relay is told when a row written before a time was
// written (it looks for those in their streams before publishing again).
func testUnsentOld(t *testing.T, s Store) {
	Ask(t, s, NewQuestion("job-1", "q-1", 1)) // its row written at T0
	for _, c := range []struct {
		oldBefore time.Time
		want      int64
	}{
		{time.Time{}, 0},
		{T0, 0},
		{T0.Add(time.Millisecond), T0.UnixMilli()},
		{T0.Add(time.Hour), T0.UnixMilli()},
	} {
		rows, err := s.Unsent(ctx, 0, 10, c.oldBefore)
		if err != nil || len(rows) != 1 || rows[0].OldAt != c.want {
			t.Errorf("unsent, old before %v = %+v, %v; want one row with OldAt %d", c.oldBefore, rows, err, c.want)
		}
	}
}

// testMarkSent: the rows up to the one marked through are no longer
// unsent; the backlog counts what is left, after an id when asked.
func testMarkSent(t *testing.T, s Store) {
	enqueue(t, s, "a", "b", "c", "d")
	rows := unsent(t, s, 0, 10)
	backlog := func(after int64) int64 {
		t.Helper()
		n, err := s.OutboxBacklogAfter(ctx, after)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := backlog(0); n != 4 {
		t.Fatalf("backlog %d, want 4", n)
	}
	if err := s.MarkSentThrough(ctx, rows[1].ID, T0); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSentThrough(ctx, rows[0].ID, T0.Add(time.Second)); err != nil {
		t.Fatalf("marking sent rows again: %v", err)
	}
	if err := s.MarkSentThrough(ctx, 0, T0); err != nil {
		t.Fatalf("marking nothing: %v", err)
	}
	if got := datas(unsent(t, s, 0, 10)); !slices.Equal(got, []string{"c", "d"}) {
		t.Fatalf("unsent = %q, want c and d", got)
	}
	for after, want := range map[int64]int64{0: 2, rows[0].ID: 2, rows[2].ID: 1, rows[3].ID: 0} {
		if n := backlog(after); n != want {
			t.Errorf("backlog after %d = %d, want %d", after, n, want)
		}
	}
}

// testPruneSent: a prune never takes an unsent row, and ids keep going up
// after it, even one of every row: the relay reads the rows after the last
// id it published.
func testPruneSent(t *testing.T, s Store) {
	enqueue(t, s, "a", "b", "c")
	rows := unsent(t, s, 0, 10)
	last := rows[2].ID
	if err := s.MarkSentThrough(ctx, rows[1].ID, T0); err != nil {
		t.Fatal(err)
	}
	n, err := s.PruneSent(ctx, T0.Add(time.Hour))
	if err != nil || n < 0 || n > 2 {
		t.Fatalf("pruned %d, %v; want at most the two sent rows", n, err)
	}
	if got := datas(unsent(t, s, 0, 10)); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("unsent after the prune = %q, want c", got)
	}
	enqueue(t, s, "d")
	next := unsent(t, s, last, 10)
	if len(next) != 1 || next[0].ID <= last || string(next[0].Data) != "d" {
		t.Fatalf("rows after %d: %+v; want the new row, with a higher id", last, next)
	}
	if n, err := s.OutboxBacklogAfter(ctx, 0); err != nil || n != 2 {
		t.Fatalf("backlog %d, %v; want c and d", n, err)
	}
	// Every row sent and pruned: the next row's id is still higher.
	last = next[0].ID
	if err := s.MarkSentThrough(ctx, last, T0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PruneSent(ctx, T0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, "e")
	if next := unsent(t, s, 0, 10); len(next) != 1 || next[0].ID <= last || string(next[0].Data) != "e" {
		t.Fatalf("unsent after a prune of every row: %+v; want the new row, with an id above %d", next, last)
	}
}

// AttemptExpiry is a store whose attempt ids go on their own once they
// are as old as the runtime keeps them (key TTLs in JetStream), so that
// its PruneAttempts has nothing to delete. Its own tests show them go.
type AttemptExpiry interface {
	AttemptExpiry() time.Duration
}

// attemptsExpire reports whether s's attempt ids go on their own, after
// checking that they stay as long as the runtime keeps them.
func attemptsExpire(t *testing.T, s Store) bool {
	t.Helper()
	e, ok := s.(AttemptExpiry)
	if ok && e.AttemptExpiry() != 31*24*time.Hour {
		t.Fatalf("attempt ids expire after %v, want the runtime's 31 days (runtime/prune.go)", e.AttemptExpiry())
	}
	return ok
}

// testPruneAttempts: attempt ids decided before the cutoff are forgotten
// (an attempt of theirs can no longer come), the others kept; a store
// whose ids expire on their own keeps both until they do.
func testPruneAttempts(t *testing.T, s Store) {
	rec := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	wantOutcomes(t, decideAll(t, s,
		record.Decision{Refuse: &record.Refusal{AttemptID: "old", Question: rec.ID, At: T0}},
		record.Decision{Refuse: &record.Refusal{AttemptID: "new", Question: rec.ID, At: T0.Add(48 * time.Hour)}},
	), nil, nil)
	if attemptsExpire(t, s) {
		if n, err := s.PruneAttempts(ctx, T0.Add(time.Hour)); err != nil || n != 0 {
			t.Fatalf("pruned %d, %v; want 0 of ids that expire", n, err)
		}
		if !seen(t, s, rec.ID, "old") || !seen(t, s, rec.ID, "new") {
			t.Fatal("want both kept until they expire")
		}
		return
	}
	if n, err := s.PruneAttempts(ctx, T0.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want 1", n, err)
	}
	if seen(t, s, rec.ID, "old") || !seen(t, s, rec.ID, "new") {
		t.Fatal("want old forgotten and new kept")
	}
	if n, err := s.PruneAttempts(ctx, T0.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want the probe's attempt, decided at T0", n, err)
	}
}

// testPruneCancelKeys: a cancel's key is kept with the attempts' ids and
// pruned, or expires, with them.
func testPruneCancelKeys(t *testing.T, s Store) {
	Ask(t, s, NewQuestion("job-1", "q-1", 1))
	c := record.JobCancel{Tenant: Tenant, JobID: "job-1", At: T0, Key: "cancel.1.1"}
	if _, err := s.Cancel(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, c); !errors.Is(err, record.ErrDuplicate) {
		t.Fatalf("the cancel again: %v, want ErrDuplicate", err)
	}
	if attemptsExpire(t, s) {
		return // the key expires as an attempt's (the store's own tests)
	}
	if n, err := s.PruneAttempts(ctx, T0.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want the cancel's key", n, err)
	}
	if _, err := s.Cancel(ctx, c); err != nil {
		t.Fatalf("the cancel after its key was pruned: %v", err)
	}
}

// testMeta: a value kept, "" for one never set.
func testMeta(t *testing.T, s Store) {
	if v, err := s.Meta(ctx, "events-consumer.slack"); err != nil || v != "" {
		t.Fatalf("Meta of a key never set = %q, %v", v, err)
	}
	for _, v := range []string{"1", "2", ""} {
		if err := s.SetMeta(ctx, "events-consumer.slack", v); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Meta(ctx, "events-consumer.slack"); err != nil || got != v {
			t.Fatalf("Meta = %q, %v; want %q", got, err, v)
		}
	}
	if err := s.SetMeta(ctx, "events-consumer.discord", "7"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Meta(ctx, "events-consumer.slack"); got != "" {
		t.Fatalf("another key's value leaked: %q", got)
	}
}

// reaskFixture asks one question in each of six jobs over two tenants,
// shows some on the platforms and ends one; it returns their ids by job.
func reaskFixture(t *testing.T, s Store) map[string]int64 {
	ids := map[string]int64{}
	for _, k := range []struct{ tenant, job string }{{"acme", "job-1"}, {"acme", "job-2"}, {"beta", "job-3"}, {"acme", "job-4"}, {"beta", "job-5"}, {"beta", "job-late"}} {
		nq := NewQuestion(k.job, "q-1", 1)
		nq.Tenant = k.tenant
		if k.job == "job-late" {
			nq.AskedAt = T0.Add(time.Minute)
		}
		ids[k.job] = Ask(t, s, nq).ID
	}
	shown := func(job, platform string) {
		t.Helper()
		if _, err := s.RecordDelivery(ctx, ids[job], delivered(platform, "C1", "1."+job, ""), T0); err != nil {
			t.Fatal(err)
		}
	}
	shown("job-2", bridge.PlatformSlack)
	shown("job-2", bridge.PlatformDiscord)
	shown("job-3", bridge.PlatformSlack) // not on Discord
	failed := bridge.Delivery{Platform: bridge.PlatformSlack, Failure: &bridge.Failure{Code: bridge.CodeReferenceUnresolved}}
	if _, err := s.RecordDelivery(ctx, ids["job-4"], failed, T0); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, record.Settlement{Question: ids["job-5"], State: bridge.StateAnswered, At: T0}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// testReaskPages: Reask walks every pending question once, page by page
// across tenants, leaving out those every platform shows, ended ones and
// those asked after askedBy, and writes what build makes after the rows
// before it.
func testReaskPages(t *testing.T, s Store) {
	reaskFixture(t, s)
	before := len(Unsent(t, s))
	var read []string
	var cur record.ReaskCursor
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("Reask does not end")
		}
		next, n, done, err := s.Reask(ctx, []string{bridge.PlatformSlack, bridge.PlatformDiscord}, T0, cur, 2,
			func(r *record.Record, on []string) (record.Message, bool, error) {
				slices.Sort(on)
				read = append(read, r.Tenant+"/"+r.JobID+" "+strings.Join(on, ","))
				return record.Message{Subject: "ask.v1.event." + r.Tenant + "." + r.JobID, Data: []byte("again")}, r.JobID != "job-4", nil
			})
		if err != nil {
			t.Fatal(err)
		}
		if n > 2 {
			t.Fatalf("a page of 2 wrote %d messages", n)
		}
		cur = next
		if done {
			break
		}
	}
	if want := []string{"acme/job-1 ", "acme/job-4 ", "beta/job-3 slack"}; !slices.Equal(read, want) {
		t.Fatalf("Reask read %q, want %q", read, want)
	}
	if rows := Unsent(t, s)[before:]; !slices.Equal(rows, []string{"ask.v1.event.acme.job-1 again", "ask.v1.event.beta.job-3 again"}) {
		t.Fatalf("outbox rows written: %q", rows)
	}
	// Discord alone: job-1, job-4 and job-3 lack it; job-2 has it.
	read = nil
	_, n, done, err := s.Reask(ctx, []string{bridge.PlatformDiscord}, T0.Add(time.Hour), record.ReaskCursor{}, 10,
		func(r *record.Record, _ []string) (record.Message, bool, error) {
			read = append(read, r.JobID)
			return record.Message{}, false, nil
		})
	if err != nil || n != 0 || !done || !slices.Equal(read, []string{"job-1", "job-4", "job-3", "job-late"}) {
		t.Fatalf("Reask for discord read %q (%d, %v, %v)", read, n, done, err)
	}
	cur = record.ReaskCursor{Tenant: "beta", ID: 1}
	next, n, done, err := s.Reask(ctx, nil, T0, cur, 10, nil)
	if err != nil || n != 0 || !done || next != cur {
		t.Fatalf("Reask for no platform = %+v %d %v %v; want done where it stood", next, n, done, err)
	}
}

// testReaskBuildError: a build error undoes its page.
func testReaskBuildError(t *testing.T, s Store) {
	reaskFixture(t, s)
	before := Unsent(t, s)
	boom := errors.New("boom")
	calls := 0
	_, n, _, err := s.Reask(ctx, []string{bridge.PlatformSlack}, T0, record.ReaskCursor{}, 10,
		func(r *record.Record, _ []string) (record.Message, bool, error) {
			if calls++; calls == 2 {
				return record.Message{}, false, boom
			}
			return record.Message{Subject: "ev", Data: []byte("again " + r.JobID)}, true, nil
		})
	if !errors.Is(err, boom) || n != 0 {
		t.Fatalf("Reask with a failing build = %d, %v; want its error", n, err)
	}
	if got := Unsent(t, s); !slices.Equal(got, before) {
		t.Fatalf("a failed page wrote %q", got[len(before):])
	}
}
