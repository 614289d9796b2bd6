package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

const leakedToken = "xoxb-1234567890-0987654321-AbCdEfGhIjKl"

func crmNotice(job, id string) *bridge.Notice {
	return &bridge.Notice{Tenant: "acme", JobID: job, NoticeID: id, Agent: "acme-support", Failure: bridge.Failure{
		Code: bridge.CodeAccessDenied, Dependency: "crm", Operation: "export_contacts",
		RequiredCapability: "crm:export", SafeFallback: "I can summarise the contacts I already have.",
		OperatorMessage: "The CRM answered 403 to " + leakedToken + "."}}
}

// noticePosts are the chat.postMessage calls that carried a notice card.
func noticePosts(f *fakeSlack) []apiCall {
	var out []apiCall
	for _, c := range f.Calls("chat.postMessage") {
		if strings.Contains(c.Str("metadata"), metaNotice) {
			out = append(out, c)
		}
	}
	return out
}

func waitNoticePosts(t *testing.T, f *fakeSlack, n int) []apiCall {
	t.Helper()
	testenv.CheckFor(t, wait, tick, func() error {
		if got := len(noticePosts(f)); got != n {
			return fmt.Errorf("%d notice cards posted, want %d", got, n)
		}
		return nil
	})
	return noticePosts(f)
}

// checkNoticeCard checks a posted notice card shows the five parts in
// order, no controls, and the token masked.
func checkNoticeCard(t *testing.T, c apiCall) {
	t.Helper()
	raw := string(c.Body)
	if strings.Contains(raw, "xoxb-1234") || !strings.Contains(c.Str("blocks"), "[masked]") {
		t.Errorf("the card does not mask the token: %s", c.Str("blocks"))
	}
	var texts []string
	for _, b := range blocksOf(c) {
		if b["type"] == "actions" || b["accessory"] != nil {
			t.Errorf("a notice card has controls: %v", b)
		}
		if tx, ok := b["text"].(map[string]any); ok {
			texts = append(texts, tx["text"].(string))
		}
	}
	all := strings.Join(texts, "\n")
	last := -1
	for _, label := range card.NoticeLabels {
		at := strings.Index(all, "*"+label+"*\n")
		if at <= last {
			t.Errorf("%s is missing or out of order in %q", label, all)
		}
		last = at
	}
	for _, want := range []string{"Access denied (ACCESS_DENIED)", "export_contacts on crm", "crm:export",
		"I can summarise the contacts I already have.", "Someone giving the agent crm:export on crm."} {
		if !strings.Contains(all, want) {
			t.Errorf("the card does not say %q: %q", want, all)
		}
	}
}

// TestNoticeShownInTheJobsThreadOnce: a notice of a job whose question is
// in a thread is posted in that thread, as a card with the five parts, no
// controls and the token masked; its event delivered again posts nothing
// more; the metric counts it by code.
func TestNoticeShownInTheJobsThreadOnce(t *testing.T) {
	env, h := e2e(t, runtime.Roles{})
	q := question("job-nt", "q-1")
	if err := env.Agent.Publish(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	asked := h.posted(t, "q-1")
	thread := asked.Str("thread_ts")
	if thread == "" {
		t.Fatal("the question's card is not in a thread")
	}
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-nt")
	// The card's delivery report makes the thread the job's, for the runtime.
	testenv.CheckFor(t, wait, tick, func() error {
		threads, err := env.Store.JobThreads(context.Background(), "acme", "job-nt")
		if err != nil || len(threads) == 0 {
			return fmt.Errorf("no thread recorded yet (%v)", err)
		}
		return nil
	})
	if err := env.Agent.Notify(context.Background(), crmNotice("job-nt", "n-1")); err != nil {
		t.Fatal(err)
	}
	posts := waitNoticePosts(t, h.fake, 1)
	if posts[0].Str("channel") != "C0123" || posts[0].Str("thread_ts") != thread {
		t.Errorf("notice posted in %s thread %q, want C0123 thread %q", posts[0].Str("channel"), posts[0].Str("thread_ts"), thread)
	}
	checkNoticeCard(t, posts[0])
	var ev bridge.Event
	testenv.CheckFor(t, wait, tick, func() error {
		for _, e := range events.Events() {
			if e.Type == bridge.EventNotice {
				ev = e
				return nil
			}
		}
		return fmt.Errorf("no notice event")
	})
	publishEvent(t, env.NATS, ev) // delivered twice
	marker := question("job-nt", "q-2")
	if err := env.Agent.Publish(context.Background(), marker); err != nil {
		t.Fatal(err)
	}
	h.posted(t, "q-2") // the job's events are handled in order: the second copy was handled
	if n := len(noticePosts(h.fake)); n != 1 {
		t.Errorf("%d notice cards after the event came twice", n)
	}
	if got := noticeCount(t, env, bridge.CodeAccessDenied); got != 1 {
		t.Errorf("askbridge_notices_total{code=ACCESS_DENIED} = %g", got)
	}
}

// TestNoticeWithoutAThreadGoesToTheDefaultChannel: a job with no thread
// gets its notice as a new message in the default channel, which opens
// no thread.
func TestNoticeWithoutAThreadGoesToTheDefaultChannel(t *testing.T) {
	env, h := e2e(t, runtime.Roles{})
	if err := env.Agent.Notify(context.Background(), crmNotice("job-nd", "n-1")); err != nil {
		t.Fatal(err)
	}
	posts := waitNoticePosts(t, h.fake, 1)
	if posts[0].Str("channel") != "C0123" || posts[0].Str("thread_ts") != "" {
		t.Errorf("notice posted in %s thread %q", posts[0].Str("channel"), posts[0].Str("thread_ts"))
	}
	checkNoticeCard(t, posts[0])
	if n := len(h.fake.Calls("chat.postMessage")); n != 1 {
		t.Errorf("%d messages posted, want the notice alone", n)
	}
}

// TestInvalidNoticeShowsNothing: a notice that is not valid is refused
// with a log line naming the field, and nothing is posted; the next
// valid one is.
func TestInvalidNoticeShowsNothing(t *testing.T) {
	logs := &testenv.LockedBuffer{}
	env := testenv.Start(t, testenv.Options{Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C0123"}}})
	h := startBot(t, env.NATS, newFakeSlack(t))
	bad, _ := json.Marshal(map[string]any{"code": "ACCESS_DENIED", "dependency": "crm", "operator_message": leakedToken})
	if err := bridge.PublishRaw(context.Background(), env.NATS.JS, bridge.NoticeSubject("acme", "job-ni"), "bad-1", bad); err != nil {
		t.Fatal(err)
	}
	if err := env.Agent.Notify(context.Background(), crmNotice("job-ni", "n-good")); err != nil {
		t.Fatal(err)
	}
	waitNoticePosts(t, h.fake, 1)
	if !strings.Contains(logs.String(), `msg="notice refused"`) || !strings.Contains(logs.String(), "field=operation") {
		t.Errorf("no refusal naming operation in the log:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "xoxb-1234") {
		t.Errorf("the log holds the token:\n%s", logs.String())
	}
	if n := len(h.fake.Calls("chat.postMessage")); n != 1 {
		t.Errorf("%d messages posted, want the valid notice alone", n)
	}
}

// noticeCount reads askbridge_notices_total for code.
func noticeCount(t *testing.T, env *testenv.Env, code string) float64 {
	t.Helper()
	families, err := env.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "askbridge_notices_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "code" && l.GetValue() == code {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}
