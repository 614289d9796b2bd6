package slack

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
	"github.com/askbridge/askbridge/store/record"
)

const wait = testenv.Patience
const tick = 20 * time.Millisecond

// e2e starts the core (NATS, store, runtime) with Slack as the only
// platform, the fake Slack, and the adapter.
func e2e(t *testing.T, roles runtime.Roles, opts ...func(*Options)) (*testenv.Env, *harness) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{Roles: roles,
		Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C0123"}}})
	fake := newFakeSlack(t)
	return env, startBot(t, env.NATS, fake, opts...)
}

func question(job, id string) *bridge.Question {
	return &bridge.Question{Tenant: "acme", JobID: job, QuestionID: id, TaskVersion: 1,
		Question: "Which colour should the report use?", WhyItMatters: "The board prints it.",
		Choices: []string{"red", "blue"}, Answerers: []string{"slack:U0KEV"}, Owner: "slack:U0OWNER",
		Agent: "acme-support", Timeout: "4h"}
}

// posted waits for the card of question id and returns its chat.postMessage.
func (h *harness) posted(t *testing.T, id string) apiCall {
	t.Helper()
	var card apiCall
	testenv.CheckFor(t, wait, tick, func() error {
		for _, c := range h.fake.Calls("chat.postMessage") {
			if strings.Contains(actionsBlock(c), "."+id+".") || strings.HasSuffix(actionsBlock(c), "."+id) {
				card = c
				return nil
			}
		}
		return fmt.Errorf("no card for %s; calls: %d", id, len(h.fake.Calls("chat.postMessage")))
	})
	return card
}

// cardTS is the ts the fake gave the card, from the delivery report.
func deliveredTS(t *testing.T, n *bridge.NATS, c *collector[bridge.Delivery], id string) bridge.Delivery {
	t.Helper()
	var d bridge.Delivery
	testenv.CheckFor(t, wait, tick, func() error {
		for _, x := range c.All() {
			if x.QuestionID == id {
				d = x
				return nil
			}
		}
		return fmt.Errorf("no delivery report for %s", id)
	})
	return d
}

// endedAt is the end of a settled card's outcome line: when the question
// ended, in Slack's date markup (each reader's time zone).
var endedAt = regexp.MustCompile(` · <!date\^(\d+)\^\{date_short_pretty\} at \{time\}\|\d{4}-\d\d-\d\d \d\d:\d\d UTC>$`)

// began is when this test binary started: every question it asks ends
// after it.
var began = time.Now()

// updated waits for a chat.update of ts whose outcome line is want,
// followed by when the question ended (since the tests began, and not
// after now: order, not how long ago).
func (h *harness) updated(t *testing.T, ts, want string) apiCall {
	t.Helper()
	var got apiCall
	testenv.CheckFor(t, wait, tick, func() error {
		var seen []string
		for _, c := range h.fake.Calls("chat.update") {
			if c.Str("ts") != ts {
				continue
			}
			for _, b := range blocksOf(c) {
				if b["block_id"] == "outcome" {
					line := b["elements"].([]any)[0].(map[string]any)["text"].(string)
					seen = append(seen, line)
					m := endedAt.FindStringSubmatch(line)
					if m == nil {
						continue
					}
					unix, _ := strconv.ParseInt(m[1], 10, 64)
					if ended := time.Unix(unix, 0); ended.Before(began.Truncate(time.Second)) || ended.After(time.Now()) {
						continue
					}
					if strings.TrimSuffix(line, m[0]) == want {
						got = c
						return nil
					}
				}
			}
		}
		return fmt.Errorf("no chat.update of %s saying %q and when it ended (saw %q)", ts, want, seen)
	})
	if actionsBlock(got) != "" {
		t.Errorf("updated card still has controls")
	}
	return got
}

func awaitOutcome(t *testing.T, env *testenv.Env, q *bridge.Question) *bridge.Resume {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	out, err := env.Agent.Await(ctx, q.Tenant, q.JobID, q.QuestionID)
	if err != nil {
		t.Fatalf("await %s: %v; %s", q.QuestionID, err, env.WhereIs(q))
	}
	return out
}

