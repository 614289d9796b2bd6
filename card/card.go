// Package card computes what a person sees about a question, on every
// front-end alike: its title and text (or, for a restricted question, a
// placeholder), who may answer, its state, how it ended, and the controls
// it offers. It is plain data with no platform markup: blockkit (Slack),
// bots/discord and bots/console draw it, and fit it to their platform's
// limits. People are named as identities, which each renderer turns into
// its own mentions.
package card

import (
	"cmp"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// Input is what a card is computed from: the question (nil when it is not
// known here, or Hidden), the times the runtime gave, and how it ended
// (nil while it waits).
type Input struct {
	Tenant      string
	JobID       string
	QuestionID  string
	TaskVersion int64
	Question    *bridge.Question
	// Hidden says the reader may know that the question waits, not what it
	// asks (the runtime's QuestionView.Hidden): no content is shown.
	Hidden bool
	// ForReader says the card is shown to one reader the runtime let read
	// the question (a view it did not hide): a restricted question then
	// shows its content. A card in a channel is for everyone there.
	ForReader bool
	AskedAt   time.Time
	Deadline  time.Time
	// Console says the web console is configured: the card offers "Open
	// in console", whose click answers with a link for the person who
	// clicked.
	Console bool
	End     *Ending
	// Proposal is an approval's proposal as it stands (approvals so far,
	// decided, expired, executed), from the latest event or view that
	// carried it; nil when not known.
	Proposal *bridge.ProposalStatus
}

// Ending is how a question ended, from the event that ended it (or the
// runtime's view of a settled question).
type Ending struct {
	// Event is the event type: answered, declined, timed_out, cancelled,
	// superseded or delivery_failed; "" when not known.
	Event  string
	By     string
	ByName string
	// Answer is the answer as people read it ("blue", "on: 2026-10-20");
	// for an approval, approved or denied.
	Answer  string
	Comment string
	// Text is the runtime's sentence about the ending, for the agent.
	Text string
	// Status is a cancel's status (bridge.CancelRetired, ...), when known.
	Status string
	At     time.Time
}

// Kind is what a card asks for.
type Kind string

const (
	KindChoices  Kind = "choices"
	KindText     Kind = "text"
	KindFields   Kind = "fields"
	KindApproval Kind = "approval"
	// KindHidden is a card whose content the readers may not see: a
	// restricted question, or one the reader has no permission to read.
	KindHidden Kind = "hidden"
)

// Card is what a person sees about a question.
type Card struct {
	Tenant      string
	JobID       string
	QuestionID  string
	TaskVersion int64
	Kind        Kind
	// Question is the question whose content the card shows; nil for a
	// hidden card, so a renderer cannot show what it must not.
	Question *bridge.Question
	Title    string
	// Text is the question; for a hidden card, Placeholder says instead
	// that a question waits, and for whom.
	Text        string
	Placeholder string
	// Sections are the question's context, why it matters and its
	// proposal, each under its label, in that order.
	Sections []Section
	// Asks lists a typed question's fields: "Send on (date, required)".
	Asks         []string
	Choices      []string
	BlockedTools []string
	// State is bridge.StatePending or how the question ended (answered,
	// approved, denied, declined, timed_out, cancelled, superseded,
	// failed), and for an approval what became of its proposal
	// (executed, execution_failed, expired); StateLabel says it in words.
	State      string
	StateLabel string
	// MayAnswer says who may answer; shown while the question waits.
	MayAnswer MayAnswer
	// Delegated says who asked whom to answer ("@kevin asked @dana to
	// answer"), one line each; shown while the question waits.
	Delegated []Line
	AskedAt   time.Time
	Deadline  time.Time
	Ended     time.Time
	// Outcome says how it ended; zero while it waits.
	Outcome Line
	// Controls are the card's buttons, in order; a settled card keeps
	// only "Open in console".
	Controls []Control
	// Proposal is an approval's proposal as it stands, nil when not
	// known; Expires is when it expires, zero when it does not.
	Proposal *bridge.ProposalStatus
	Expires  time.Time
}

// Section is a labelled part of the question's content.
type Section struct {
	Label string
	Text  string
	// Lines is set for a list (a proposal's summary), Rows for a table
	// (its arguments, More saying how many it leaves out), Text otherwise.
	Lines []string
	Rows  []Row
	More  int
	// Tag names the section's subject (a proposal's id), shown beside the label.
	Tag string
}

// Labels of the card's parts, the same on every platform.
const (
	LabelContext   = "Context"
	LabelWhy       = "Why it matters"
	LabelProposal  = "Proposal"
	LabelMayAnswer = "Who may answer"
	// LabelAskedToAnswer heads a delegation where a platform labels lines.
	LabelAskedToAnswer = "Delegated"
	LabelStatus        = "Status"
	LabelDeadline      = "Deadline"
	LabelOutcome       = "Outcome"
	LabelAsks          = "Asks for"
	LabelBlocked       = "Waiting on this"
)

// Placeholders of a hidden card.
const (
	// PlaceholderHidden is shown to a reader who may not see the question.
	PlaceholderHidden = "A question waits here; you may not read what it asks."
	// PlaceholderUnknown stands for a question the front-end no longer
	// knows (its record was lost): the card still shows how it ended.
	PlaceholderUnknown = "This question's text is not available here."
	placeholderNamed   = "A restricted question waits for the people named below: only they and admins may read it."
	placeholderAdmins  = "A restricted question waits: only admins may read it."
)

// New computes the card of in.
func New(in Input) Card {
	q := in.Question
	c := Card{Tenant: in.Tenant, JobID: in.JobID, QuestionID: in.QuestionID, TaskVersion: in.TaskVersion,
		AskedAt: in.AskedAt, Deadline: in.Deadline}
	if q != nil {
		c.Tenant, c.JobID, c.QuestionID = cmp.Or(c.Tenant, q.Tenant), cmp.Or(c.JobID, q.JobID), cmp.Or(c.QuestionID, q.QuestionID)
		if c.TaskVersion == 0 {
			c.TaskVersion = q.TaskVersion
		}
	}
	c.Kind = kindOf(q, in.Hidden, in.ForReader)
	c.Title = title(q, c.Kind)
	switch {
	case c.Kind != KindHidden:
		c.Question = q
		c.Text = q.Question
		c.Sections = sections(q)
		c.Asks = asks(q)
		c.Choices = q.Choices
		c.BlockedTools = q.BlockedTools
	case q != nil && !in.Hidden && (len(q.Answerers) > 0 || q.Owner != ""):
		c.Placeholder = placeholderNamed
	case q != nil && !in.Hidden:
		c.Placeholder = placeholderAdmins
	case q == nil && !in.Hidden:
		c.Placeholder = PlaceholderUnknown
	default:
		c.Placeholder = PlaceholderHidden
	}
	if q != nil && !in.Hidden {
		c.MayAnswer = mayAnswerOf(q)
		c.Delegated = delegatedLines(q)
	}
	approval := c.Kind == KindApproval || q != nil && q.IsApproval()
	c.State = bridge.StatePending
	if in.End != nil {
		c.State = endState(in.End, approval)
		c.Ended = in.End.At
		c.Outcome = outcomeLine(in.End, q, c.Kind == KindHidden)
	}
	if approval {
		c.Proposal, c.Expires = in.Proposal, expiresAt(q, in.Proposal)
		if p := c.Proposal; p != nil && c.Kind == KindHidden && p.Detail != "" {
			v := *p // the agent's detail tells what was done
			v.Detail = ""
			c.Proposal = &v
		}
	}
	if c.Proposal != nil {
		c.State = proposalState(c.State, c.Proposal)
		c.Ended = proposalEnded(c.State, c.Proposal, c.Ended)
	}
	if approval {
		if l, ok := proposalOutcome(c, in.End, c.Kind == KindHidden); ok {
			c.Outcome = l
		}
	}
	c.StateLabel = stateLabel(c.State, c.Kind)
	c.Controls = controls(c, in.Console)
	return c
}

// Pending reports whether the question still waits.
func (c Card) Pending() bool { return c.State == bridge.StatePending }

// Status is the state line of a waiting card ("Waiting for an answer"),
// zero once it ended: the outcome line says how.
func (c Card) Status() Line {
	if !c.Pending() {
		return Line{}
	}
	return Line{Label: LabelStatus, Spans: []Span{Words(c.StateLabel)}}
}

// DeadlineLine is the waiting card's deadline, zero when there is none.
func (c Card) DeadlineLine() Line {
	if !c.Pending() || c.Deadline.IsZero() {
		return Line{}
	}
	return Line{Label: LabelDeadline, Spans: []Span{When(c.Deadline)}}
}

func kindOf(q *bridge.Question, hidden, forReader bool) Kind {
	switch {
	case q == nil || hidden || q.Restricted() && !forReader:
		return KindHidden
	case q.IsApproval():
		return KindApproval
	case len(q.Fields) > 0:
		return KindFields
	case len(q.Choices) > 0:
		return KindChoices
	}
	return KindText
}

// title is "Question from acme-support" or "Approval requested by ...":
// an approval's kind is no secret, even on a hidden card.
func title(q *bridge.Question, k Kind) string {
	head, from := "Question", " from "
	if k == KindApproval || q != nil && q.IsApproval() {
		head, from = "Approval requested", " by "
	}
	if q != nil && strings.TrimSpace(q.Agent) != "" {
		return head + from + strings.TrimSpace(q.Agent)
	}
	return head
}

func sections(q *bridge.Question) []Section {
	var out []Section
	if strings.TrimSpace(q.Context) != "" {
		out = append(out, Section{Label: LabelContext, Text: q.Context})
	}
	if strings.TrimSpace(q.WhyItMatters) != "" {
		out = append(out, Section{Label: LabelWhy, Text: q.WhyItMatters})
	}
	if p := q.Proposal; p != nil {
		out = append(out, Section{Label: LabelProposal, Lines: p.Summary, Tag: p.ID})
		out = append(out, proposalSections(p)...)
	}
	return out
}

// asks names each field with its kind, and whether it is required.
func asks(q *bridge.Question) []string {
	out := make([]string, 0, len(q.Fields))
	for _, f := range q.Fields {
		s := f.Title() + " (" + f.Kind
		if f.Required {
			s += ", required"
		}
		out = append(out, s+")")
	}
	return out
}

// States a card shows beyond the runtime's: an approval's answer.
const (
	StateApproved = "approved"
	StateDenied   = "denied"
	// StateEnded is a question that ended in a way the card was not told
	// (a front-end that kept only the outcome line it drew).
	StateEnded = "ended"
)

func endState(e *Ending, approval bool) string {
	switch {
	case e.Event == "":
		return StateEnded
	case approval && e.Event == bridge.EventAnswered && e.Answer == bridge.Denied:
		return StateDenied
	case approval && e.Event == bridge.EventAnswered:
		return StateApproved
	}
	return bridge.EndedState(e.Event)
}

var stateLabels = map[string]string{
	bridge.StateAnswered:   "Answered",
	StateApproved:          labelApproved,
	StateExecuted:          "Executed",
	StateExecutionFailed:   "Execution failed",
	StateExpired:           "Expired",
	StateDenied:            "Denied",
	bridge.StateDeclined:   "Declined",
	bridge.StateTimedOut:   "Timed out",
	bridge.StateCancelled:  "Cancelled",
	bridge.StateSuperseded: "Superseded",
	bridge.StateFailed:     "Failed",
	StateEnded:             "Ended",
}

// stateLabel names a question's state in words: the runtime's states
// (bridge.State*) and an approval's approved, executed, execution failed,
// expired and denied.
func stateLabel(state string, k Kind) string {
	if state == bridge.StatePending {
		if k == KindApproval {
			return "Waiting for approval"
		}
		return "Waiting for an answer"
	}
	if l, ok := stateLabels[state]; ok {
		return l
	}
	return state
}
