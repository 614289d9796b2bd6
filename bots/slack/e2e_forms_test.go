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
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

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

// TestFormWhenTheRuntimeDoesNotAnswer: a form button on a card this
// adapter does not remember (a restart), clicked while the runtime
// answers no lookup, tells the person to try again, not that the
// question is gone: nothing is known of it.
func TestFormWhenTheRuntimeDoesNotAnswer(t *testing.T) {
	t.Parallel()
	n := plainNATS(t) // no runtime: every lookup goes unanswered
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	h.interact(fake.click("U0KEV", "kevin", "trig-away", "C0123", "1700000000.000002", "ask.acme.job-away.q-away.1", "decline", "decline", ""))
	testenv.CheckFor(t, wait, tick, func() error {
		var told []string
		for _, c := range fake.Calls("response_url") {
			told = append(told, fmt.Sprint(c.JSON["text"]))
		}
		if len(told) == 0 {
			return errors.New("the clicker was told nothing")
		}
		if len(told) != 1 || told[0] != formTryAgain {
			t.Fatalf("the clicker was told %q, want %q", told, formTryAgain)
		}
		return nil
	})
	if opens := fake.Calls("views.open"); len(opens) != 0 {
		t.Fatalf("views.open with nothing known of the question: %s", opens[0].JSON["view"])
	}
}