func publishQuestion(t *testing.T, env *testenv.Env, q *bridge.Question) {
	t.Helper()
	if err := env.Agent.Publish(context.Background(), q); err != nil {
		t.Fatal(err)
	}
}

func TestEndToEndClickResumesAndUpdatesCard(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	deliveries := collect[bridge.Delivery](t, env.NATS, bridge.PrefixDelivery+".>")
	q := question("job-1", "q-1")
	publishQuestion(t, env, q)
	card := h.posted(t, "q-1")

	// The first question opened the thread with a parent message.
	posts := h.fake.Calls("chat.postMessage")
	parent := posts[0]
	if parent.Str("thread_ts") != "" || !strings.Contains(parent.Str("blocks"), "job-1") ||
		!strings.Contains(parent.Str("blocks"), "acme-support") || consoleButton(parent) != "ask.acme.job-1.q-1.1|console.job" {
		t.Fatalf("thread parent: %s", parent.Form)
	}
	// Channel messages carry no console link: a link acts as its identity.
	for _, m := range []apiCall{parent, card} {
		if s := m.Str("blocks") + m.Str("text"); strings.Contains(s, "/console/") || strings.Contains(s, "slack:channel") || strings.Contains(s, "sig=") {
			t.Fatalf("a channel message carries a console link: %s", m.Form)
		}
	}
	if card.Str("channel") != "C0123" || card.Str("thread_ts") == "" {
		t.Fatalf("card not in a thread of C0123: %v", card.Form)
	}
	if parent.Auth != "Bearer xoxb-test-token" && parent.Str("token") != "xoxb-test-token" {
		t.Fatalf("bot token not sent")
	}
	d := deliveredTS(t, env.NATS, deliveries, "q-1")
	if !d.OK || d.Message == nil || d.Message.Channel != "C0123" || d.Message.Thread != card.Str("thread_ts") || d.Message.MessageID == "" {
		t.Fatalf("delivery report: %+v", d)
	}

	// A later question of the same job replies in the same thread.
	q2 := question("job-1", "q-2")
	publishQuestion(t, env, q2)
	card2 := h.posted(t, "q-2")
	if card2.Str("thread_ts") != card.Str("thread_ts") {
		t.Fatalf("second question in thread %q, first in %q", card2.Str("thread_ts"), card.Str("thread_ts"))
	}

	resp, body := h.interact(h.fake.click("U0KEV", "kevin", "trig-1", "C0123", d.Message.MessageID, actionsBlock(card), "choice.1", "blue", ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("click: %d %s", resp.StatusCode, body)
	}
	out := awaitOutcome(t, env, q)
	if out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: blue" || out.By != "slack:U0KEV" || out.ByName != "kevin" || out.Via != "slack" {
		t.Fatalf("resume: %+v", out)
	}
	up := h.updated(t, d.Message.MessageID, "Answered by @kevin: blue")
	if up.Str("channel") != "C0123" {
		t.Fatalf("update in channel %q", up.Str("channel"))
	}
	if n := len(h.fake.Calls("chat.postMessage")); n != 3 {
		t.Fatalf("%d messages posted, want parent + 2 cards", n)
	}
}

