package card

import (
	"strconv"

	"github.com/askbridge/askbridge/bridge"
)

// NextStep says what happens now that the question ended, for the person
// who reads it (viewer, an identity): "Your answer reached the agent;
// job-3 goes on." Empty while it waits, and for endings whose outcome
// line says all there is (timed out, cancelled, superseded, failed).
func (c Card) NextStep(viewer, by string) string {
	yours := viewer != "" && viewer == by
	job := c.JobID
	switch c.State {
	case bridge.StateAnswered:
		if yours {
			return "Your answer reached the agent; " + job + " goes on."
		}
		return "The answer reached the agent; " + job + " goes on."
	case bridge.StateDeclined:
		if yours {
			return "You declined: the agent reads your reason, and " + job + " goes on without an answer."
		}
		return "The agent reads the reason, and " + job + " goes on without an answer."
	case StateApproved:
		if yours {
			return "Your approval reached the agent: it runs the proposal now, and this page shows the result once it reports it."
		}
		return "The agent runs the proposal now; this page shows the result once it reports it."
	case StateDenied:
		return "The agent does not run the proposal: it reads the reason and changes its plan."
	case StateExecuted:
		return "The agent ran the proposal; " + job + " goes on."
	case StateExecutionFailed:
		return "The agent ran the proposal and it failed; the agent decides what to do next."
	case StateExpired:
		return "The approval came too late: the proposal expired, and the agent does not run it."
	}
	return ""
}

// ApprovedSoFar says where a waiting approval stands once the viewer
// approved it: "Approved, 1 of 2: it runs once the second approver
// agrees." Empty when it needs no more approvals or is not known.
func (c Card) ApprovedSoFar() string {
	p := c.Proposal
	if !c.Pending() || p == nil || p.Required <= 1 {
		return ""
	}
	n := len(p.Approvals)
	left := p.Required - n
	if left <= 0 {
		return ""
	}
	s := "Approved, " + strconv.Itoa(n) + " of " + strconv.Itoa(p.Required) + ": it runs once "
	if left > 1 {
		return s + strconv.Itoa(left) + " more approvers agree."
	}
	return s + "the " + ordinal(n+1) + " approver agrees."
}

func ordinal(n int) string {
	if w := []string{"", "first", "second", "third", "fourth", "fifth"}; n < len(w) {
		return w[n]
	}
	return strconv.Itoa(n) + "th"
}

// WhoMayAct is the one line that says who may decide a waiting question:
// for an approval, who may still approve (those who approved count once,
// and the policy may bar its owner, so who may answer would mislead);
// else who may answer.
func (c Card) WhoMayAct() Line {
	if l := c.MayApproveLine(); !l.IsZero() {
		return l
	}
	if c.MayAnswer.IsZero() || !c.Pending() {
		return Line{}
	}
	return c.MayAnswer.All()
}

// ShowsMayAnswer says whether a card names who may answer: not on an
// approval that names who may still approve (WhoMayAct).
func (c Card) ShowsMayAnswer() bool {
	return !c.MayAnswer.IsZero() && c.MayApproveLine().IsZero()
}

// ApproversLine names who approved an approval, whatever became of it:
// "2 of 2 approvals: @kevin and @ana", "Approved by @kevin". Zero when
// nobody approved. (ApprovalsLine leaves them out of an approved card,
// whose outcome line names them; a page that says approved once in its
// heading needs them here.)
func (c Card) ApproversLine() Line {
	d := c
	if d.State == StateApproved {
		d.State = StateExecuted
	}
	return d.ApprovalsLine()
}
