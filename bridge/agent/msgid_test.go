package agent_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestMessageIDsAreNotAnotherTenantsToTake: JetStream drops a message
// whose Nats-Msg-Id it saw in the last 10 minutes, from any subject of
// the stream. An agent of another tenant that publishes first, on its own
// subject, with the id a question, an execution report or a notice of
// tenant acme would have had under a predictable scheme, does not make
// acme's the duplicate.
func TestMessageIDsAreNotAnotherTenantsToTake(t *testing.T) {
	t.Parallel()
	n, err := bridge.ConnectNATS(context.Background(), bridge.NATSOptions{Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	c, err := agent.New(n.Conn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
	defer cancel()
	cases := []struct {
		stream, subject, evil, oldID string
		send                         func() error
	}{
		{bridge.StreamQuestions, bridge.QuestionSubject("acme", "job-1"), bridge.QuestionSubject("evil", "job-1"), "q.acme.job-1.q-1.1", func() error {
			return c.Publish(ctx, &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 1, Question: "Which colour?"})
		}},
		{bridge.StreamExecuted, bridge.ExecutedSubject("acme", "job-1"), bridge.ExecutedSubject("evil", "job-1"), "executed.acme.job-1.pr_1", func() error {
			return c.ReportExecution(ctx, bridge.Execution{Tenant: "acme", JobID: "job-1", ProposalID: "pr_1", Result: bridge.ResultSucceeded})
		}},
		{bridge.StreamNotices, bridge.NoticeSubject("acme", "job-1"), bridge.NoticeSubject("evil", "job-1"), "notice.acme.job-1.n-1", func() error {
			return c.Notify(ctx, &bridge.Notice{Tenant: "acme", JobID: "job-1", NoticeID: "n-1",
				Failure: bridge.Failure{Code: bridge.CodeCapabilityUnavailable, Dependency: "crm", Operation: "lookup"}})
		}},
	}
	for _, tc := range cases {
		if _, err := n.JS.Publish(ctx, tc.evil, []byte(`{}`), jetstream.WithMsgID(tc.oldID)); err != nil {
			t.Fatal(err)
		}
		if err := tc.send(); err != nil {
			t.Fatalf("%s: %v", tc.subject, err)
		}
		if got := testenv.StreamCount(t, n, tc.stream, tc.subject); got != 1 {
			t.Errorf("%s holds %d messages after acme's publish, want 1: it was dropped as a duplicate of %s's", tc.subject, got, tc.evil)
		}
	}
}
