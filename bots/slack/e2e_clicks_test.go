package slack

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
	"github.com/askbridge/askbridge/store/record"
)

func TestEndToEndStrangerIsRefusedPrivately(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	q := question("job-5", "q-s")
	publishQuestion(t, env, q)
	card := h.posted(t, "q-s")
	ts := h.cardTS(t, q)
	h.interact(h.fake.click("U0BAD", "mallory", "trig-bad", "C0123", ts, actionsBlock(card), "choice.0", "red", ""))
	var said apiCall
	testenv.CheckFor(t, wait, tick, func() error {
		for _, c := range h.fake.Calls("response_url") {
			said = c
			return nil
		}
		return fmt.Errorf("no ephemeral reply to the stranger")
	})
	text, _ := said.JSON["text"].(string)
	if said.JSON["response_type"] != "ephemeral" || !strings.HasPrefix(text, "You can't answer this question: ") {
		t.Fatalf("refusal: %s", said.Body)
	}
	// Only the clicker was told: nothing posted in the channel, card unchanged.
	if n := len(h.fake.Calls("chat.update")); n != 0 {
		t.Fatalf("card updated after a refusal")
	}
	var show bridge.ShowReply
	if err := h.bot.request(context.Background(), bridge.APIShow, bridge.ShowRequest{As: "slack:U0KEV", Tenant: "acme", JobID: "job-5", QuestionID: "q-s"}, &show); err != nil {
		t.Fatal(err)
	}
	if show.Question == nil || show.Question.State != bridge.StatePending {
		t.Fatalf("question no longer waiting: %+v", show)
	}
}

func TestEndToEndDoubleClickIsOneResume(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	attempts := testenv.Published(t, env.NATS.Conn, bridge.AnswerSubject("acme", "job-6"))
	resumes := collect[bridge.Resume](t, env.NATS, bridge.PrefixResume+".>")
	q := question("job-6", "q-dbl")
	publishQuestion(t, env, q)
	card := h.posted(t, "q-dbl")
	ts := h.cardTS(t, q)
	h.interact(h.fake.click("U0KEV", "kevin", "trig-a", "C0123", ts, actionsBlock(card), "choice.1", "blue", ""))
	h.interact(h.fake.click("U0KEV", "kevin", "trig-b", "C0123", ts, actionsBlock(card), "choice.1", "blue", ""))
	// Slack retrying the first delivery (same trigger id), past our local window.
	h.bot.clicks = newDedupe(clickFold, time.Now)
	h.interact(h.fake.click("U0KEV", "kevin", "trig-a", "C0123", ts, actionsBlock(card), "choice.1", "blue", ""))
	if n := attempts.Count(t); n != 1 {
		t.Fatalf("%d attempts for one double click and a retry, want 1", n)
	}
	awaitOutcome(t, env, q)
	h.updated(t, ts, "Answered by @kevin: blue")
	// The card can be updated before the resume reaches a subscriber
	// (the event goes out first): wait for it, then count what the
	// stream holds.
	testenv.CheckFor(t, wait, tick, func() error {
		if n := len(resumes.All()); n == 0 {
			return fmt.Errorf("no resume seen yet")
		}
		return nil
	})
	if n := testenv.StreamCount(t, env.NATS, bridge.StreamResumes, bridge.ResumeSubject("acme", "job-6")); n != 1 {
		t.Fatalf("%d resumes on the stream, want 1", n)
	}
	if n := len(resumes.All()); n != 1 {
		t.Fatalf("%d resumes seen, want 1", n)
	}
}

