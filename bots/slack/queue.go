package slack

import (
	"context"
	"fmt"
	"strings"

	"github.com/askbridge/askbridge/bridge"
	neutral "github.com/askbridge/askbridge/card"
)

// cmdQueue answers /ask queue <job>: the job's pending questions in queue
// order, as the runtime lets this person see them, as the CLI's table.
func (b *Bot) cmdQueue(ctx context.Context, identity, rest string) *commandReply {
	arg, _ := cutWord(rest)
	arg = strings.Trim(arg, "`")
	tenant, job, found := strings.Cut(arg, "/")
	if !found {
		tenant, job = "", arg
	}
	if job == "" {
		return ephemeral("Say which job: `/ask queue <job_id>` or `<tenant>/<job_id>`.")
	}
	if !bridge.ValidToken(job) || (found && !bridge.ValidToken(tenant)) {
		return ephemeral("`%s` is not a job id: use `<job_id>` or `<tenant>/<job_id>` (letters, digits, - and _).", quote(arg, 80))
	}
	var reply bridge.QueueReply
	if err := b.request(ctx, bridge.APIQueue, bridge.QueueRequest{As: identity, Tenant: tenant, JobID: job}, &reply); err != nil {
		b.log.WarnContext(ctx, "slack: /ask queue request failed", "err", err)
		return ephemeral("askbridge did not answer in time. Please try again.")
	}
	if reply.Error != "" {
		return ephemeral("askbridge: %s", quote(reply.Error, 300))
	}
	if len(reply.Questions) == 0 {
		return ephemeral("No questions wait in job `%s` that you can see.", job)
	}
	table := neutral.QueueTable(reply.Questions, b.now(), 60)
	// An ephemeral reply's text holds about 4000 characters: the table is
	// cut at a line, the first questions kept.
	for len(table) > 3500 {
		i := strings.LastIndex(table, "\n")
		if i < 0 {
			break
		}
		table = table[:i]
	}
	table = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "`", "'").Replace(table)
	text := fmt.Sprintf("*Job `%s`: %d pending question(s), by priority then age*\n```\n%s\n```", job, len(reply.Questions), table)
	if u := b.jobURL(identity, reply.Tenant, job); u != "" {
		text += "\n<" + u + "|Open the job in the askbridge console>"
	}
	return ephemeral("%s", text)
}
