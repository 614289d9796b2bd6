package card

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// Labels of an approval's parts (docs/contract.md, "What a card shows").
const (
	LabelArguments  = "Arguments"
	LabelAmount     = "Amount"
	LabelExpires    = "Expires"
	LabelApprovals  = "Approvals"
	LabelMayApprove = "Who may still approve"
)

// An approval's states after it was decided, the proposal's as bridge
// names them: approved is not executed until the agent says so.
const (
	StateExecuted        = bridge.ProposalExecuted
	StateExecutionFailed = bridge.ProposalExecutionFailed
	StateExpired         = bridge.ProposalExpired
)

// Bounds of the arguments table, the same on every platform: a card is
// read at a glance, and the console shows the arguments whole.
const (
	MaxArgumentRows  = 8
	MaxArgumentKey   = 40
	MaxArgumentValue = 80
)

// Row is one argument of a proposal: its key and its value as people
// read it (a string without its quotes, anything else as compact JSON),
// each cut to its bound.
type Row struct {
	Key   string
	Value string
}

// MoreText says how many arguments a table leaves out: "…and 3 more".
func MoreText(n int) string { return "…and " + strconv.Itoa(n) + " more" }

// proposalSections are an approval's amount and arguments, after its
// summary.
func proposalSections(p *bridge.Proposal) []Section {
	var out []Section
	if amount := amountText(p.Amount, p.Currency); amount != "" {
		out = append(out, Section{Label: LabelAmount, Text: amount})
	}
	if rows, more := arguments(p.Arguments); len(rows) > 0 {
		out = append(out, Section{Label: LabelArguments, Rows: rows, More: more})
	}
	return out
}

// amountText is "240 USD", "12.50 EUR", or "" without an amount.
func amountText(a *float64, currency string) string {
	if a == nil {
		return ""
	}
	var s string
	switch v := *a; {
	case v == math.Trunc(v):
		s = strconv.FormatFloat(v, 'f', 0, 64)
	case math.Round(v*100)/100 == v:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	default:
		s = strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strings.TrimSpace(s + " " + strings.TrimSpace(currency))
}

// arguments is the table of a proposal's arguments in the order the
// agent gave them, at most MaxArgumentRows, and how many more there are;
// none when they are not a JSON object.
func arguments(raw json.RawMessage) ([]Row, int) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, 0
	}
	var rows []Row
	more := 0
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		var v json.RawMessage
		if err != nil || !ok || dec.Decode(&v) != nil {
			return nil, 0
		}
		if len(rows) == MaxArgumentRows {
			more++
			continue
		}
		rows = append(rows, Row{Key: oneLine(key, MaxArgumentKey), Value: oneLine(valueText(v), MaxArgumentValue)})
	}
	return rows, more
}

// valueText is an argument's value as people read it.
func valueText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// oneLine is s on one line, cut to n characters.
func oneLine(s string, n int) string {
	return bridge.Truncate(strings.Join(strings.Fields(s), " "), n)
}

// proposalState is the card's state once the proposal's is known: a
// decision, an expiry or an execution the question's own ending does not
// tell. A question cancelled, superseded, declined or failed keeps that.
func proposalState(state string, p *bridge.ProposalStatus) string {
	if p == nil {
		return state
	}
	switch p.State {
	case bridge.ProposalApproved, bridge.ProposalDenied, bridge.ProposalExpired, bridge.ProposalExecuted, bridge.ProposalExecutionFailed:
	default:
		return state
	}
	switch state {
	case bridge.StatePending, StateApproved, StateDenied, bridge.StateTimedOut, StateEnded:
		return p.State
	}
	return state
}

// proposalEnded is when the card's state began: an execution's time
// (when the gate let it run) over the approval's, an expiry's when the
// question's ending does not say.
func proposalEnded(state string, p *bridge.ProposalStatus, ended time.Time) time.Time {
	switch {
	case (state == StateExecuted || state == StateExecutionFailed) && !p.ExecutedAt.IsZero():
		return p.ExecutedAt
	case state == StateExpired && ended.IsZero():
		return p.ExpiresAt
	}
	return ended
}

// approvers are the people who approved, in order.
func approvers(p *bridge.ProposalStatus) []Person {
	if p == nil {
		return nil
	}
	out := make([]Person, 0, len(p.Approvals))
	for _, a := range p.Approvals {
		out = append(out, Person{Identity: a.By, Name: a.ByName})
	}
	return out
}

