package slack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// operators is the role set of these tests: U0OP is an operator, U0READ a
// reader, U0ADM an admin; the questions name U0KEV as their answerer.
var operators = runtime.Roles{Operators: []string{"slack:U0OP"}, Readers: []string{"slack:U0READ"}, Admins: []string{"slack:U0ADM"}}

// slashReply runs /ask as user and returns the ephemeral reply.
func slashReply(t *testing.T, h *harness, user, text string) string {
	t.Helper()
	resp, body := h.command(user, strings.ToLower(user), text, "trig-"+strconv.FormatInt(time.Now().UnixNano(), 10))
	var r commandReply
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil || r.ResponseType != "ephemeral" {
		t.Fatalf("/ask %s: %d %s", text, resp.StatusCode, body)
	}
	return r.Text
}

// toldPrivately waits for an ephemeral reply with text want.
func toldPrivately(t *testing.T, h *harness, want string) {
	t.Helper()
	testenv.CheckFor(t, wait, tick, func() error {
		var got []string
		for _, c := range h.fake.Calls("response_url") {
			if c.JSON["text"] == want {
				return nil
			}
			got = append(got, fmt.Sprint(c.JSON["text"]))
		}
		return fmt.Errorf("not told %q; told %q", want, got)
	})
}

// TestOperatorAnswersForTheNamedAnswerer checks answerers add people: the
// question asks Kevin, and an operator answers it, by a choice button
// (signed block_actions) and by the typed form (view_submission).
func TestOperatorAnswersForTheNamedAnswerer(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, operators)
	q := question("job-oncall", "q-click")
	publishQuestion(t, env, q)
	card := h.posted(t, "q-click")
	h.interact(h.fake.click("U0OP", "olga", "trig-op1", "C0123", h.cardTS(t, q), actionsBlock(card), "choice.1", "blue", ""))
	if out := awaitOutcome(t, env, q); out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: blue" || out.By != "slack:U0OP" {
		t.Fatalf("resume: %+v", out)
	}

	typed := question("job-oncall", "q-form")
	typed.Choices = nil
	typed.Fields = []bridge.Field{{Name: "copies", Kind: bridge.FieldNumber, Integer: true, Required: true}}
	publishQuestion(t, env, typed)
	card = h.posted(t, "q-form")
	h.interact(h.fake.click("U0OP", "olga", "trig-op2", "C0123", h.cardTS(t, typed), actionsBlock(card), "answer", "answer", ""))
	var opened apiCall
	testenv.CheckFor(t, wait, tick, func() error {
		for _, c := range h.fake.Calls("views.open") {
			if c.Str("trigger_id") == "trig-op2" {
				opened = c
				return nil
			}
		}
		return fmt.Errorf("no form opened for the operator; told %d times", len(h.fake.Calls("response_url")))
	})
	resp, body := h.interact(submission("U0OP", "olga", opened, "V-op", "h-op", map[string]map[string]any{
		"f.copies": {"type": "number_input", "value": "3"}}))
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(body) != "" {
		t.Fatalf("submission: %d %q", resp.StatusCode, body)
	}
	if out := awaitOutcome(t, env, typed); out.Outcome != bridge.OutcomeAnswered || out.Text != `The answer: {"copies":3}` || out.By != "slack:U0OP" {
		t.Fatalf("resume: %+v", out)
	}
}

