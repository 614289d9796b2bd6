package slack

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

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
