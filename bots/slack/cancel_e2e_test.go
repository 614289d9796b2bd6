package slack

import (
	"context"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/runtime"
)

// A retired and an implicitly answered question: each card says why it
// ended, the agent reads cancelled with the status and the same words,
// show's audit keeps the reason and the evidence, and neither is pending
// nor in the job's queue.
func TestEndToEndRetiredAndImplicitlyAnswered(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{Admins: []string{"cli:admin"}})
	ctx := context.Background()
	retired, implicit, stays := question("job-conv", "q-ret"), question("job-conv", "q-imp"), question("job-conv", "q-stay")
	for _, q := range []*bridge.Question{retired, implicit, stays} {
		publishQuestion(t, env, q)
		h.posted(t, q.QuestionID)
	}
	retiredTS, implicitTS := h.cardTS(t, retired), h.cardTS(t, implicit)

	for id, c := range map[string]bridge.Cancel{
		"cancel-ret": {Tenant: "acme", JobID: "job-conv", QuestionID: "q-ret", Status: bridge.CancelRetired,
			Reason: "the customer switched to the annual plan"},
		"cancel-imp": {Tenant: "acme", JobID: "job-conv", QuestionID: "q-imp", Status: bridge.CancelImplicitlyAnswered,
			Evidence: "blue, like last quarter's report", Reason: "kevin said it in the thread"},
	} {
		if err := bridge.Publish(ctx, env.NATS.JS, bridge.CancelSubject("acme", "job-conv"), id, c); err != nil {
			t.Fatal(err)
		}
	}
	h.updated(t, retiredTS, "No longer needed: the customer switched to the annual plan")
	h.updated(t, implicitTS, "Answered in conversation: “blue, like last quarter's report”")

	for _, c := range []struct {
		q            *bridge.Question
		status, text string
	}{
		{retired, bridge.CancelRetired, "No longer needed: the customer switched to the annual plan."},
		{implicit, bridge.CancelImplicitlyAnswered, "Answered in conversation: “blue, like last quarter's report”."},
	} {
		out := awaitOutcome(t, env, c.q)
		if out.Outcome != bridge.OutcomeCanceled || out.Status != c.status || out.Text != c.text {
			t.Errorf("%s resumed %s/%s %q, want cancelled/%s %q", c.q.QuestionID, out.Outcome, out.Status, out.Text, c.status, c.text)
		}
	}

	var show bridge.ShowReply
	if err := bridge.Request(ctx, env.NATS.Conn, bridge.APIShow,
		bridge.ShowRequest{As: "cli:admin", Tenant: "acme", JobID: "job-conv", QuestionID: "q-imp"}, &show); err != nil {
		t.Fatal(err)
	}
	last := show.Audit[len(show.Audit)-1]
	if last.To != bridge.StateCancelled ||
		last.Reason != "Answered in conversation: “blue, like last quarter's report”. Reason: kevin said it in the thread" {
		t.Errorf("show's audit ends %+v", last)
	}

	var list bridge.ListReply
	if err := bridge.Request(ctx, env.NATS.Conn, bridge.APIList,
		bridge.ListRequest{As: "cli:admin", Tenant: "acme", JobID: "job-conv"}, &list); err != nil {
		t.Fatal(err)
	}
	var pending []string
	for _, v := range list.Questions {
		pending = append(pending, v.QuestionID)
	}
	if strings.Join(pending, ",") != "q-stay" {
		t.Errorf("pending after the cancels: %v, want only q-stay", pending)
	}
	var queue bridge.QueueReply
	if err := bridge.Request(ctx, env.NATS.Conn, bridge.APIQueue,
		bridge.QueueRequest{As: "cli:admin", Tenant: "acme", JobID: "job-conv"}, &queue); err != nil {
		t.Fatal(err)
	}
	if len(queue.Questions) != 1 || queue.Questions[0].QuestionID != "q-stay" {
		t.Errorf("the job's queue after the cancels: %+v, want only q-stay", queue)
	}
}
