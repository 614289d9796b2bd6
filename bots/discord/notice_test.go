package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	neutral "github.com/askbridge/askbridge/card"
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

// noticeMessages are the messages of the fake whose embed is a notice,
// by channel.
func (h *harness) noticeMessages() []map[string]any {
	h.fake.mu.Lock()
	var ids []string
	for id, m := range h.fake.msgs {
		raw, _ := json.Marshal(m["embeds"])
		if strings.Contains(string(raw), "Notice · nothing to answer") {
			ids = append(ids, id)
		}
	}
	h.fake.mu.Unlock()
	var out []map[string]any
	for _, id := range ids {
		out = append(out, h.fake.message(id))
	}
	return out
}

func (h *harness) waitNotices(n int) []map[string]any {
	h.t.Helper()
	testenv.CheckFor(h.t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := len(h.noticeMessages()); got != n {
			return fmt.Errorf("%d notice cards, want %d; bot log:\n%s", got, n, h.logs.String())
		}
		return nil
	})
	return h.noticeMessages()
}

// checkNoticeMessage checks a notice card: the five parts as fields in
// order, no components, the token masked.
func checkNoticeMessage(t *testing.T, m map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(m)
	if strings.Contains(string(raw), "xoxb-1234") || !strings.Contains(string(raw), "[masked]") {
		t.Errorf("the card does not mask the token: %s", raw)
	}
	if len(components(m)) != 0 {
		t.Errorf("a notice card has components: %v", components(m))
	}
	embeds, _ := m["embeds"].([]any)
	if len(embeds) != 1 {
		t.Fatalf("embeds %v", m["embeds"])
	}
	fields, _ := embeds[0].(map[string]any)["fields"].([]any)
	if len(fields) != len(neutral.NoticeLabels) {
		t.Fatalf("fields %v", fields)
	}
	want := []string{"Access denied (ACCESS_DENIED)\nThe CRM answered 403 to [masked].", "export_contacts on crm", "crm:export",
		"I can summarise the contacts I already have.", "Someone giving the agent crm:export on crm. " + neutral.RetryWontHelp}
	for i, f := range fields {
		f := f.(map[string]any)
		if f["name"] != neutral.NoticeLabels[i] || f["value"] != want[i] {
			t.Errorf("field %d: %q %q, want %q %q", i, f["name"], f["value"], neutral.NoticeLabels[i], want[i])
		}
	}
}

// TestNoticeShownInTheJobsThreadOnce: a notice of a job whose question
// started a thread goes in that thread, as a card with the five parts, no
// components and the token masked; its event delivered again posts
// nothing more, even where Discord would not deduplicate the nonce.
func TestNoticeShownInTheJobsThreadOnce(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	q.JobID = "job-nt"
	ask(t, env, q)
	card := h.posted(channelA, 1)
	thread, _ := card["id"].(string)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		threads, err := env.Store.JobThreads(context.Background(), "acme", "job-nt")
		if err != nil || len(threads) == 0 {
			return fmt.Errorf("no thread recorded yet (%v)", err)
		}
		return nil
	})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-nt")
	if err := env.Agent.Notify(context.Background(), crmNotice("job-nt", "n-1")); err != nil {
		t.Fatal(err)
	}
	msgs := h.waitNotices(1)
	if msgs[0]["channel_id"] != thread {
		t.Errorf("notice in channel %v, want the job's thread %s", msgs[0]["channel_id"], thread)
	}
	checkNoticeMessage(t, msgs[0])
	var ev bridge.Event
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, e := range events.Events() {
			if e.Type == bridge.EventNotice {
				ev = e
				return nil
			}
		}
		return fmt.Errorf("no notice event")
	})
	h.fake.forgetNonces()
	if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.EventSubject("acme", "job-nt"), "again-"+ev.EventID, ev); err != nil {
		t.Fatal(err)
	}
	second := q
	second.QuestionID = "q-2"
	ask(t, env, second)
	h.posted(thread, 2) // the job's events are handled in order: the copy was handled before
	if n := len(h.noticeMessages()); n != 1 {
		t.Errorf("%d notice cards after the event came twice", n)
	}
}

// TestNoticeWithoutAThreadAndInvalidNotices: a job with no thread gets its
// notice in the default channel; a notice that is not valid is refused
// with a log line naming the field and shows nothing.
func TestNoticeWithoutAThreadAndInvalidNotices(t *testing.T) {
	t.Parallel()
	logs := &testenv.LockedBuffer{}
	env := testenv.Start(t, testenv.Options{Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	h := start(t, harnessOptions{nats: env.NATS})
	bad, _ := json.Marshal(map[string]any{"code": "QuestionTimedOut", "dependency": "crm", "operation": "x", "operator_message": leakedToken})
	if err := bridge.PublishRaw(context.Background(), env.NATS.JS, bridge.NoticeSubject("acme", "job-nd"), "bad-1", bad); err != nil {
		t.Fatal(err)
	}
	if err := env.Agent.Notify(context.Background(), crmNotice("job-nd", "n-1")); err != nil {
		t.Fatal(err)
	}
	msgs := h.waitNotices(1)
	if msgs[0]["channel_id"] != channelA {
		t.Errorf("notice in channel %v, want %s", msgs[0]["channel_id"], channelA)
	}
	checkNoticeMessage(t, msgs[0])
	if !strings.Contains(logs.String(), `msg="notice refused"`) || !strings.Contains(logs.String(), "field=code") {
		t.Errorf("no refusal naming code in the log:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "xoxb-1234") {
		t.Errorf("the log holds the token:\n%s", logs.String())
	}
	if n := len(h.fake.requests("POST", "/channels/")); n != 1 {
		t.Errorf("%d messages posted, want the valid notice alone", n)
	}
}
