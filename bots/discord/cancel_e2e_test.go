package discord

import (
	"context"
	"testing"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/runtime"
)

// A retired and an implicitly answered question on Discord: each card says
// why it ended, the agent reads cancelled with the status, and show's audit
// keeps the evidence.
func TestE2ERetiredAndImplicitlyAnswered(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	ctx := context.Background()
	retired, implicit := colorQuestion(), colorQuestion()
	retired.JobID, implicit.JobID = "job-ret", "job-imp"
	ask(t, env, retired)
	retiredCard := h.posted(channelA, 1)
	ask(t, env, implicit)
	implicitCard := h.posted(channelA, 2)

	for id, c := range map[string]bridge.Cancel{
		"cancel-ret": {Tenant: "acme", JobID: "job-ret", QuestionID: "q-1", Status: bridge.CancelRetired,
			Reason: "the customer switched to the annual plan"},
		"cancel-imp": {Tenant: "acme", JobID: "job-imp", QuestionID: "q-1", Status: bridge.CancelImplicitlyAnswered,
			Evidence: "green, like the new brand guide"},
	} {
		if err := bridge.Publish(ctx, env.NATS.JS, bridge.CancelSubject(c.Tenant, c.JobID), id, c); err != nil {
			t.Fatal(err)
		}
	}
	h.fake.settledCard(t, retiredCard["id"].(string), "No longer needed: the customer switched to the annual plan")
	h.fake.settledCard(t, implicitCard["id"].(string), "Answered in conversation: “green, like the new brand guide”")

	if out := await(t, env, retired); out.Outcome != bridge.OutcomeCanceled || out.Status != bridge.CancelRetired ||
		out.Text != "No longer needed: the customer switched to the annual plan." {
		t.Errorf("retired resume = %+v", out)
	}
	if out := await(t, env, implicit); out.Outcome != bridge.OutcomeCanceled || out.Status != bridge.CancelImplicitlyAnswered ||
		out.Text != "Answered in conversation: “green, like the new brand guide”." {
		t.Errorf("implicitly answered resume = %+v", out)
	}
	var show bridge.ShowReply
	if err := h.bot.request(ctx, bridge.APIShow, bridge.ShowRequest{As: "discord:" + kevin.ID,
		Tenant: "acme", JobID: "job-imp", QuestionID: "q-1"}, &show); err != nil {
		t.Fatal(err)
	}
	if n := len(show.Audit); n == 0 || show.Audit[n-1].Reason != "Answered in conversation: “green, like the new brand guide”." {
		t.Errorf("show's audit = %+v", show.Audit)
	}
	if show.Question == nil || show.Question.State != bridge.StateCancelled {
		t.Errorf("show = %+v, want cancelled", show.Question)
	}
}