// TestRestrictedQuestionOperatorDeclinesUnseen checks an operator may not
// read or answer a restricted question, is told why, and declines it from
// its card without seeing it; /ask shows it to its answerer and an admin.
func TestRestrictedQuestionOperatorDeclinesUnseen(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, operators)
	q := question("job-secret", "q-secret")
	q.Question, q.WhyItMatters = "Which salary band should the offer use?", "The offer goes out today."
	q.Choices = []string{"band-4", "band-5"}
	q.Visibility = bridge.VisibilityRestricted
	publishQuestion(t, env, q)
	card := h.posted(t, "q-secret")
	secrets := []string{q.Question, q.WhyItMatters, "band-4", "band-5"}
	hides := func(what, s string) {
		t.Helper()
		for _, secret := range secrets {
			if strings.Contains(s, secret) {
				t.Errorf("%s shows %q: %s", what, secret, s)
			}
		}
	}
	hides("the channel card", string(card.Body))

	// /ask: the answerer and an admin read it; the operator and a reader
	// learn that it waits and for whom.
	for _, user := range []string{"U0KEV", "U0ADM"} {
		if s := slashReply(t, h, user, "show job-secret/q-secret"); !strings.Contains(s, q.Question) || !strings.Contains(s, "band-4 | band-5") {
			t.Errorf("%s's /ask show: %q", user, s)
		}
	}
	const waits = "`job-secret/q-secret` (acme) — A restricted question waits for <@U0KEV>, <@U0OWNER> and admins; only they may read it."
	for _, user := range []string{"U0OP", "U0READ"} {
		for _, cmd := range []string{"show job-secret/q-secret", "list"} {
			s := slashReply(t, h, user, cmd)
			hides(user+"'s /ask "+cmd, s)
			if !strings.Contains(s, waits) {
				t.Errorf("%s's /ask %s: %q, want %q in it", user, cmd, s, waits)
			}
		}
	}
	if s := slashReply(t, h, "U0OP", "list"); !strings.Contains(s, "You may decline it: `/ask decline job-secret/q-secret [reason]`.") {
		t.Errorf("the operator is not told they may decline: %q", s)
	}

	// The operator's answer is refused, privately, saying why.
	if s := slashReply(t, h, "U0OP", "answer job-secret/q-secret band-4"); !strings.Contains(s, "Sent your answer") {
		t.Fatalf("/ask answer: %q", s)
	}
	toldPrivately(t, h, "You can't answer this question: it is restricted to slack:U0KEV, slack:U0OWNER and admins; you may decline it without seeing it.")

	// Decline from the card: the form shows nothing of the question.
	h.interact(h.fake.click("U0OP", "olga", "trig-opdec", "C0123", h.cardTS(t, q), actionsBlock(card), "decline", "decline", ""))
	var opened apiCall
	testenv.CheckFor(t, wait, tick, func() error {
		for _, c := range h.fake.Calls("views.open") {
			if c.Str("trigger_id") == "trig-opdec" {
				opened = c
				return nil
			}
		}
		return fmt.Errorf("no decline form opened")
	})
	if opened.JSON["view"].(map[string]any)["callback_id"] != "ask.decline" {
		t.Fatalf("form: %s", opened.Body)
	}
	hides("the decline form", string(opened.Body))
	resp, body := h.interact(submission("U0OP", "olga", opened, "V-dec", "h-dec", map[string]map[string]any{
		"reason": {"type": "plain_text_input", "value": "Kevin is on leave; ask HR"}}))
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(body) != "" {
		t.Fatalf("decline submission: %d %q", resp.StatusCode, body)
	}
	if out := awaitOutcome(t, env, q); out.Outcome != bridge.OutcomeDeclined || out.Text != "slack:U0OP (olga) declined to answer: Kevin is on leave; ask HR." {
		t.Fatalf("resume: %+v", out)
	}
}

// TestRestrictedReminderToOperators checks the DM reminding operators of a
// restricted question that names no answerers carries none of its content,
// while the owner's escalation does.
func TestRestrictedReminderToOperators(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	h := startBot(t, n, newFakeSlack(t))
	q := question("job-rem", "q-rem")
	q.Question, q.Answerers, q.Visibility = "Which salary band should the offer use?", nil, bridge.VisibilityRestricted
	now := time.Now().UTC()
	for i, ev := range []bridge.Event{
		{Type: bridge.EventReminded, Step: bridge.TargetAnswerers, Targets: []string{"slack:U0OP"}},
		{Type: bridge.EventEscalated, Step: bridge.TargetOwner, Targets: []string{"slack:U0OWNER"}},
	} {
		ev.EventID = fmt.Sprintf("ev-rem-%d", i)
		ev.Tenant, ev.JobID, ev.QuestionID, ev.TaskVersion = q.Tenant, q.JobID, q.QuestionID, q.TaskVersion
		ev.Question, ev.State, ev.At, ev.AskedAt, ev.Deadline = q, bridge.StatePending, now, now, now.Add(4*time.Hour)
		publishEvent(t, n, ev)
	}
	dm := map[string]string{}
	testenv.CheckFor(t, wait, tick, func() error {
		for _, c := range h.fake.Calls("chat.postMessage") {
			dm[c.Str("channel")] = c.Str("text")
		}
		if dm["D0OP"] == "" || dm["D0OWNER"] == "" {
			return fmt.Errorf("DMs so far: %v", dm)
		}
		return nil
	})
	if s := dm["D0OP"]; strings.Contains(s, q.Question) || strings.Contains(s, "red") ||
		!strings.HasPrefix(s, ":bell: Reminder, in job `job-rem`: A restricted question waits for <@U0OWNER> and admins; only they may read it. You may decline it.") {
		t.Errorf("operator's DM: %q", s)
	}
	if s := dm["D0OWNER"]; !strings.Contains(s, q.Question) {
		t.Errorf("owner's DM: %q", s)
	}
}