func TestEndToEndTypedModal(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	attempts := testenv.Published(t, env.NATS.Conn, bridge.AnswerSubject("acme", "job-2"))
	one := 1.0
	nine := 9.0
	q := question("job-2", "q-typed")
	q.Choices = nil
	q.Question = "When should I send the report, and how many copies?"
	q.Fields = []bridge.Field{{Name: "on", Kind: bridge.FieldDate, Label: "Send on", Required: true},
		{Name: "copies", Kind: bridge.FieldNumber, Integer: true, Min: &one, Max: &nine}}
	publishQuestion(t, env, q)
	card := h.posted(t, "q-typed")
	resp, _ := h.interact(h.fake.click("U0KEV", "kevin", "trig-open", "C0123", "1700000000.000002", actionsBlock(card), "answer", "answer", ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("Answer… click: %d", resp.StatusCode)
	}
	opens := h.fake.Calls("views.open")
	if len(opens) != 1 || opens[0].Str("trigger_id") != "trig-open" {
		t.Fatalf("views.open not called at once with the trigger id: %+v", opens)
	}
	view := opens[0].JSON["view"].(map[string]any)
	if view["callback_id"] != "ask.answer" || !strings.HasPrefix(view["private_metadata"].(string), "acme.job-2.q-typed.1|C0123|") {
		t.Fatalf("modal: %v", view)
	}

	// Invalid number: inline error on the copies block, nothing published.
	bad := submission("U0KEV", "kevin", opens[0], "V1", "h1", map[string]map[string]any{
		"f.on":     {"type": "datepicker", "selected_date": "2026-10-20"},
		"f.copies": {"type": "number_input", "value": "12"},
	})
	resp, body := h.interact(bad)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("submission: %d %s", resp.StatusCode, body)
	}
	var errs struct {
		ResponseAction string            `json:"response_action"`
		Errors         map[string]string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(body), &errs); err != nil || errs.ResponseAction != "errors" ||
		len(errs.Errors) != 1 || errs.Errors["f.copies"] != "must be at most 9" {
		t.Fatalf("inline errors: %s", body)
	}
	if n := attempts.Count(t); n != 0 {
		t.Fatalf("an invalid modal published %d attempts", n)
	}

	good := submission("U0KEV", "kevin", opens[0], "V1", "h2", map[string]map[string]any{
		"f.on":     {"type": "datepicker", "selected_date": "2026-10-20"},
		"f.copies": {"type": "number_input", "value": "2"},
	})
	resp, body = h.interact(good)
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(body) != "" {
		t.Fatalf("valid submission: %d %q (want an empty 200 that closes the modal)", resp.StatusCode, body)
	}
	out := awaitOutcome(t, env, q)
	if out.Outcome != bridge.OutcomeAnswered || string(out.Answer) != `{"on":"2026-10-20","copies":2}` ||
		out.Text != `The answer: {"on":"2026-10-20","copies":2}` {
		t.Fatalf("resume: %+v (answer %s)", out, out.Answer)
	}
	h.updated(t, h.cardTS(t, q), "Answered by @kevin: on: 2026-10-20, copies: 2")
	// The adapter records the card settled right after updating it in
	// Slack; a form submitted in between goes to the runtime, which refuses
	// it privately. Once recorded, the form itself says so.
	ref := refOf(&bridge.Event{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if rec, err := h.bot.loadCard(context.Background(), ref); err != nil || rec == nil || rec.Outcome == "" {
			return fmt.Errorf("card record not settled: %+v, %v", rec, err)
		}
		return nil
	})
	// A form left open elsewhere cannot answer a settled question; it
	// says who answered it and when, in the runtime's words.
	resp, body = h.interact(submission("U0KEV", "kevin", opens[0], "V1", "h3", map[string]map[string]any{
		"f.on": {"type": "datepicker", "selected_date": "2026-10-21"}}))
	late := regexp.MustCompile(`^\{"response_action":"errors","errors":\{"f.on":"This question was already answered by slack:U0KEV \(kevin\) at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\."\}\}$`)
	if resp.StatusCode != http.StatusOK || !late.MatchString(strings.TrimSpace(body)) {
		t.Fatalf("submission after settlement: %d %s", resp.StatusCode, body)
	}
	if n := attempts.Count(t); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
}

func TestEndToEndDeclineWithReason(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	q := question("job-3", "q-dec")
	publishQuestion(t, env, q)
	card := h.posted(t, "q-dec")
	d := h.cardTS(t, q)
	h.interact(h.fake.click("U0KEV", "kevin", "trig-dec", "C0123", d, actionsBlock(card), "decline", "decline", ""))
	opens := h.fake.Calls("views.open")
	if len(opens) != 1 || opens[0].JSON["view"].(map[string]any)["callback_id"] != "ask.decline" {
		t.Fatalf("decline modal not opened: %+v", opens)
	}
	resp, body := h.interact(submission("U0KEV", "kevin", opens[0], "V9", "h9", map[string]map[string]any{
		"reason": {"type": "plain_text_input", "value": "ask Ana"}}))
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(body) != "" {
		t.Fatalf("decline submission: %d %s", resp.StatusCode, body)
	}
	out := awaitOutcome(t, env, q)
	if out.Outcome != bridge.OutcomeDeclined || out.Text != "slack:U0KEV (kevin) declined to answer: ask Ana." {
		t.Fatalf("resume: %+v", out)
	}
	h.updated(t, d, "Declined by @kevin: ask Ana")
}

