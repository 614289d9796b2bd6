package agent_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/internal/testenv"
)

// An agent retires one question and says another was answered in the
// conversation: each call returns once the runtime decided, and the job
// reads cancelled with the status. A cancel that breaks the rules is
// refused before it is sent.
func TestRetireAndAnsweredInConversation(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, id := range []string{"q-1", "q-2"} {
		if err := env.Agent.Publish(ctx, &bridge.Question{Tenant: "acme", JobID: "job-r", QuestionID: id, TaskVersion: 1,
			Question: "Which colour?", Choices: []string{"red", "blue"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := env.Agent.AnsweredInConversation(ctx, "acme", "job-r", "", "blue"); err == nil ||
		err.Error() != "agent: cancel: question_id: name the question the person answered: evidence answers one question, not every question of the job" {
		t.Fatalf("a job-wide implicit answer: %v", err)
	}
	d, err := env.Agent.Retire(ctx, "acme", "job-r", "q-1", "the customer changed the subject")
	if err != nil || d.Ended != 1 {
		t.Fatalf("retire: %+v, %v", d, err)
	}
	d, err = env.Agent.AnsweredInConversation(ctx, "acme", "job-r", "q-2", "blue, as last time")
	if err != nil || d.Ended != 1 {
		t.Fatalf("answered in conversation: %+v, %v", d, err)
	}
	for id, want := range map[string]string{"q-1": "No longer needed: the customer changed the subject.", "q-2": "Answered in conversation: “blue, as last time”."} {
		out, err := env.Agent.Await(ctx, "acme", "job-r", id)
		if err != nil || out.Outcome != bridge.OutcomeCanceled || out.Text != want {
			t.Errorf("%s: %+v, %v", id, out, err)
		}
	}
	// A person's role is needed to cancel as a person; the refusal comes back.
	_, err = env.Agent.Cancel(ctx, bridge.Cancel{Tenant: "acme", JobID: "job-r", By: "slack:U0NOBODY"})
	if !errors.Is(err, agent.ErrCancelRefused) {
		t.Fatalf("a stranger's cancel: %v", err)
	}
}
