package store

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// TestReaskPagesThroughWhatAPlatformDoesNotShow checks Reask walks every
// pending question once, page by page across tenants, leaves out those
// the platforms all show, ended ones and those asked after askedBy, and
// writes the messages build makes after the outbox rows before them.
func TestReaskPagesThroughWhatAPlatformDoesNotShow(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	var ids = map[string]int64{}
	for _, k := range []struct{ tenant, job string }{{"acme", "job-1"}, {"acme", "job-2"}, {"beta", "job-3"}, {"acme", "job-4"}, {"beta", "job-5"}, {"beta", "job-late"}} {
		nq := newQ(k.job, "q-1", 1)
		nq.Tenant = k.tenant
		if k.job == "job-late" {
			nq.AskedAt = t0.Add(time.Minute)
		}
		ids[k.job] = mustAsk(t, s, nq).Record.ID
	}
	shown := func(job, platform string) {
		t.Helper()
		d := bridge.Delivery{Platform: platform, OK: true, Message: &bridge.MessageRef{Platform: platform, Channel: "C1", MessageID: "1." + job}}
		if _, err := s.RecordDelivery(ctx, ids[job], d, t0); err != nil {
			t.Fatal(err)
		}
	}
	shown("job-2", bridge.PlatformSlack)
	shown("job-2", bridge.PlatformDiscord)
	shown("job-3", bridge.PlatformSlack) // not on Discord
	failed := bridge.Delivery{Platform: bridge.PlatformSlack, Failure: &bridge.Failure{Code: bridge.CodeReferenceUnresolved}}
	if _, err := s.RecordDelivery(ctx, ids["job-4"], failed, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, record.Settlement{Question: ids["job-5"], State: bridge.StateAnswered, At: t0}); err != nil {
		t.Fatal(err)
	}
	before := len(unsentSubjects(t, s))

	var seen []string
	var cur record.ReaskCursor
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("Reask does not end")
		}
		next, n, done, err := s.Reask(ctx, []string{bridge.PlatformSlack, bridge.PlatformDiscord}, t0, cur, 2, func(r *record.Record, on []string) (record.Message, bool, error) {
			slices.Sort(on)
			seen = append(seen, r.Tenant+"/"+r.JobID+" "+strings.Join(on, ","))
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
	want := []string{"acme/job-1 ", "acme/job-4 ", "beta/job-3 slack"}
	if !slices.Equal(seen, want) {
		t.Fatalf("Reask read %q, want %q", seen, want)
	}
	rows := unsentSubjects(t, s)[before:]
	if !slices.Equal(rows, []string{"ask.v1.event.acme.job-1 again", "ask.v1.event.beta.job-3 again"}) {
		t.Fatalf("outbox rows written: %q", rows)
	}
}

func TestMetaIsKept(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	if v, err := s.Meta(ctx, "events-consumer.slack"); err != nil || v != "" {
		t.Fatalf("Meta of a key never set = %q, %v", v, err)
	}
	for _, v := range []string{"1", "2"} {
		if err := s.SetMeta(ctx, "events-consumer.slack", v); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Meta(ctx, "events-consumer.slack"); err != nil || got != v {
			t.Fatalf("Meta = %q, %v; want %q", got, err, v)
		}
	}
}
