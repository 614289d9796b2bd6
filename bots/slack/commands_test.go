package slack

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// TestAskCommandReadsWhatWasTyped checks /ask reads words as a person
// types them in Slack: separated by a line break (shift+enter), a tab or
// a no-break space as by a space, and an id copied with the backticks
// /ask list and /ask show print it in.
func TestAskCommandReadsWhatWasTyped(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	cases := []struct {
		text string // %s: the job and question
		want string // the agent reads
	}{
		{"answer\n%s blue", "The answer: blue"},
		{"answer %s\nblue", "The answer: blue"},
		{"answer\t%s\tblue", "The answer: blue"},
		{"answer\u00a0%s\u00a0blue", "The answer: blue"},
		{"  answer   `%s`   blue  ", "The answer: blue"},
		{"decline %s\nask Ana\nor Bo", "slack:U0KEV (u0kev) declined to answer: ask Ana\nor Bo."},
	}
	for i, c := range cases {
		job := "job-typed-" + strconv.Itoa(i)
		q := question(job, "q-typed-"+strconv.Itoa(i))
		publishQuestion(t, env, q)
		h.posted(t, q.QuestionID)
		text := strings.ReplaceAll(c.text, "%s", job+"/"+q.QuestionID)
		resp, body := h.command("U0KEV", "u0kev", text, "trig-typed-"+strconv.Itoa(i))
		var r commandReply
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &r) != nil || !strings.HasPrefix(r.Text, "Sent your") {
			t.Fatalf("/ask %q: %d %s", text, resp.StatusCode, body)
		}
		if out := awaitOutcome(t, env, q); out.Outcome == bridge.OutcomeInvalid || out.Text != c.want {
			t.Errorf("/ask %q: the agent read %q, want %q", text, out.Text, c.want)
		}
	}
}

// TestAskCommandTakesObjectsTypedWithCurlyQuotes checks a typed-fields
// answer typed on a keyboard that puts in curly quotes ({“copies”: 2},
// phones and macOS by default) is read as the JSON object meant.
func TestAskCommandTakesObjectsTypedWithCurlyQuotes(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	one := 1.0
	cases := []struct{ typed, want string }{
		{"{\u201ccopies\u201d: 2, \u201cnote\u201d: \u201cit\u2019s late\u201d}", `The answer: {"copies":2,"note":"it’s late"}`},
		{"{\u201ecopies\u201c: 3}", `The answer: {"copies":3}`},
		// Valid JSON is taken as typed, curly quotes inside strings too.
		{"{\"copies\": 4, \"note\": \"\u201cASAP\u201d\"}", `The answer: {"copies":4,"note":"“ASAP”"}`},
	}
	for i, c := range cases {
		q := question("job-curly-"+strconv.Itoa(i), "q-curly-"+strconv.Itoa(i))
		q.Choices = nil
		q.Fields = []bridge.Field{{Name: "copies", Kind: bridge.FieldNumber, Integer: true, Min: &one, Required: true},
			{Name: "note", Kind: bridge.FieldText}}
		publishQuestion(t, env, q)
		h.posted(t, q.QuestionID)
		text := "answer " + q.JobID + "/" + q.QuestionID + " " + c.typed
		resp, body := h.command("U0KEV", "u0kev", text, "trig-curly-"+strconv.Itoa(i))
		var r commandReply
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &r) != nil || !strings.HasPrefix(r.Text, "Sent your answer") {
			t.Fatalf("/ask %s: %d %s", text, resp.StatusCode, body)
		}
		if out := awaitOutcome(t, env, q); out.Text != c.want {
			t.Errorf("/ask %s: the agent read %q, want %q", text, out.Text, c.want)
		}
	}
}

