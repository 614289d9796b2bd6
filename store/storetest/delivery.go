package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// The platforms' delivery reports and a question's audit; part of
// RunDecide.

// delivered is a platform's report of a message showing a question.
func delivered(platform, channel, id, thread string) bridge.Delivery {
	return bridge.Delivery{Platform: platform, OK: true,
		Message: &bridge.MessageRef{Platform: platform, Channel: channel, MessageID: id, Thread: thread}}
}

// testDeliveries: the latest report per platform wins; RecordDelivery
// returns every platform's, by platform; Messages are the messages shown.
func testDeliveries(t *testing.T, s Store) {
	rec := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	slack := delivered("slack", "C1", "1.2", "1.1")
	all, err := s.RecordDelivery(ctx, rec.ID, slack, T0)
	if err != nil || len(all) != 1 || all[0].Platform != "slack" || !all[0].OK || all[0].Message != *slack.Message || all[0].Failure != nil {
		t.Fatalf("deliveries = %+v, %v", all, err)
	}
	failed := bridge.Delivery{Platform: "discord", Failure: &bridge.Failure{Code: bridge.CodeAccessDenied, Operation: "post"}}
	all, err = s.RecordDelivery(ctx, rec.ID, failed, T0)
	if err != nil || len(all) != 2 || all[0].Platform != "discord" || all[0].OK || all[0].Failure == nil ||
		all[0].Failure.Code != bridge.CodeAccessDenied || all[0].Failure.Operation != "post" || all[1].Platform != "slack" {
		t.Fatalf("deliveries = %+v, %v", all, err)
	}
	// Shown without a message id (a console): no message to point at.
	if _, err := s.RecordDelivery(ctx, rec.ID, bridge.Delivery{Platform: "console", OK: true}, T0); err != nil {
		t.Fatal(err)
	}
	refs, err := s.Messages(ctx, rec.ID)
	if err != nil || len(refs) != 1 || refs[0] != *slack.Message {
		t.Fatalf("messages = %+v, %v", refs, err)
	}
	// A later report replaces the platform's: a failure hides the message,
	// a success shows the new one.
	all, _ = s.RecordDelivery(ctx, rec.ID, bridge.Delivery{Platform: "slack", Failure: &bridge.Failure{Code: bridge.CodeSourceUnreliable}}, T0)
	if len(all) != 3 || all[2].Platform != "slack" || all[2].OK {
		t.Fatalf("deliveries after slack failed = %+v", all)
	}
	if refs, _ := s.Messages(ctx, rec.ID); len(refs) != 0 {
		t.Fatalf("messages after slack failed = %+v", refs)
	}
	discord := delivered("discord", "D1", "9", "")
	if _, err := s.RecordDelivery(ctx, rec.ID, discord, T0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if refs, _ := s.Messages(ctx, rec.ID); len(refs) != 1 || refs[0] != *discord.Message {
		t.Fatalf("messages = %+v, want discord's", refs)
	}
	if refs, err := s.Messages(ctx, rec.ID+1000); err != nil || len(refs) != 0 {
		t.Fatalf("messages of an unknown question = %+v, %v", refs, err)
	}
	// A report that comes after the question ended is kept all the same.
	Settle(t, s, rec, T0.Add(time.Hour))
	late := delivered("slack", "C1", "1.9", "1.1")
	if _, err := s.RecordDelivery(ctx, rec.ID, late, T0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if refs, _ := s.Messages(ctx, rec.ID); len(refs) != 2 || refs[0] != *discord.Message || refs[1] != *late.Message {
		t.Fatalf("messages after the answer = %+v, want discord's and the late slack one", refs)
	}
}

// testRecordDeliveries: a batch of reports is stored in order, the latest
// per question and platform winning.
func testRecordDeliveries(t *testing.T, s Store) {
	a := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	b := Ask(t, s, NewQuestion("job-2", "q-1", 1))
	late := delivered("slack", "C2", "2.2", "2.1")
	if err := s.RecordDeliveries(ctx, []record.ReportedDelivery{
		{Question: a.ID, Delivery: bridge.Delivery{Platform: "slack", Failure: &bridge.Failure{Code: bridge.CodeSourceUnreliable}}},
		{Question: b.ID, Delivery: delivered("slack", "C3", "3.2", "")},
		{Question: a.ID, Delivery: late},
		{Question: b.ID, Delivery: delivered("discord", "D1", "4", "")},
	}, T0); err != nil {
		t.Fatal(err)
	}
	if refs, _ := s.Messages(ctx, a.ID); len(refs) != 1 || refs[0] != *late.Message {
		t.Fatalf("messages of a = %+v, want the later report's", refs)
	}
	if refs, _ := s.Messages(ctx, b.ID); len(refs) != 2 || refs[0].Platform != "discord" || refs[1].Platform != "slack" {
		t.Fatalf("messages of b = %+v, want discord's and slack's", refs)
	}
	if err := s.RecordDeliveries(ctx, nil, T0); err != nil {
		t.Fatalf("no reports: %v", err)
	}
}

// testJobThreads: the threads a job's questions were shown in, each once,
// by platform, channel and thread; failures and threadless messages are
// none.
func testJobThreads(t *testing.T, s Store) {
	res := AskAll(t, s, NewQuestion("job-1", "q-1", 1), NewQuestion("job-1", "q-2", 1), NewQuestion("job-2", "q-1", 1))
	Ask(t, s, NewQuestion("job-1", "q-3", 2)) // supersedes the others: their threads stay the job's
	if err := s.RecordDeliveries(ctx, []record.ReportedDelivery{
		{Question: res[0].Record.ID, Delivery: delivered("slack", "C2", "2.2", "2.1")},
		{Question: res[0].Record.ID, Delivery: delivered("discord", "D1", "5", "5")},
		{Question: res[1].Record.ID, Delivery: delivered("slack", "C2", "2.3", "2.1")},
		{Question: res[1].Record.ID, Delivery: delivered("console", "", "7", "")},
		{Question: res[2].Record.ID, Delivery: delivered("slack", "C9", "9.2", "9.1")},
	}, T0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordDelivery(ctx, res[1].Record.ID, bridge.Delivery{Platform: "discord", Failure: &bridge.Failure{Code: bridge.CodeAccessDenied}}, T0); err != nil {
		t.Fatal(err)
	}
	threads, err := s.JobThreads(ctx, Tenant, "job-1")
	want := []bridge.MessageRef{{Platform: "discord", Channel: "D1", Thread: "5"}, {Platform: "slack", Channel: "C2", Thread: "2.1"}}
	if err != nil || !slices.Equal(threads, want) {
		t.Fatalf("job threads = %+v, %v; want %+v", threads, err, want)
	}
	if threads, err := s.JobThreads(ctx, "beta", "job-1"); err != nil || len(threads) != 0 {
		t.Fatalf("threads of another tenant's job = %+v, %v", threads, err)
	}
}

// testAudit: a question's transitions, oldest first.
func testAudit(t *testing.T, s Store) {
	rec := Ask(t, s, NewQuestion("job-1", "q-1", 1))
	wantOutcomes(t, decideAll(t, s, record.Decision{Delegate: &record.Delegation{Question: rec.ID, Body: rec.Body, By: "slack:UANA",
		Via: "slack", Reason: "delegated", At: T0.Add(time.Minute)}}), nil)
	st := Answer(rec, T0.Add(time.Hour))
	st.Text = "The answer: yes"
	if err := s.Settle(ctx, st); err != nil {
		t.Fatal(err)
	}
	rec2 := Ask(t, s, NewQuestion("job-1", "q-2", 1))
	st = Answer(rec2, T0.Add(2*time.Hour))
	st.State, st.Text, st.Reason, st.By, st.Via = bridge.StateTimedOut, "No answer in time.", "timed out", "", ""
	if err := s.Settle(ctx, st); err != nil {
		t.Fatal(err)
	}
	want := map[int64][]bridge.AuditEntry{
		rec.ID: {
			{From: "", To: bridge.StatePending, Reason: "asked", At: T0},
			{From: bridge.StatePending, To: bridge.StatePending, By: "slack:UANA", Via: "slack", Reason: "delegated", At: T0.Add(time.Minute)},
			// A settlement without a reason is audited with its text.
			{From: bridge.StatePending, To: bridge.StateAnswered, By: "slack:alice", Via: "slack", Reason: "The answer: yes", At: T0.Add(time.Hour)},
		},
		rec2.ID: {
			{From: "", To: bridge.StatePending, Reason: "asked", At: T0},
			{From: bridge.StatePending, To: bridge.StateTimedOut, Reason: "timed out", At: T0.Add(2 * time.Hour)},
		},
	}
	for q, w := range want {
		got, err := s.Audit(ctx, q)
		if err != nil || len(got) != len(w) {
			t.Fatalf("audit of %d = %+v, %v; want %+v", q, got, err, w)
		}
		for i := range w {
			g := got[i]
			if g.From != w[i].From || g.To != w[i].To || g.By != w[i].By || g.Via != w[i].Via || g.Reason != w[i].Reason || !g.At.Equal(w[i].At) {
				t.Errorf("audit of %d, entry %d = %+v, want %+v", q, i, g, w[i])
			}
		}
	}
	if got, err := s.Audit(ctx, rec2.ID+1000); err != nil || len(got) != 0 {
		t.Fatalf("audit of an unknown question = %+v, %v", got, err)
	}
}
