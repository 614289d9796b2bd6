package console

import (
	"cmp"
	"strings"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
)

// listItem is one question in a list or job page.
type listItem struct {
	URL    string
	JobURL string
	Ref    string
	Tenant string
	JobID  string
	Hidden bool
	// Placeholder stands for the text of a hidden question.
	Placeholder string
	Text        string
	State       string
	CardState   string // as outcomeView's
	Label       string
	Answer      string
	By          string
	Via         string
	AskedAt     timeView
	Deadline    timeView
	Settled     timeView
	Priority    string
	Agent       string
	// Restricted: see questionPage.
	Restricted string
	// Approvals is an approval's approvals line ("1 of 2 approvals: …").
	Approvals string
	// Approval says it is an approval, not a question; Waiting is
	// "waiting 12 min · deadline in 3 h" (the inbox only).
	Approval bool
	Waiting  string
}

func (c *Console) listItem(l Link, v *bridge.QuestionView) listItem {
	nc := card.New(card.FromView(v, false))
	it := listItem{
		URL:       c.sub(l, ScopeQuestion, v.Tenant, v.JobID, v.QuestionID),
		JobURL:    c.sub(l, ScopeJob, v.Tenant, v.JobID, ""),
		Ref:       v.Tenant + " / " + v.JobID + " / " + v.QuestionID,
		Tenant:    v.Tenant,
		JobID:     v.JobID,
		Hidden:    v.Hidden || v.Question == nil,
		State:     v.State,
		CardState: moreState(v.State, nc.State),
		Label:     nc.StateLabel,
		Answer:    v.AnswerText,
		Via:       v.Via,
		AskedAt:   when(v.AskedAt),
		Deadline:  when(v.Deadline),
		Settled:   when(cmp.Or(nc.Ended, v.SettledAt)),

		Restricted: restrictedText(v),
		Approvals:  nc.ApprovalsLine().Text(),
		Approval:   kindOf(v) == bridge.KindApproval,
	}
	if v.By != "" {
		it.By = bridge.DisplayIdentity(v.By, v.ByName)
	}
	if v.Answer == nil && v.AnswerText == "" && v.State == bridge.StateDeclined {
		it.Answer = v.Comment
	}
	if it.Hidden {
		it.Placeholder = nc.Placeholder
	} else {
		it.Text = bridge.Truncate(strings.TrimSpace(v.Question.Question), 200)
		it.Priority = v.Question.Priority
		it.Agent = v.Question.Agent
	}
	return it
}
