package card

import (
	"strings"

	"github.com/askbridge/askbridge/bridge"
)

// Action is what a control does.
type Action string

const (
	// ActChoice answers with the choice at the control's Index.
	ActChoice  Action = "choice"
	ActAnswer  Action = "answer"
	ActDecline Action = "decline"
	ActConsole Action = "console"
	ActApprove Action = "approve"
	ActDeny    Action = "deny"
	// ActDelegate asks someone else to answer (a user picker); ActSnooze
	// moves the clicker's next reminder, by one of SnoozeOptions
	// (docs/contract.md "Delegate and snooze").
	ActDelegate Action = "delegate"
	ActSnooze   Action = "snooze"
)

// Control labels, the same on every platform.
const (
	AnswerLabel  = "Answer…"
	DeclineLabel = "Decline"
	ConsoleLabel = "Open in console"
	ApproveLabel = "Approve"
	DenyLabel    = "Deny"
	// ChooseLabel is the placeholder of a list of choices.
	ChooseLabel   = "Choose an answer"
	DelegateLabel = "Ask someone else"
	SnoozeLabel   = "Remind me later"
	// PickLabel is the placeholder of the user picker Ask someone else opens.
	PickLabel = "Pick a person"
)

// SnoozeOption is one length of Remind me later.
type SnoozeOption struct {
	Value string // bridge.SnoozeHour, SnoozeHours4, SnoozeTomorrow
	Label string
}

// SnoozeOptions are Remind me later's lengths, in the order drawn.
var SnoozeOptions = []SnoozeOption{
	{bridge.SnoozeHour, "In 1 hour"},
	{bridge.SnoozeHours4, "In 4 hours"},
	{bridge.SnoozeTomorrow, "Tomorrow at 09:00"},
}

// Control is one of a card's buttons. A renderer draws the enabled ones,
// as buttons or (for many or long choices) as a list, and may send a
// person elsewhere for what its platform cannot show (typed fields in the
// console).
type Control struct {
	Action  Action
	Label   string
	Index   int
	Enabled bool
}

// Enabled is the controls a renderer draws.
func (c Card) Enabled() []Control {
	var out []Control
	for _, k := range c.Controls {
		if k.Enabled {
			out = append(out, k)
		}
	}
	return out
}

// controls: the ways to answer the question, Decline, Ask someone else,
// Remind me later, then Open in console. A hidden card cannot be answered on the card (its content is
// not there): Decline stays, and its readers who may answer do so in the
// console. Once the question ended only Open in console stays enabled.
func controls(c Card, console bool) []Control {
	var out []Control
	add := func(a Action, label string, i int) {
		out = append(out, Control{Action: a, Label: label, Index: i, Enabled: c.Pending()})
	}
	switch c.Kind {
	case KindApproval:
		add(ActApprove, ApproveLabel, 0)
		add(ActDeny, DenyLabel, 0)
	case KindChoices:
		for i, ch := range c.Choices {
			add(ActChoice, strings.TrimSpace(ch), i)
		}
	case KindHidden:
		out = append(out, Control{Action: ActAnswer, Label: AnswerLabel})
	default:
		add(ActAnswer, AnswerLabel, 0)
	}
	add(ActDecline, DeclineLabel, 0)
	add(ActDelegate, DelegateLabel, 0)
	add(ActSnooze, SnoozeLabel, 0)
	if console {
		out = append(out, Control{Action: ActConsole, Label: ConsoleLabel, Enabled: true})
	}
	return out
}

// EndingOf is how ev ended its question, or nil when ev does not end it
// (asked, refused, a reminder, a delivery that failed on one platform
// only).
func EndingOf(ev *bridge.Event) *Ending {
	switch ev.Type {
	case bridge.EventAnswered, bridge.EventDeclined, bridge.EventTimedOut, bridge.EventCancelled, bridge.EventSuperseded:
	case bridge.EventDeliveryFailed:
		if ev.State != bridge.StateFailed {
			return nil
		}
	default:
		return nil
	}
	e := &Ending{Event: ev.Type, By: ev.By, ByName: ev.ByName, Comment: ev.Comment, Text: ev.Text, Status: ev.Status, At: ev.At}
	if ev.Type == bridge.EventAnswered {
		e.Answer = ev.AnswerText
		if e.Answer == "" && len(ev.Answer) > 0 {
			e.Answer = strings.TrimPrefix(bridge.AnsweredText(ev.Answer), "The answer: ")
		}
	}
	return e
}

// FromView is the input of the runtime's view of a question for one
// reader: pending, or settled with how it ended.
func FromView(v *bridge.QuestionView, console bool) Input {
	in := Input{Tenant: v.Tenant, JobID: v.JobID, QuestionID: v.QuestionID, TaskVersion: v.TaskVersion,
		Question: v.Question, Hidden: v.Hidden || v.Question == nil, ForReader: true,
		AskedAt: v.AskedAt, Deadline: v.Deadline, Console: console, Proposal: v.Proposal}
	if v.Restricted && in.Hidden {
		// All the reader may know of a restricted question: that it is
		// one, and whom it waits for. Its card says so, as in a channel.
		in.Question = &bridge.Question{Tenant: v.Tenant, JobID: v.JobID, QuestionID: v.QuestionID, TaskVersion: v.TaskVersion,
			Kind: v.Kind, Visibility: bridge.VisibilityRestricted, Answerers: v.WaitsFor}
		in.Hidden, in.ForReader = false, false
	}
	if v.State != bridge.StatePending && v.State != "" {
		in.End = &Ending{Event: stateEvent(v.State, v.Text), By: v.By, ByName: v.ByName, Answer: v.AnswerText,
			Comment: v.Comment, Text: v.Text, At: v.SettledAt}
		if in.End.Answer == "" && len(v.Answer) > 0 {
			in.End.Answer = strings.TrimPrefix(bridge.AnsweredText(v.Answer), "The answer: ")
		}
	}
	return in
}

// FromEvents is the input of a question and the runtime's events about
// it, in order: the first event that ends it decides how, the last that
// carries its proposal how that stands.
func FromEvents(q *bridge.Question, console bool, events ...*bridge.Event) Input {
	in := Input{Question: q, Console: console}
	for _, ev := range events {
		if ev.Type == bridge.EventAsked {
			in.AskedAt, in.Deadline = ev.AskedAt, ev.Deadline
			in.Tenant, in.JobID, in.QuestionID, in.TaskVersion = ev.Tenant, ev.JobID, ev.QuestionID, ev.TaskVersion
		}
		if in.End == nil {
			in.End = EndingOf(ev)
		}
		if ev.Proposal != nil {
			in.Proposal = ev.Proposal // the latest says how it stands
		}
	}
	return in
}

// timedOutPrefix begins the runtime's timeout text (bridge.TimedOutText).
var timedOutPrefix = strings.TrimSuffix(bridge.TimedOutText(0), bridge.FormatTimeout(0)+".")

// stateEvent is the event that leaves a question in state. A question
// failed on its timeout (on_timeout: fail) timed out; text says which.
func stateEvent(state, text string) string {
	if ev := bridge.EndingEvent(state); ev != "" {
		return ev
	}
	if strings.HasPrefix(text, timedOutPrefix) {
		return bridge.EventTimedOut
	}
	return bridge.EventDeliveryFailed
}
