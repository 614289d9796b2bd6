package console

import (
	"context"
	"net/http"
	"strings"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
)

type jobItem struct {
	listItem
	Audit []auditRow
}

type jobPage struct {
	base
	Tenant string
	JobID  string
	// Queue is the job's pending questions in queue order (ask.v1.api.queue).
	Queue []queueRow
	Items []jobItem
	More  bool
	// Notices are the job's notices, shown without controls.
	Notices []noticeView
}

// queueRow is one pending question of the job's queue.
type queueRow struct {
	Pos        int
	URL        string
	QuestionID string
	Text       string
	Hidden     bool
	Priority   string
	Staleness  int
	Waiting    string
	Blocks     string
}

// handleJob shows a job's questions and their audit trails.
func (c *Console) handleJob(w http.ResponseWriter, r *http.Request) {
	l, err := c.verifyLink(r, ScopeJob, r.PathValue("tenant"), r.PathValue("job"), "")
	if err != nil {
		c.linkError(w, r, err)
		return
	}
	var rep bridge.ListReply
	if err := c.api(r.Context(), bridge.APIList, bridge.ListRequest{As: l.Identity, Roles: l.Roles, Tenant: l.Tenant, JobID: l.JobID, State: "all", Limit: jobLimit}, &rep); err != nil {
		c.apiUnavailable(w, r, err)
		return
	}
	if rep.Error != "" {
		c.log.WarnContext(r.Context(), "console: job list refused", "tenant", l.Tenant, "job", l.JobID, "as", l.Identity, "err", rep.Error)
		c.errorPage(w, r, http.StatusBadRequest, "The job could not be shown", "askbridge could not show this job. Ask for a new link.")
		return
	}
	p := &jobPage{base: c.base(l, "Job "+l.JobID), Tenant: l.Tenant, JobID: l.JobID, More: rep.Next != ""}
	for i := range rep.Questions {
		v := &rep.Questions[i]
		if v.Tenant != l.Tenant || v.JobID != l.JobID {
			continue
		}
		item := jobItem{listItem: c.listItem(l, v)}
		if !v.Hidden {
			var show bridge.ShowReply
			err := c.api(r.Context(), bridge.APIShow, bridge.ShowRequest{As: l.Identity, Roles: l.Roles, Tenant: v.Tenant, JobID: v.JobID, QuestionID: v.QuestionID}, &show)
			if err != nil {
				c.apiUnavailable(w, r, err)
				return
			}
			for _, a := range show.Audit {
				item.Audit = append(item.Audit, auditView(a))
			}
		}
		p.Items = append(p.Items, item)
	}
	p.Queue = c.jobQueue(r.Context(), l)
	if p.Notices, err = c.jobNotices(r.Context(), l); err != nil {
		c.apiUnavailable(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "job", p)
}

// jobQueue is the job's pending questions in queue order, as the link's
// identity may see them; none when the runtime does not say (the page
// still shows every question below).
func (c *Console) jobQueue(ctx context.Context, l Link) []queueRow {
	var rep bridge.QueueReply
	err := c.api(ctx, bridge.APIQueue, bridge.QueueRequest{As: l.Identity, Roles: l.Roles, Tenant: l.Tenant, JobID: l.JobID}, &rep)
	if err != nil || rep.Error != "" {
		c.log.WarnContext(ctx, "console: the job's queue could not be read", "tenant", l.Tenant, "job", l.JobID, "err", err, "refused", rep.Error)
		return nil
	}
	now := c.now()
	var out []queueRow
	for i, it := range rep.Questions {
		out = append(out, queueRow{Pos: i + 1, URL: c.sub(l, ScopeQuestion, l.Tenant, l.JobID, it.QuestionID), QuestionID: it.QuestionID,
			Text: bridge.Truncate(it.Text, 120), Hidden: it.Hidden, Priority: it.Priority, Staleness: it.Staleness,
			Waiting: card.Duration(now.Sub(it.AskedAt)), Blocks: strings.Join(it.BlockedTools, ", ")})
	}
	return out
}
