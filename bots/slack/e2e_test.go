package slack

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
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
	return h.updatedBy(t, ts, want, time.Now)
}

// updatedBy is updated for a question that ended by the clock now.
func (h *harness) updatedBy(t *testing.T, ts, want string, now func() time.Time) apiCall {
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
					if ended := time.Unix(unix, 0); ended.Before(began.Truncate(time.Second)) || ended.After(now()) {
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
