package console

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

const leakedToken = "xoxb-1234567890-0987654321-AbCdEfGhIjKl"

func crmNotice(job string) bridge.Notice {
	return bridge.Notice{Tenant: "acme", JobID: job, NoticeID: "n-1", Agent: "acme-support", Failure: bridge.Failure{
		Code: bridge.CodeAccessDenied, Dependency: "crm", Operation: "export_contacts",
		RequiredCapability: "crm:export", SafeFallback: "I can summarise the contacts I already have.",
		OperatorMessage: "The CRM answered 403 to " + leakedToken + "."}}
}

// checkNoticeSection checks the job page shows the notice as a card with
// the five parts in order, no controls, the token masked.
func checkNoticeSection(t *testing.T, body string) {
	t.Helper()
	start := strings.Index(body, `<section class="card notice">`)
	if start < 0 {
		t.Fatalf("no notice card on the job page:\n%s", body)
	}
	sec := body[start:]
	sec = sec[:strings.Index(sec, "</section>")]
	if strings.Contains(body, "xoxb-1234") || !strings.Contains(sec, "[masked]") {
		t.Errorf("the token is not masked:\n%s", sec)
	}
	for _, control := range []string{"<form", "<button", "<input"} {
		if strings.Contains(sec, control) {
			t.Errorf("the notice card has a control (%s):\n%s", control, sec)
		}
	}
	last := -1
	for _, label := range card.NoticeLabels {
		at := strings.Index(sec, "<dt>"+label+"</dt>")
		if at <= last {
			t.Errorf("%s is missing or out of order:\n%s", label, sec)
		}
		last = at
	}
	for _, want := range []string{"acme-support met a failure in job", "Access denied (ACCESS_DENIED)", "export_contacts on crm",
		"<dd>crm:export</dd>", "I can summarise the contacts I already have.", "Someone giving the agent crm:export on crm."} {
		if !strings.Contains(sec, want) {
			t.Errorf("the notice card does not say %q:\n%s", want, sec)
		}
	}
}

// TestJobPageShowsNotices: the job page shows a job's notices, from the
// trace, as cards without controls; a reader who may not read them sees
// only that a failure was reported.
func TestJobPageShowsNotices(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	q := bridge.Question{Tenant: "acme", JobID: "job-n", QuestionID: "q-1", TaskVersion: 1, Question: "Which colour?",
		Choices: []string{"red", "blue"}, Answerers: []string{"console:alice"}}
	h.rt.add(q)
	n := crmNotice("job-n")
	n.At = time.Date(2026, 10, 20, 10, 0, 0, 0, time.UTC)
	h.rt.addNotice(n)
	p := h.get(h.signer.JobURL("console:alice", "acme", "job-n", time.Hour))
	if p.status != 200 {
		t.Fatalf("status %d\n%s", p.status, p.body)
	}
	checkNoticeSection(t, p.body)
	if !strings.Contains(p.body, `<time datetime="2026-10-20T10:00:00Z">`) {
		t.Errorf("the notice's time is not shown:\n%s", p.body)
	}
	reader := h.get(h.signer.JobURL("console:reader", "acme", "job-n", time.Hour))
	if !strings.Contains(reader.body, "A failure was reported here; you may not read it.") || strings.Contains(reader.body, "crm") {
		t.Errorf("a reader's job page:\n%s", reader.body)
	}
	none := h.get(h.signer.JobURL("console:alice", "acme", "job-other", time.Hour))
	if strings.Contains(none.body, "notice") || !strings.Contains(none.body, "This job has no questions you may see.") {
		t.Errorf("a job without notices:\n%s", none.body)
	}
}

// TestE2ENoticeOnTheJobPage: a notice an agent publishes reaches the job
// page through the runtime, masked.
func TestE2ENoticeOnTheJobPage(t *testing.T) {
	t.Parallel()
	h, env := newEnvHarness(t, testenv.Options{Roles: runtime.Roles{Operators: []string{"console:alice"}}})
	n := crmNotice("job-ne")
	if err := env.Agent.Notify(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	link := h.signer.JobURL("console:alice", "acme", "job-ne", time.Hour)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if !strings.Contains(h.get(link).body, `class="card notice"`) {
			return fmt.Errorf("no notice on the job page yet")
		}
		return nil
	})
	checkNoticeSection(t, h.get(link).body)
}
