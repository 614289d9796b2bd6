package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/store/record"
)

const slackToken = "xoxb-1234567890-0987654321-AbCdEfGhIjKl"

func crmNotice(job string) *bridge.Notice {
	return &bridge.Notice{Tenant: "acme", JobID: job, NoticeID: "n-crm", Agent: "acme-support", Failure: bridge.Failure{
		Code: bridge.CodeAccessDenied, Dependency: "crm", Operation: "export_contacts", Retryable: false,
		RequiredCapability: "crm:export", SafeFallback: "I can summarise the contacts I already have.",
		OperatorMessage: "The CRM answered 403 to token " + slackToken + "."}}
}

func noticeLogs(t *testing.T, env *testenv.Env, job string) []record.LogEntry {
	t.Helper()
	entries, err := env.Store.JobLog(context.Background(), "acme", job)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// TestNoticeIsRecordedMaskedAndAnnouncedOnce: a notice with a token in its
// operator message is written to the job's trail and announced as one
// notice event, masked in both, counted by its code; the same notice
// published again (another message id) changes nothing.
func TestNoticeIsRecordedMaskedAndAnnouncedOnce(t *testing.T) {
	t.Parallel()
	logs := &testenv.LockedBuffer{}
	env := testenv.Start(t, testenv.Options{Roles: roles, KeepEvents: true, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-n1")
	ctx := context.Background()
	if err := env.Agent.Notify(ctx, crmNotice("job-n1")); err != nil {
		t.Fatal(err)
	}
	// The same notice again under another message id: a retry by an
	// agent that did not keep its message id.
	if err := bridge.Publish(ctx, env.NATS.JS, bridge.NoticeSubject("acme", "job-n1"), "retry-1", crmNotice("job-n1")); err != nil {
		t.Fatal(err)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if events.Len() != 1 {
			return fmt.Errorf("%d events", events.Len())
		}
		return nil
	})
	ev := events.Events()[0]
	want := "The CRM answered 403 to token [masked]."
	if ev.Type != bridge.EventNotice || ev.EventID != "acme.job-n1.notice.n-crm" || ev.Notice == nil || ev.Notice.OperatorMessage != want ||
		ev.Notice.Code != bridge.CodeAccessDenied || ev.Notice.SafeFallback == "" || ev.QuestionID != "" {
		t.Fatalf("event %+v notice %+v", ev, ev.Notice)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if !strings.Contains(logs.String(), "notice already recorded") {
			return fmt.Errorf("the second copy is not handled yet")
		}
		return nil
	})
	entries := noticeLogs(t, env, "job-n1")
	if len(entries) != 1 || entries[0].Kind != record.LogNotice {
		t.Fatalf("job log %+v", entries)
	}
	var logged bridge.Notice
	if err := json.Unmarshal(entries[0].Body, &logged); err != nil || logged.OperatorMessage != want || logged.NoticeID != "n-crm" {
		t.Fatalf("job log body %s (%v)", entries[0].Body, err)
	}
	if events.Len() != 1 {
		t.Fatalf("%d events after the second copy", events.Len())
	}
	if strings.Contains(logs.String(), "xoxb-") {
		t.Errorf("the token reached the log:\n%s", logs.String())
	}
	if got := counters(t, env, "askbridge_notices_total"); !strings.Contains(got, "code=ACCESS_DENIED 1") || !strings.Contains(got, "code=INPUT_MISSING 0") {
		t.Errorf("askbridge_notices_total: %s", got)
	}
}

// TestInvalidNoticesAreRefusedNamingTheField: each notice that is not
// valid is refused with a log line naming its field, and nothing is
// announced or written; the consumer goes on with the next notice.
func TestInvalidNoticesAreRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	logs := &testenv.LockedBuffer{}
	env := testenv.Start(t, testenv.Options{Roles: roles, KeepEvents: true, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.>")
	ctx := context.Background()
	bad := []struct{ subject, body, field string }{
		{bridge.NoticeSubject("acme", "job-n2"), `{"dependency":"crm","operation":"export"}`, "field=code"},
		{bridge.NoticeSubject("acme", "job-n2"), `{"code":"QuestionTimedOut","dependency":"crm","operation":"export"}`, "field=code"},
		{bridge.NoticeSubject("acme", "job-n2"), `{"code":"ACCESS_DENIED","dependency":"crm"}`, "field=operation"},
		{bridge.NoticeSubject("acme", "job-n2"), `{"job_id":"job-other","code":"ACCESS_DENIED","dependency":"crm","operation":"x"}`, "field=job_id"},
		{bridge.NoticeSubject("acme", "job-n2"), `{"code":"ACCESS_DENIED","dependency":"crm","operation":"x","retryable":"` + slackToken + `"}`, "field=retryable"},
		{bridge.NoticeSubject("acme", "job-n2"), `not json at all ` + slackToken, "field=notice"},
		{bridge.NoticeSubject("acme", "job-n2"), `{"code":"ACCESS_DENIED","dependency":"` + strings.Repeat("d", 300) + `","operation":"x"}`, "field=dependency"},
		{bridge.PrefixNotice + ".acme.job-n2.extra", `{}`, "field=subject"},
	}
	for i, b := range bad {
		if err := bridge.PublishRaw(ctx, env.NATS.JS, b.subject, fmt.Sprint("bad-", i), []byte(b.body)); err != nil {
			t.Fatal(err)
		}
	}
	good := crmNotice("job-n2")
	good.NoticeID = "n-after"
	if err := env.Agent.Notify(ctx, good); err != nil {
		t.Fatal(err)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if events.Len() != 1 {
			return fmt.Errorf("%d events", events.Len())
		}
		return nil
	})
	if ev := events.Events()[0]; ev.Notice == nil || ev.Notice.NoticeID != "n-after" {
		t.Fatalf("the one event is %+v", ev)
	}
	out := logs.String()
	for _, b := range bad {
		if !strings.Contains(out, `msg="notice refused"`) || !strings.Contains(out, b.field) {
			t.Errorf("no refusal naming %s in the log:\n%s", b.field, out)
		}
	}
	if n := strings.Count(out, `msg="notice refused"`); n != len(bad) {
		t.Errorf("%d refusals logged, want %d", n, len(bad))
	}
	if strings.Contains(out, "xoxb-") {
		t.Errorf("a refusal echoed the token:\n%s", out)
	}
	// Every refused notice was acknowledged: the work queue holds none.
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if n := testenv.StreamCount(t, env.NATS, bridge.StreamNotices, bridge.PrefixNotice+".>"); n != 0 {
			return fmt.Errorf("%d notices still in %s", n, bridge.StreamNotices)
		}
		return nil
	})
	if entries := noticeLogs(t, env, "job-n2"); len(entries) != 1 {
		t.Errorf("job log %+v", entries)
	}
	if got := counters(t, env, "askbridge_notices_refused_total"); got != fmt.Sprintf(" %d", len(bad)) {
		t.Errorf("askbridge_notices_refused_total: %q", got)
	}
}