// cardTS is the card's ts as the fake assigned it.
func (h *harness) cardTS(t *testing.T, q *bridge.Question) string {
	t.Helper()
	var ts string
	testenv.CheckFor(t, wait, tick, func() error {
		rec, err := h.bot.loadCard(context.Background(), blockkit.RefOf(q))
		if err != nil || rec == nil || rec.TS == "" {
			return fmt.Errorf("card of %s not recorded (%v)", q.QuestionID, err)
		}
		ts = rec.TS
		return nil
	})
	return ts
}

func TestEndToEndApprovals(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	attempts := testenv.Published(t, env.NATS.Conn, bridge.AnswerSubject("acme", "job-4"))
	approve := question("job-4", "q-ok")
	approve.Kind, approve.Choices = bridge.KindApproval, nil
	approve.Question = "May I refund 120 EUR?"
	approve.Proposal = &bridge.Proposal{ID: "refund-1", Action: "refund", Summary: []string{"Refund 120 EUR", "Close the ticket"}}
	deny := *approve
	deny.QuestionID = "q-no"
	deny.Proposal = &bridge.Proposal{ID: "refund-2", Action: "refund", Summary: approve.Proposal.Summary}
	publishQuestion(t, env, approve)
	publishQuestion(t, env, &deny)
	cardOK := h.posted(t, "q-ok")
	cardNo := h.posted(t, "q-no")
	if !strings.Contains(cardOK.Str("blocks"), "Refund 120 EUR") {
		t.Fatalf("proposal not rendered: %s", cardOK.Str("blocks"))
	}
	tsOK := h.cardTS(t, approve)
	h.interact(h.fake.click("U0KEV", "kevin", "trig-ap", "C0123", tsOK, actionsBlock(cardOK), "approve", "approve", ""))
	out := awaitOutcome(t, env, approve)
	if out.Outcome != bridge.OutcomeAnswered || string(out.Answer) != `"approved"` || out.Text != "The answer: approved" {
		t.Fatalf("approved resume: %+v", out)
	}
	h.updated(t, tsOK, "Approved (not yet executed) by @kevin")

	tsNo := h.cardTS(t, &deny)
	h.interact(h.fake.click("U0KEV", "kevin", "trig-deny", "C0123", tsNo, actionsBlock(cardNo), "deny", "deny", ""))
	opens := h.fake.Calls("views.open")
	if len(opens) != 1 || opens[0].JSON["view"].(map[string]any)["callback_id"] != "ask.deny" {
		t.Fatalf("deny modal: %+v", opens)
	}
	// A denial needs its reason: an empty one stays in the modal.
	resp, body := h.interact(submission("U0KEV", "kevin", opens[0], "V5", "h5", map[string]map[string]any{}))
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"response_action":"errors"`) || !strings.Contains(body, `"reason":`) {
		t.Fatalf("a denial without a reason was not sent back to the modal: %d %s", resp.StatusCode, body)
	}
	if n := attempts.Count(t); n != 1 {
		t.Fatalf("%d attempts after the approval and an empty denial, want 1", n)
	}
	h.interact(submission("U0KEV", "kevin", opens[0], "V5", "h6", map[string]map[string]any{
		"reason": {"type": "plain_text_input", "value": "too expensive"}}))
	out = awaitOutcome(t, env, &deny)
	if out.Outcome != bridge.OutcomeAnswered || string(out.Answer) != `"denied"` || out.Text != "The answer: denied. Reason: too expensive." {
		t.Fatalf("denied resume: %+v", out)
	}
	h.updated(t, tsNo, "Denied by @kevin: too expensive")
}

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

// TestAnswerFormOnlyForThoseWhoMayAnswer checks the answer form, which
// shows more than the card (each field's description and options), is
// opened only for someone who may answer; others are told why, privately.
func TestAnswerFormOnlyForThoseWhoMayAnswer(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{Readers: []string{"slack:U0READ"}})
	q := question("job-form", "q-form")
	q.Choices = nil
	q.Fields = []bridge.Field{{Name: "tier", Kind: bridge.FieldChoice, Description: "SECRET-DESC", Options: []string{"SECRET-OPT-A", "SECRET-OPT-B"}}}
	publishQuestion(t, env, q)
	card := h.posted(t, "q-form")
	h.cardTS(t, q) // the card is recorded: a click on it is on a question askbridge showed
	for _, who := range []struct{ user, want string }{
		{"U0READ", "You can't answer this question: slack:U0READ is a reader: it may see that the question waits, but not answer or decline it."},
		{"U0NOBODY", "You can't answer this question: slack:U0NOBODY is not one of its answerers and has no operator, admin or owner role."},
	} {
		h.interact(h.fake.click(who.user, strings.ToLower(who.user), "trig-"+who.user, "C0123", "1700000000.000002", actionsBlock(card), "answer", "answer", ""))
		testenv.CheckFor(t, wait, tick, func() error {
			for _, c := range h.fake.Calls("response_url") {
				if c.JSON["text"] == who.want {
					return nil
				}
			}
			return fmt.Errorf("%s not told %q", who.user, who.want)
		})
	}
	if opens := h.fake.Calls("views.open"); len(opens) != 0 {
		t.Fatalf("views.open for someone who may not answer: %s", opens[0].JSON["view"])
	}
	h.interact(h.fake.click("U0KEV", "kevin", "trig-kev", "C0123", "1700000000.000002", actionsBlock(card), "answer", "answer", ""))
	if opens := h.fake.Calls("views.open"); len(opens) != 1 || !strings.Contains(fmt.Sprint(opens[0].JSON["view"]), "SECRET-OPT-A") {
		t.Fatalf("the answerer's form: %+v", opens)
	}
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

// TestAnswerFormWhenTheRuntimeCannotRead checks an answerer who clicks
// Answer… while the runtime cannot read its store is told to try again,
// not that they may not answer: the runtime's reply is an error about its
// store, not the "no question you can see" a stranger gets.
func TestAnswerFormWhenTheRuntimeCannotRead(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	q := question("job-ro", "q-ro")
	q.Choices = nil
	publishQuestion(t, env, q)
	card := h.posted(t, "q-ro")
	h.cardTS(t, q)
	// The service writes and checkpoints all the while: wait for its locks
	// as the store itself does rather than fail on SQLITE_BUSY.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(env.Dir, "askbridge.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("ALTER TABLE questions RENAME TO questions_away"); err != nil {
		t.Fatal(err)
	}
	h.interact(h.fake.click("U0KEV", "kevin", "trig-ro", "C0123", "1700000000.000002", actionsBlock(card), "answer", "answer", ""))
	want := "askbridge could not open the form just now. Please try again in a moment."
	testenv.CheckFor(t, wait, tick, func() error {
		var told []string
		for _, c := range h.fake.Calls("response_url") {
			told = append(told, fmt.Sprint(c.JSON["text"]))
		}
		if len(told) == 0 {
			return errors.New("the answerer was told nothing")
		}
		if told[0] != want {
			t.Fatalf("the answerer was told %q, want %q", told[0], want)
		}
		return nil
	})
}

// A form button (Decline) clicked on a card whose question ended (a client
// that has not redrawn it yet) opens no form and tells the clicker what
// ended it, in the runtime's words: who answered and when, or that it was
// cancelled.
func TestFormButtonOnAnEndedCardSaysWhatEndedIt(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{Operators: []string{"slack:U0ANA", "slack:U0KEV"}})
	q := question("job-late", "q-a")
	q.Answerers = nil
	publishQuestion(t, env, q)
	card := h.posted(t, "q-a")
	ts := h.cardTS(t, q)
	h.interact(h.fake.click("U0KEV", "kevin", "trig-win", "C0123", ts, actionsBlock(card), "choice.1", "blue", ""))
	awaitOutcome(t, env, q)
	h.updated(t, ts, "Answered by @kevin: blue")

	q2 := question("job-late", "q-b")
	q2.Answerers = nil
	publishQuestion(t, env, q2)
	card2 := h.posted(t, "q-b")
	ts2 := h.cardTS(t, q2)
	if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.CancelSubject("acme", "job-late"), "cancel-q-b",
		bridge.Cancel{Tenant: "acme", JobID: "job-late", QuestionID: "q-b"}); err != nil {
		t.Fatal(err)
	}
	awaitOutcome(t, env, q2)
	h.updated(t, ts2, "Cancelled")

	for _, c := range []struct {
		q                  *bridge.Question
		card               apiCall
		ts, trigger, wantR string
	}{
		{q, card, ts, "trig-late-a", `^This question was already answered by slack:U0KEV \(kevin\) at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\.$`},
		{q2, card2, ts2, "trig-late-b", `^This question was cancelled at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\.$`},
	} {
		testenv.CheckFor(t, wait, tick, func() error {
			if rec, err := h.bot.loadCard(context.Background(), blockkit.RefOf(c.q)); err != nil || rec == nil || rec.Outcome == "" {
				return fmt.Errorf("card record of %s not settled", c.q.QuestionID)
			}
			return nil
		})
		h.interact(h.fake.click("U0ANA", "ana", c.trigger, "C0123", c.ts, actionsBlock(c.card), "decline", "decline", ""))
		var said []string
		testenv.CheckFor(t, wait, tick, func() error {
			said = nil
			for _, r := range h.fake.Calls("response_url") {
				if text, _ := r.JSON["text"].(string); r.JSON["response_type"] == "ephemeral" {
					said = append(said, text)
				}
			}
			for _, s := range said {
				if regexp.MustCompile(c.wantR).MatchString(s) {
					return nil
				}
			}
			return fmt.Errorf("the clicker of %s was told %q, want %s", c.q.QuestionID, said, c.wantR)
		})
	}
	if n := len(h.fake.Calls("views.open")); n != 0 {
		t.Fatalf("%d forms opened for ended questions", n)
	}
}

// The same form submission delivered again (a Slack retry) after its
// answer ended the question is the same answer: the form closes as it did
// the first time, and nobody is told that the question was already
// answered by themselves.
func TestSubmissionDeliveredAgainAfterItEndedTheQuestion(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	attempts := testenv.Published(t, env.NATS.Conn, bridge.AnswerSubject("acme", "job-again"))
	q := question("job-again", "q-d")
	publishQuestion(t, env, q)
	card := h.posted(t, "q-d")
	ts := h.cardTS(t, q)
	h.interact(h.fake.click("U0KEV", "kevin", "trig-d", "C0123", ts, actionsBlock(card), "decline", "decline", ""))
	opens := h.fake.Calls("views.open")
	if len(opens) != 1 {
		t.Fatalf("%d forms opened", len(opens))
	}
	sub := submission("U0KEV", "kevin", opens[0], "V7", "h7", map[string]map[string]any{
		"reason": {"type": "plain_text_input", "value": "ask Ana"}})
	if resp, body := h.interact(sub); resp.StatusCode != http.StatusOK || strings.TrimSpace(body) != "" {
		t.Fatalf("submission: %d %q", resp.StatusCode, body)
	}
	if out := awaitOutcome(t, env, q); out.Outcome != bridge.OutcomeDeclined {
		t.Fatalf("resume %+v", out)
	}
	h.updated(t, ts, "Declined by @kevin: ask Ana")
	testenv.CheckFor(t, wait, tick, func() error {
		if rec, err := h.bot.loadCard(context.Background(), blockkit.RefOf(q)); err != nil || rec == nil || rec.Outcome == "" {
			return fmt.Errorf("card record not settled")
		}
		return nil
	})
	resp, body := h.interact(sub)
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(body) != "" {
		t.Errorf("the same submission again: %d %q, want the empty 200 that closes the form", resp.StatusCode, body)
	}
	if n := attempts.Count(t); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
	if n := len(h.fake.Calls("response_url")) + len(h.fake.Calls("chat.postEphemeral")); n != 0 {
		t.Errorf("kevin was told something %d times", n)
	}
}