// TestAskCancelOfAnEndedQuestionSaysSo checks /ask cancel of a question
// that no longer waits says so at once: the runtime ends only waiting
// questions, so the cancel would change nothing and nobody would say so.
func TestAskCancelOfAnEndedQuestionSaysSo(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{Admins: []string{"slack:U0ADM"}})
	cancels := testenv.Published(t, env.NATS.Conn, bridge.CancelSubject("acme", "job-cx"))
	q := question("job-cx", "q-cx")
	publishQuestion(t, env, q)
	h.posted(t, q.QuestionID)
	if _, body := h.command("U0KEV", "u0kev", "answer job-cx/q-cx blue", "trig-cx-1"); !strings.Contains(body, "Sent your answer") {
		t.Fatalf("answer: %s", body)
	}
	awaitOutcome(t, env, q)
	_, body := h.command("U0ADM", "u0adm", "cancel job-cx/q-cx", "trig-cx-2")
	var r commandReply
	if json.Unmarshal([]byte(body), &r) != nil || r.Text != "`job-cx/q-cx` no longer waits (answered): there is nothing to cancel." {
		t.Fatalf("cancel of an answered question: %s", body)
	}
	if n := cancels.Count(t); n != 0 {
		t.Fatalf("%d cancels published for an answered question", n)
	}
}

func TestAskCommand(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{Admins: []string{"slack:U0ADM"}, Readers: []string{"slack:U0READ"}})
	attempts := testenv.Published(t, env.NATS.Conn, bridge.AnswerSubject("acme", "job-cmd"))
	q1 := question("job-cmd", "q-c1")
	q2 := question("job-cmd", "q-c2")
	q3 := question("job-cmd", "q-c3")
	q4 := question("job-cmd", "q-c4")
	for _, q := range []*bridge.Question{q1, q2, q3, q4} {
		publishQuestion(t, env, q)
	}
	h.posted(t, "q-c4")
	reply := func(user, text string) string {
		t.Helper()
		resp, body := h.command(user, strings.ToLower(user), text, "trig-"+strconv.FormatInt(time.Now().UnixNano(), 10))
		var r commandReply
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &r) != nil || r.ResponseType != "ephemeral" {
			t.Fatalf("/ask %s: %d %s", text, resp.StatusCode, body)
		}
		return r.Text
	}
	if s := reply("U0KEV", "help"); !strings.Contains(s, "/ask list") || !strings.Contains(s, "/ask cancel") || !strings.Contains(s, "`<tenant>/<job_id>/<question_id>`") {
		t.Fatalf("help: %q", s)
	}
	if s := reply("U0KEV", "list"); !strings.Contains(s, "`job-cmd/q-c1`") || !strings.Contains(s, "Which colour") ||
		!strings.Contains(s, "https://ask.example.com/console/q/acme/job-cmd/q-c1?") {
		t.Fatalf("list for an answerer: %q", s)
	}
	// A reader learns that questions wait, not what they ask.
	if s := reply("U0READ", "list"); !strings.Contains(s, "`job-cmd/q-c1`") || strings.Contains(s, "Which colour") {
		t.Fatalf("list for a reader: %q", s)
	}
	if s := reply("U0KEV", "show q-c1"); !strings.Contains(s, "Which colour") || !strings.Contains(s, "Choices: red | blue") || !strings.Contains(s, "State: pending") {
		t.Fatalf("show: %q", s)
	}
	if s := reply("U0KEV", "show bad/id/x/y"); !strings.Contains(s, "is not a question id") {
		t.Fatalf("show with a bad id: %q", s)
	}
	if s := reply("U0KEV", "answer job-cmd/q-c1 purple"); !strings.Contains(s, "Not sent: answer: must be one of: red, blue") {
		t.Fatalf("invalid answer: %q", s)
	}
	if s := reply("U0KEV", "answer job-cmd/q-c1 blue"); !strings.Contains(s, "Sent your answer") {
		t.Fatalf("answer: %q", s)
	}
	if out := awaitOutcome(t, env, q1); out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: blue" || out.By != "slack:U0KEV" {
		t.Fatalf("answer resume: %+v", out)
	}
	if s := reply("U0KEV", "decline q-c2 ask Ana"); !strings.Contains(s, "Sent your decline") {
		t.Fatalf("decline: %q", s)
	}
	if out := awaitOutcome(t, env, q2); out.Outcome != bridge.OutcomeDeclined || out.Text != "slack:U0KEV (u0kev) declined to answer: ask Ana." {
		t.Fatalf("decline resume: %+v", out)
	}
	// A stranger's answer typed in /ask is refused privately, via the response_url.
	// A stranger may not even see the question: told so at once, nothing sent.
	if s := reply("U0BAD", "answer job-cmd/q-c4 red"); !strings.HasPrefix(s, "`job-cmd/q-c4`: ") || strings.Contains(s, "Which colour") || strings.Contains(s, "Sent") {
		t.Fatalf("stranger's answer: %q", s)
	}
	if n := attempts.Count(t); n != 2 {
		t.Fatalf("%d attempts, want the answer and the decline only", n)
	}
	// An operator may not cancel: the runtime's refusal reaches them privately.
	if s := reply("U0KEV", "cancel job-cmd/q-c3"); !strings.Contains(s, "Asked askbridge to cancel `job-cmd/q-c3`") {
		t.Fatalf("operator's cancel: %q", s)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, c := range h.fake.Calls("response_url") {
			if c.JSON["text"] == "You can't cancel questions: that needs the admin or owner role." {
				return nil
			}
		}
		return fmt.Errorf("no cancel refusal among %d response_url posts", len(h.fake.Calls("response_url")))
	})
	if s := reply("U0ADM", "cancel job-cmd/q-c3"); !strings.Contains(s, "Asked askbridge to cancel `job-cmd/q-c3`") {
		t.Fatalf("cancel: %q", s)
	}
	if out := awaitOutcome(t, env, q3); out.Outcome != bridge.OutcomeCanceled {
		t.Fatalf("cancel resume: %+v", out)
	}
	h.updated(t, h.cardTS(t, q3), "Cancelled: cancelled from Slack by slack:U0ADM")
	if s := reply("U0KEV", "frobnicate"); !strings.Contains(s, "I don't know `frobnicate`") {
		t.Fatalf("unknown subcommand: %q", s)
	}
}

