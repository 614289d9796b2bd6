package console

import (
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// The job page, where nudges link, shows the job's pending questions in
// queue order above its questions.
func TestE2EJobPageShowsTheQueue(t *testing.T) {
	t.Parallel()
	h, env := newEnvHarness(t, testenv.Options{})
	for _, c := range []struct{ id, priority, text string }{
		{"q-low", bridge.PriorityLow, "Should the footer name the team?"},
		{"q-high", bridge.PriorityHigh, "How many copies?"},
	} {
		ask(t, h, env, bridge.Question{Tenant: "acme", JobID: "job-qp", QuestionID: c.id, TaskVersion: 1, Priority: c.priority,
			Question: c.text, Answerers: []string{"console:alice"}, BlockedTools: []string{"send_report"}})
	}
	job := h.get(h.signer.JobURL("console:alice", "acme", "job-qp", time.Hour)).body
	i := strings.Index(job, `<table class="queue">`)
	if i < 0 {
		t.Fatalf("no queue on the job page:\n%s", job)
	}
	table := job[i : i+strings.Index(job[i:], "</table>")]
	high, low := strings.Index(table, "How many copies?</a></td><td>high</td><td>0</td>"), strings.Index(table, "Should the footer name the team?</a></td><td>low</td><td>0</td>")
	// How long each waited, in words: the questions were asked just now.
	if high < 0 || low < 0 || high > low || !strings.Contains(table, "<td>send_report</td>") || !strings.Contains(table, "<td>less than a minute</td>") {
		t.Fatalf("queue table:\n%s", table)
	}
}