// TestClickRetriedAfterAFailedPublish checks a click or a modal submit
// whose attempt could not be published is not acknowledged (Slack gets a
// 503, shows the person the failure and keeps the form open), the clicker
// is told to try again, and the retry is not taken for a double click:
// the same click a moment later is published.
func TestClickRetriedAfterAFailedPublish(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	q := question("job-retry", "q-retry")
	q.Choices = nil
	q.Fields = []bridge.Field{{Name: "note", Kind: bridge.FieldText}}
	withChoice := question("job-retry", "q-choice")
	publishQuestion(t, env, q)
	publishQuestion(t, env, withChoice)
	form := h.posted(t, "q-retry")
	card := h.posted(t, "q-choice")
	formTS, ts := h.cardTS(t, q), h.cardTS(t, withChoice)
	h.interact(h.fake.click("U0KEV", "kevin", "trig-open", "C0123", formTS, actionsBlock(form), "answer", "answer", ""))
	opens := h.fake.Calls("views.open")
	if len(opens) != 1 {
		t.Fatalf("%d views opened, want the answer form", len(opens))
	}
	ctx := context.Background()
	// No stream takes answers (a deleted stream the runtime would make
	// again at once).
	st, err := env.NATS.JS.Stream(ctx, bridge.StreamAnswers)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.Subjects = []string{"elsewhere.>"}
	if _, err := env.NATS.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	resp, body := h.interact(h.fake.click("U0KEV", "kevin", "trig-r1", "C0123", ts, actionsBlock(card), "choice.1", "blue", ""))
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a click whose attempt was not recorded got %d %q, want 503", resp.StatusCode, body)
	}
	note := map[string]map[string]any{"note": {"type": "plain_text_input", "value": "ship it"}}
	resp, body = h.interact(submission("U0KEV", "kevin", opens[0], "V1", "h1", note))
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a submit whose attempt was not recorded got %d %q, want 503", resp.StatusCode, body)
	}
	testenv.CheckFor(t, wait, tick, func() error {
		for _, c := range h.fake.Calls("response_url") {
			if c.JSON["text"] == "askbridge could not record your answer just now. Please try again in a moment." {
				return nil
			}
		}
		return fmt.Errorf("the clicker was not told to try again (%d response_url posts)", len(h.fake.Calls("response_url")))
	})
	if err := bridge.EnsureStreams(ctx, env.NATS.JS, bridge.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, body = h.interact(h.fake.click("U0KEV", "kevin", "trig-r2", "C0123", ts, actionsBlock(card), "choice.1", "blue", ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the retried click got %d %q, want 200", resp.StatusCode, body)
	}
	resp, body = h.interact(submission("U0KEV", "kevin", opens[0], "V1", "h1", note))
	if resp.StatusCode != http.StatusOK || body != "" {
		t.Fatalf("the submit sent again got %d %q, want 200 and the form closed", resp.StatusCode, body)
	}
	testenv.CheckFor(t, wait, tick, func() error {
		if n := testenv.StreamCount(t, env.NATS, bridge.StreamAnswers, bridge.AnswerSubject("acme", "job-retry")); n != 2 {
			return fmt.Errorf("%d attempts on the stream after the retries, want 2", n)
		}
		return nil
	})
}

func TestEndToEndStaleCardIsRefused(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	q := question("job-7", "q-v")
	publishQuestion(t, env, q)
	old := h.posted(t, "q-v")
	oldTS := h.cardTS(t, q)
	// The task moves on: version 2 supersedes the question.
	if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.CancelSubject("acme", "job-7"), "cancel-v2",
		bridge.Cancel{Tenant: "acme", JobID: "job-7", TaskVersion: 2}); err != nil {
		t.Fatal(err)
	}
	h.updated(t, oldTS, "Superseded by task version 2")
	h.interact(h.fake.click("U0KEV", "kevin", "trig-stale", "C0123", oldTS, actionsBlock(old), "choice.0", "red", ""))
	testenv.CheckFor(t, wait, tick, func() error {
		for _, c := range h.fake.Calls("response_url") {
			if strings.Contains(string(c.Body), "ephemeral") {
				return nil
			}
		}
		return fmt.Errorf("no refusal for the stale click")
	})
	out := awaitOutcome(t, env, q)
	if out.Outcome == bridge.OutcomeAnswered {
		t.Fatalf("stale click answered the question: %+v", out)
	}
}

// With AckAfterDecision, Slack hears back only once the runtime has
// committed its decision: at the 200 the question is already answered in
// the store, and a refused click is refused by then too.
func TestAckAfterDecision(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{}, func(o *Options) { o.AckAfterDecision = true })
	deliveries := collect[bridge.Delivery](t, env.NATS, bridge.PrefixDelivery+".>")
	q := question("job-ack", "q-1")
	publishQuestion(t, env, q)
	card := h.posted(t, "q-1")
	d := deliveredTS(t, env.NATS, deliveries, "q-1")
	key := record.Key{Tenant: "acme", JobID: "job-ack", QuestionID: "q-1"}

	// A stranger's click: decided (refused) before the 200; still pending.
	resp, body := h.interact(h.fake.click("U0BAD", "mallory", "trig-bad", "C0123", d.Message.MessageID, actionsBlock(card), "choice.0", "red", ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stranger's click: %d %s", resp.StatusCode, body)
	}
	if seen, err := env.Store.SeenAttempt(context.Background(), runtime.AttemptKey("acme", "job-ack", "slack-trig-bad")); err != nil || !seen {
		t.Fatalf("the stranger's attempt was not decided before the 200 (%v)", err)
	}
	resp, body = h.interact(h.fake.click("U0KEV", "kevin", "trig-ok", "C0123", d.Message.MessageID, actionsBlock(card), "choice.1", "blue", ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("click: %d %s", resp.StatusCode, body)
	}
	rec, err := env.Store.Find(context.Background(), key)
	if err != nil || rec.State != bridge.StateAnswered || string(rec.Answer) != `"blue"` {
		t.Fatalf("at the 200 the question is %+v, %v; want it answered", rec, err)
	}
	if out := awaitOutcome(t, env, q); out.Text != "The answer: blue" {
		t.Fatalf("resume: %+v", out)
	}
}