// TestAskCommandTextIsUnescaped checks /ask reads the text as the person
// typed it: Slack sends & < > in a slash command as &amp; &lt; &gt;.
func TestAskCommandTextIsUnescaped(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	q1 := question("job-ent", "q-e1")
	q1.Choices = []string{"Black & white", "Colour"}
	q2 := question("job-ent2", "q-e2")
	q2.Choices = nil
	q3 := question("job-ent3", "q-e3")
	for _, q := range []*bridge.Question{q1, q2, q3} {
		publishQuestion(t, env, q)
		h.posted(t, q.QuestionID)
	}
	for i, c := range []struct{ text, want string }{
		{"answer job-ent/q-e1 Black &amp; white", "The answer: Black & white"},
		{"answer job-ent2/q-e2 R&amp;D &lt;ops&gt; &amp;lt;", "The answer: R&D <ops> &lt;"},
		{"decline job-ent3/q-e3 ask &lt;Ana&gt; &amp; Bo", "slack:U0KEV (u0kev) declined to answer: ask <Ana> & Bo."},
	} {
		resp, body := h.command("U0KEV", "u0kev", c.text, "trig-ent-"+strconv.Itoa(i))
		if resp.StatusCode != 200 || !strings.Contains(body, "Sent your") {
			t.Fatalf("/ask %s: %d %s", c.text, resp.StatusCode, body)
		}
		if out := awaitOutcome(t, env, []*bridge.Question{q1, q2, q3}[i]); out.Text != c.want {
			t.Errorf("/ask %s: the agent read %q, want %q", c.text, out.Text, c.want)
		}
	}
}
