package console

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// TestE2EDelegateAndSnooze asks someone else and snoozes from the
// question page, as the Slack and Discord cards do, against the real
// runtime: problems the console sees are shown under the form and nothing
// is sent; the runtime's word comes back on the page.
func TestE2EDelegateAndSnooze(t *testing.T) {
	t.Parallel()
	h, env := newEnvHarness(t, testenv.Options{Roles: runtime.Roles{Operators: []string{"console:op"}}})
	q := bridge.Question{Tenant: "acme", JobID: "job-d", QuestionID: "q-d", TaskVersion: 1, Question: "Which colour?",
		Choices: []string{"blue", "green"}, Answerers: []string{"console:alice"}}
	ask(t, h, env, q)
	link := h.questionURL("console:alice", q)
	p := h.get(link)
	for _, want := range []string{`<label for="delegate-to" id="delegate-label">Ask someone else</label>`, `<legend>Remind me later</legend>`,
		`<button type="submit" name="snooze" value="4h" class="secondary">In 4 hours</button>`, `aria-describedby="delegate-hint"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("question page lacks %q", want)
		}
	}
	sent := h.answersSent()
	for _, c := range []struct{ to, want string }{
		{"", "Say whom to ask: their identity, such as slack:U0DANA or console:dana."},
		{"dana", `The person to ask must be an identity askbridge knows, such as slack:U0DANA, discord:123456789012345678 or console:dana, not "dana".`},
		{"console:alice", "Pick someone else: you may answer it yourself."},
	} {
		form := formValues(t, h.get(link).body, "delegate-form")
		form.Set("action", "delegate")
		form.Set("delegate", c.to)
		p := h.post(link, form)
		if p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, `<p class="error" id="delegate-err">`+html.EscapeString(c.want)+`</p>`) ||
			!strings.Contains(p.body, `value="`+html.EscapeString(c.to)+`"`) || !strings.Contains(p.body, `aria-describedby="delegate-hint delegate-err"`) {
			t.Errorf("delegate to %q: status %d\n%s", c.to, p.status, p.body)
		}
	}
	if n := h.answersSent(); n != sent {
		t.Fatalf("a refused delegate was published (%d attempts, %d before)", n, sent)
	}

	form := formValues(t, h.get(link).body, "delegate-form")
	form.Set("action", "delegate")
	form.Set("delegate", "console:dana")
	p = h.decidedPage(h.post(link, form))
	if !strings.Contains(p.body, `<div class="alert alert-info" role="status" id="done"><p>console:alice asked console:dana to answer.</p></div>`) {
		t.Errorf("after the delegate:\n%s", p.body)
	}
	// Dana may answer now.
	if p := h.get(h.questionURL("console:dana", q)); !strings.Contains(p.body, `id="answer-form"`) {
		t.Errorf("dana's page has no answer form:\n%s", p.body)
	}

	form = formValues(t, h.get(link).body, "snooze-form")
	form.Set("snooze", "4h")
	p = h.decidedPage(h.post(link, form))
	if !regexp.MustCompile(`id="done"><p>I&#39;ll remind you of this question at [^<]+</p>`).MatchString(p.body) {
		t.Errorf("after the snooze:\n%s", p.body)
	}
	form = formValues(t, h.get(link).body, "snooze-form")
	form.Set("snooze", "2h")
	if p := h.post(link, form); p.status != http.StatusUnprocessableEntity ||
		!strings.Contains(p.body, `<p class="error" id="snooze-err">Pick when to be reminded: in 1 hour, in 4 hours, tomorrow at 09:00.</p>`) {
		t.Errorf("snooze for 2h: status %d\n%s", p.status, p.body)
	}

	// An operator is not reminded of a question with answerers: the
	// runtime refuses, and the page says so under the form.
	op := h.questionURL("console:op", q)
	form = formValues(t, h.get(op).body, "snooze-form")
	form.Set("snooze", "1h")
	p = h.decidedPage(h.post(op, form))
	if !strings.Contains(p.body, `<p class="error" id="snooze-err">You are not reminded of this question`) {
		t.Errorf("operator's snooze:\n%s", p.body)
	}
}