// people are spans naming ps: "@kevin", "@kevin and @ana", "@a, @b and @c".
func people(ps []Person) []Span {
	var out []Span
	for i, p := range ps {
		switch {
		case i == 0:
		case i == len(ps)-1:
			out = append(out, Words(" and "))
		default:
			out = append(out, Words(", "))
		}
		out = append(out, Who(p))
	}
	return out
}

// proposalOutcome says how an approval ended once the proposal's state
// is known: approved and not yet executed, executed or failed with the
// agent's detail, expired. False leaves the question's own outcome.
func proposalOutcome(c Card, e *Ending, hidden bool) (Line, bool) {
	l := Line{Label: LabelOutcome}
	detail := func(lead string) Line {
		l.Spans = []Span{Words(lead)}
		if d := strings.TrimSpace(unless(hidden, c.Proposal.Detail)); d != "" {
			l.Spans = append(l.Spans, Words(": "), Quote(d))
		}
		return l
	}
	switch c.State {
	case StateApproved:
		by := approvers(c.Proposal)
		if len(by) == 0 && e != nil && (e.By != "" || e.ByName != "") {
			by = []Person{{Identity: e.By, Name: e.ByName}}
		}
		l.Spans = []Span{Words(labelApproved)}
		if len(by) > 0 {
			l.Spans = append(append(l.Spans, Words(" by ")), people(by)...)
		}
		return merge(l), true
	case StateExecuted:
		return detail("Executed"), true
	case StateExecutionFailed:
		return detail("Execution failed"), true
	case StateExpired:
		l.Spans = []Span{Words("Expired before it was decided")}
		return l, true
	}
	return Line{}, false
}

// labelApproved is an approval's state once approved: it may still never
// run, so the card never reads as done.
const labelApproved = "Approved (not yet executed)"

// ApprovalsLine counts an approval's approvals against those it needs,
// naming who gave them: "1 of 2 approvals: @kevin". Shown when it needs
// more than one, or once it ended with approvals, unless the outcome line
// names who approved (approved, not yet executed); zero otherwise.
func (c Card) ApprovalsLine() Line {
	p := c.Proposal
	if p == nil {
		return Line{}
	}
	by := approvers(p)
	switch {
	case c.State == StateApproved: // the outcome names them
		return Line{}
	case p.Required > 1:
	case len(by) > 0 && !c.Pending():
	default:
		return Line{}
	}
	l := Line{Label: LabelApprovals}
	if p.Required > 1 {
		l.Spans = []Span{Words(strconv.Itoa(len(by)) + " of " + strconv.Itoa(p.Required) + " approvals")}
		if len(by) > 0 {
			l.Spans = append(l.Spans, Words(": "))
		}
	} else {
		l.Spans = []Span{Words("Approved by ")}
	}
	l.Spans = append(l.Spans, people(by)...)
	return merge(l)
}

// maxMayApprove is how many approvers a card names; it says how many
// more there are.
const maxMayApprove = 10

// MayApproveLine names who may still approve a waiting approval, as the
// runtime weighs it by the policy (bridge.ProposalStatus.MayApprove):
// people by identity, the owner marked, roles by name. Zero when the
// runtime named nobody (the who-may-answer line then says who may act).
func (c Card) MayApproveLine() Line {
	if !c.Pending() || c.Proposal == nil || len(c.Proposal.MayApprove) == 0 {
		return Line{}
	}
	l := Line{Label: LabelMayApprove}
	for i, who := range c.Proposal.MayApprove {
		if i > 0 {
			l.Spans = append(l.Spans, Words(", "))
		}
		if i == maxMayApprove {
			l.Spans = append(l.Spans, Words(strconv.Itoa(len(c.Proposal.MayApprove)-i)+" more"))
			break
		}
		if strings.Contains(who, ":") {
			l.Spans = append(l.Spans, Who(Person{Identity: who}))
			if c.Question != nil && who == c.Question.Owner {
				l.Spans = append(l.Spans, Words(" (owner)"))
			}
		} else {
			l.Spans = append(l.Spans, Words(who))
		}
	}
	return merge(l)
}

// ExpiresLine is a waiting proposal's expiry, zero when it has none.
func (c Card) ExpiresLine() Line {
	if !c.Pending() || c.Expires.IsZero() {
		return Line{}
	}
	return Line{Label: LabelExpires, Spans: []Span{When(c.Expires)}}
}

// expiresAt is when an approval's proposal expires: as the runtime says,
// else as the agent asked.
func expiresAt(q *bridge.Question, p *bridge.ProposalStatus) time.Time {
	if p != nil && !p.ExpiresAt.IsZero() {
		return p.ExpiresAt
	}
	if q != nil && q.Proposal != nil {
		return q.Proposal.ExpiresAt
	}
	return time.Time{}
}
