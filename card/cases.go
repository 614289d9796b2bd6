package card

import (
	"fmt"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// Case is one card of the shared table that every renderer draws into its
// golden files: the same case must read the same on every platform.
type Case struct {
	// Group names the golden file (one per question kind), Name the case.
	Group string
	Name  string
	Input Input
}

// The moments of every case.
var (
	CaseAsked    = time.Date(2026, 10, 20, 10, 0, 0, 0, time.UTC)
	CaseDeadline = CaseAsked.Add(4 * time.Hour)
	CaseEnded    = CaseAsked.Add(time.Hour)
)

// The people of the cases: a Slack and a Discord answerer, an owner, and
// who ends the questions.
const (
	CaseAnswererSlack   = "slack:U0ANA"
	CaseAnswererDiscord = "discord:300000000000000001"
	CaseOwner           = "slack:U0OWNER"
	CaseBy              = "slack:U0KEV"
	CaseByName          = "kevin"
	CaseDecliner        = "discord:300000000000000002"
)

// Cases is every ending (and none) for every kind of question, with and
// without the console, and questions whose texts are long.
func Cases() []Case {
	var out []Case
	for _, k := range caseKinds() {
		for _, end := range caseEndings(k.q) {
			name := "pending"
			var e *Ending
			if end != nil {
				name, e = end.name, &end.Ending
			}
			out = append(out, Case{Group: k.name, Name: name, Input: caseInput(k.q, true, e)})
		}
		out = append(out, Case{Group: k.name, Name: "pending, no console", Input: caseInput(k.q, false, nil)})
	}
	out = append(out, Case{Group: "choices", Name: "pending, delegated", Input: caseInput(delegatedQuestion(), true, nil)})
	return append(out, proposalCases()...)
}

// CaseDelegate is whom CaseBy asked to answer in the delegated case.
const CaseDelegate = "slack:U0DANA"

// delegatedQuestion is the choices question after kevin asked dana to
// answer it ("Ask someone else").
func delegatedQuestion() *bridge.Question {
	q := caseQuestion()
	q.Choices = []string{"red", "blue", "green"}
	q.Answerers = append(q.Answerers, CaseDelegate)
	q.Delegations = []bridge.Delegation{{By: CaseBy, ByName: CaseByName, To: CaseDelegate, At: CaseEnded}}
	return q
}

func caseInput(q *bridge.Question, console bool, e *Ending) Input {
	return Input{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion, Question: q,
		AskedAt: CaseAsked, Deadline: CaseDeadline, Console: console, End: e}
}

type caseKind struct {
	name string
	q    *bridge.Question
}

func caseQuestion() *bridge.Question {
	return &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3, Kind: bridge.KindQuestion,
		Question: "Which colour should the report use?", WhyItMatters: "The board prints it.",
		Answerers: []string{CaseAnswererSlack, CaseAnswererDiscord}, Owner: CaseOwner, Agent: "acme-support", Timeout: "4h",
		BlockedTools: []string{"send_report"}}
}

func caseKinds() []caseKind {
	choices := caseQuestion()
	choices.Choices = []string{"red", "blue", "green"}
	many := caseQuestion()
	many.Answerers, many.Owner = nil, ""
	for i := range 8 {
		many.Choices = append(many.Choices, fmt.Sprintf("Option %d: a choice long enough that no button shows it whole", i+1))
	}
	text := caseQuestion()
	text.Context = "The quarterly report goes to the board on Friday."
	text.Owner = ""
	fields := caseQuestion()
	fields.Question = "When should I send the report, and how many copies?"
	fields.Fields = []bridge.Field{{Name: "on", Kind: bridge.FieldDate, Label: "Send on", Required: true},
		{Name: "copies", Kind: bridge.FieldNumber, Integer: true}}
	approval := caseQuestion()
	approval.Kind, approval.Question = bridge.KindApproval, "May I refund order 4471?"
	approval.Proposal = caseProposal()
	restricted := caseQuestion()
	restricted.Visibility, restricted.Choices = bridge.VisibilityRestricted, []string{"yes", "no"}
	restrictedNobody := caseQuestion()
	restrictedNobody.Visibility, restrictedNobody.Answerers, restrictedNobody.Owner = bridge.VisibilityRestricted, nil, ""
	long := caseQuestion()
	long.Question = strings.Repeat("A question far longer than any card shows whole. ", 200)
	long.Context = strings.Repeat("Context <with> & markup *bold* _it_ `code`. ", 150)
	long.WhyItMatters = strings.Repeat("It matters. ", 300)
	long.Agent = strings.Repeat("agent-", 60)
	for i := range 30 {
		long.Choices = append(long.Choices, fmt.Sprintf("choice %02d %s", i, strings.Repeat("x", 150)))
		long.Answerers = append(long.Answerers, fmt.Sprintf("slack:U%010d", i))
	}
	return []caseKind{{"choices", choices}, {"choices_long", many}, {"free_text", text}, {"fields", fields},
		{"approval", approval}, {"restricted", restricted}, {"restricted_nobody", restrictedNobody}, {"long", long}}
}

type caseEnding struct {
	name string
	Ending
}

// caseEndings is nil (pending) and each way q can end.
func caseEndings(q *bridge.Question) []*caseEnding {
	answer := "blue"
	switch {
	case len(q.Fields) > 0:
		answer = "on: 2026-10-20, copies: 2"
	case len(q.Choices) > 0:
		answer = q.Choices[len(q.Choices)-1]
	}
	by := func(name string, e Ending) *caseEnding {
		e.At = CaseEnded
		return &caseEnding{name, e}
	}
	out := []*caseEnding{nil}
	if q.IsApproval() {
		out = append(out,
			by("approved", Ending{Event: bridge.EventAnswered, By: CaseBy, ByName: CaseByName, Answer: bridge.Approved}),
			by("denied", Ending{Event: bridge.EventAnswered, By: CaseBy, ByName: CaseByName, Answer: bridge.Denied, Comment: "too expensive"}))
	} else {
		out = append(out, by("answered", Ending{Event: bridge.EventAnswered, By: CaseBy, ByName: CaseByName, Answer: answer}))
	}
	return append(out,
		by("declined", Ending{Event: bridge.EventDeclined, By: CaseDecliner, Comment: "ask Ana, she owns the report"}),
		by("declined, no reason", Ending{Event: bridge.EventDeclined, By: "console:bob", ByName: "Bob"}),
		by("timed out", Ending{Event: bridge.EventTimedOut, Text: bridge.TimedOutText(q.TimeoutDuration())}),
		by("cancelled", Ending{Event: bridge.EventCancelled, Text: bridge.CancelledText("the customer called back")}),
		by("cancelled, no reason", Ending{Event: bridge.EventCancelled, Text: bridge.CancelledText("")}),
		by("retired", Ending{Event: bridge.EventCancelled, Status: bridge.CancelRetired,
			Text: bridge.RetiredText("the customer switched to the annual plan")}),
		by("implicitly answered", Ending{Event: bridge.EventCancelled, Status: bridge.CancelImplicitlyAnswered,
			Text: bridge.ImplicitlyAnsweredText("blue, like last quarter's report")}),
		by("superseded", Ending{Event: bridge.EventSuperseded, Text: bridge.SupersededText(4)}),
		by("delivery failed", Ending{Event: bridge.EventDeliveryFailed, Text: "The question could not be shown to anyone."}))
}