// TestNoticeCarriesTheJobsThreads: a notice of a job whose question was
// shown in a thread names that thread, as asked does, so the adapters
// post it there.
func TestNoticeCarriesTheJobsThreads(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles, KeepEvents: true, Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C0DEF"}}})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-n3")
	q := choiceQuestion("job-n3")
	ask(t, env, q)
	thread := bridge.MessageRef{Platform: bridge.PlatformSlack, Channel: "C0DEF", MessageID: "1700000000.000200", Thread: "1700000000.000100"}
	report(t, env, q, bridge.Delivery{Platform: bridge.PlatformSlack, OK: true, Message: &thread})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		threads, err := env.Store.JobThreads(context.Background(), "acme", "job-n3")
		if err != nil || len(threads) != 1 {
			return fmt.Errorf("threads %v (%v)", threads, err)
		}
		return nil
	})
	if err := env.Agent.Notify(context.Background(), crmNotice("job-n3")); err != nil {
		t.Fatal(err)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, ev := range events.Events() {
			if ev.Type == bridge.EventNotice {
				if len(ev.Threads) != 1 || ev.Threads[0].Thread != thread.Thread || ev.Threads[0].Channel != "C0DEF" {
					return fmt.Errorf("threads %+v", ev.Threads)
				}
				return nil
			}
		}
		return fmt.Errorf("no notice event yet: %s", events.EventTypes())
	})
}
