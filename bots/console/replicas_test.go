package console

import (
	"net/http"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/internal/testenv"
)

// TestE2ERefusalShownOnAnotherReplica checks a refusal is shown, with the
// input kept, on the page the POST redirects to when that page is served
// by another replica (a load balancer without sticky sessions).
func TestE2ERefusalShownOnAnotherReplica(t *testing.T) {
	t.Parallel()
	h, env := newEnvHarness(t, testenv.Options{})
	other := &harness{t: t, n: env.NATS, logs: &testenv.LockedBuffer{}}
	other.start(env.NATS)
	q := reportQuestion("job-r2")
	ask(t, h, env, q)
	link := h.questionURL("console:alice", q)
	form := formValues(t, h.get(link).body, "answer-form")
	form.Set("action", "answer")
	form.Set("f.on", "2026-10-20")
	form.Set("f.copies", "3")
	form.Set("task_version", "2") // the page was drawn for an older version
	p := h.post(link, form)
	if p.status != http.StatusSeeOther {
		t.Fatalf("status %d\n%s", p.status, p.body)
	}
	p = other.decidedPage(p)
	for _, want := range []string{`id="refusal"><p>This answer is stale: it belongs to task version 2`, `name="f.on" value="2026-10-20"`, `name="f.copies" value="3"`, `id="answer-form"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the other replica's page lacks %q\n%s", want, p.body)
		}
	}
}
