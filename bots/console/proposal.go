package console

import (
	"bytes"
	"encoding/json"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
)

// proposalView is an approval's proposal: the card's summary, amount
// and arguments table, and the arguments whole (indented JSON).
type proposalView struct {
	ID      string
	Summary []string
	Amount  string
	Rows    []card.Row
	More    string
	JSON    string
}

// proposalOf is the proposal the card of q shows, nil for a question.
func proposalOf(nc card.Card, q *bridge.Question) *proposalView {
	if q == nil || q.Proposal == nil || nc.Kind != card.KindApproval {
		return nil
	}
	p := &proposalView{ID: q.Proposal.ID}
	for _, sec := range nc.Sections {
		switch sec.Label {
		case card.LabelProposal:
			p.Summary = sec.Lines
		case card.LabelAmount:
			p.Amount = sec.Text
		case card.LabelArguments:
			p.Rows = sec.Rows
			if sec.More > 0 {
				p.More = card.MoreText(sec.More)
			}
		}
	}
	var b bytes.Buffer
	if len(q.Proposal.Arguments) > 0 && json.Indent(&b, q.Proposal.Arguments, "", "  ") == nil {
		p.JSON = b.String()
	}
	return p
}

// restrictedTo names who may read a restricted question: the people it
// waits for, and admins (who stand for owners too).
func restrictedTo(people []string) string {
	return bridge.RestrictedReaders(people, func(id string) string { return id })
}

// restrictedText is restrictedTo for a view, "" when it is not restricted.
func restrictedText(v *bridge.QuestionView) string {
	switch {
	case !v.Restricted:
		return ""
	case v.Question != nil:
		return restrictedTo(v.Question.WaitsFor())
	}
	return restrictedTo(v.WaitsFor)
}

// approvedBy reports whether identity's approval of p is recorded.
func approvedBy(p *bridge.ProposalStatus, identity string) bool {
	if p == nil {
		return false
	}
	for _, a := range p.Approvals {
		if a.By == identity {
			return true
		}
	}
	return false
}

// moreState is the card's state when it says more than the question's
// (an approval's approved, executed...), "" when they are the same.
func moreState(question, card string) string {
	if card == question {
		return ""
	}
	return card
}
