package console

import (
	"cmp"
	"regexp"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
)

// buildQuestionPage lays out one question for the link's identity.
func (c *Console) buildQuestionPage(l Link, rep *bridge.ShowReply, st formState) *questionPage {
	v := rep.Question
	nc := card.New(card.FromView(v, false))
	p := &questionPage{
		base:         c.base(l, "Question"),
		View:         v,
		Card:         nc,
		Ref:          v.Tenant + " / " + v.JobID + " / " + v.QuestionID,
		AskedAt:      when(v.AskedAt),
		Deadline:     when(v.Deadline),
		PostURL:      c.signer.RelativeURL(l),
		TaskVersion:  v.TaskVersion,
		Message:      st.Message,
		MessageParts: textParts(st.Message),
		Restricted:   restrictedText(v),
		Proposal:     proposalOf(nc, v.Question),
		StateKey:     nc.State,
	}
	if !v.Hidden && v.Question != nil {
		p.Q = v.Question
		p.Title = bridge.Truncate(strings.TrimSpace(v.Question.Question), 80)
	} else {
		p.Title = "A question waits"
	}
	if !nc.MayAnswer.IsZero() {
		p.MayAnswer = nc.MayAnswer.All().Text()
	}
	if who := nc.WhoMayAct(); !who.IsZero() {
		p.WhoLabel, p.Who = who.Label, who.Text()
	}
	p.Approvals, p.MayApprove = nc.ApprovalsLine().Text(), nc.MayApproveLine().Text()
	p.YouApproved = nc.Pending() && approvedBy(nc.Proposal, l.Identity)
	if p.YouApproved {
		p.ApprovedSoFar = nc.ApprovedSoFar()
	}
	if l := nc.ExpiresLine(); !l.IsZero() {
		p.Expires = when(nc.Expires)
	}
	if !nc.Pending() {
		p.Outcome = outcomeOf(nc, v, l.Identity)
		return p
	}
	p.StateLine = stateLine(nc, v, c.now())
	c.questionForms(l, p, st)
	return p
}

// stateLine is a waiting question's one line, in parts the page keeps
// whole ("deadline in 3 h" is not split): its state, an approval's
// approvals so far, how long it waited and may still wait.
func stateLine(nc card.Card, v *bridge.QuestionView, now time.Time) []string {
	parts := []string{nc.StateLabel}
	if a := nc.ApprovalsLine(); !a.IsZero() {
		parts = append(parts, a.Text())
	}
	if w := card.Waiting(v.AskedAt, v.Deadline, now); w != "" {
		parts = append(parts, strings.Split(w, " · ")...)
	}
	return parts
}

// outcomeOf is how the question ended, said once: the state, what
// happens next, the answer or reason, and who decided when.
func outcomeOf(nc card.Card, v *bridge.QuestionView, viewer string) *outcomeView {
	o := &outcomeView{
		State:     v.State,
		CardState: moreState(v.State, nc.State),
		Heading:   nc.StateLabel,
		Next:      nc.NextStep(viewer, v.By),
		Answer:    v.AnswerText,
		Comment:   v.Comment,
		By:        bridge.DisplayIdentity(v.By, v.ByName),
		Via:       v.Via,
		At:        when(cmp.Or(nc.Ended, v.SettledAt)),
		Approvals: nc.ApprovalsLine().Text(),
	}
	if o.Next == "" {
		o.Line = nc.Outcome.Text()
	}
	if nc.Proposal != nil || nc.Kind == card.KindApproval {
		// The heading and the next step say approved or denied: the
		// answer would say it a third time.
		o.Answer = ""
		switch nc.State {
		case card.StateExecuted, card.StateExecutionFailed:
			o.ProposalLine = nc.Outcome.Text() // the agent's report
		}
		// Who approved, once; the last of them is not named again.
		if o.Approvals = nc.ApproversLine().Text(); o.Approvals != "" {
			o.By, o.Via = "", ""
		}
	}
	return o
}

// questionForms draws the forms of a waiting question: the answer, the
// decline, and the requests (delegate, snooze), each with its state.
func (c *Console) questionForms(l Link, p *questionPage, st formState) {
	v := p.View
	var answerState, declineState formState
	switch st.Action {
	case bridge.ActionDecline:
		declineState = st
	case bridge.ActionDelegate, bridge.ActionSnooze:
	default:
		answerState = st
	}
	// Someone who approved a proposal that waits for more approvals has
	// decided; the page says where it stands instead (they may still ask
	// someone else to approve).
	if v.CanAnswer && p.Q != nil && !p.YouApproved {
		p.Answer = c.answerForm(l, p.Q, answerState)
	}
	if v.CanDecline && !p.YouApproved {
		nonce := newNonce()
		p.Decline = &declineForm{
			Nonce:        nonce,
			Token:        c.signer.FormToken(l, nonce),
			Comment:      declineState.Input.get(inputComment),
			CommentError: sentence("The reason for declining", inputComment, declineState.Problems[inputComment]),
			Error:        sentence("Declining", "", declineState.Problems[""]),
		}
	}
	c.requestForms(l, p, st)
	p.CannotAct = p.Answer == nil && p.Decline == nil && !p.YouApproved
	p.Summary = summary(p)
}

// textPart is a piece of a sentence: words, or a moment shown as a
// <time> element in the reader's time zone.
type textPart struct {
	Text string
	Time timeView
}

// momentPattern finds the RFC 3339 moments the runtime's sentences carry
// ("answered by slack:U0KEV at 2026-12-06T03:28:07Z.").
var momentPattern = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})`)

// textParts splits s at its moments, so that none shows raw.
func textParts(s string) []textPart {
	var out []textPart
	for s != "" {
		loc := momentPattern.FindStringIndex(s)
		if loc == nil {
			return append(out, textPart{Text: s})
		}
		t, err := time.Parse(time.RFC3339Nano, s[loc[0]:loc[1]])
		if loc[0] > 0 {
			out = append(out, textPart{Text: s[:loc[0]]})
		}
		if err != nil {
			out = append(out, textPart{Text: s[loc[0]:loc[1]]})
		} else {
			out = append(out, textPart{Time: when(t)})
		}
		s = s[loc[1]:]
	}
	return out
}
