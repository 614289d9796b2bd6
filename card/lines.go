package card

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// Person is someone a card names. A renderer shows a person of its own
// platform as a mention, anyone else by name or identity.
type Person struct {
	Identity string
	Name     string
}

// SpanKind says what a span of a line holds, so a renderer knows what to
// escape, cut or turn into a mention.
type SpanKind int

const (
	// SpanWords are askbridge's own words: safe to show as they are.
	SpanWords SpanKind = iota
	// SpanQuote is someone else's words (an answer, a reason): a renderer
	// escapes them for its markup and may cut them to fit.
	SpanQuote
	// SpanWho is a person.
	SpanWho
	// SpanWhen is a moment, shown in each reader's time zone where the
	// platform can.
	SpanWhen
)

// Span is one piece of a line.
type Span struct {
	Kind   SpanKind
	Text   string
	Person Person
	Time   time.Time
}

// Words, Quote, Who and When make spans.
func Words(s string) Span        { return Span{Kind: SpanWords, Text: s} }
func Quote(s string) Span        { return Span{Kind: SpanQuote, Text: s} }
func Who(p Person) Span          { return Span{Kind: SpanWho, Person: p} }
func When(t time.Time) Span      { return Span{Kind: SpanWhen, Time: t} }
func (l Line) IsZero() bool      { return len(l.Spans) == 0 }
func (m MayAnswer) IsZero() bool { return m.Roles == "" }

// Line is a labelled line of a card: "Who may answer: @ana and operators".
// Renderers show the label as their platform does (a field's name, a bold
// prefix) and the spans after it.
type Line struct {
	Label string
	Spans []Span
}

// Style turns spans into a platform's text. A nil function shows the
// span as Text does.
type Style struct {
	Words func(string) string
	Quote func(string) string
	Who   func(Person) string
	When  func(time.Time) string
}

// Render is the line's spans in style s, without the label.
func (l Line) Render(s Style) string {
	var b strings.Builder
	for _, sp := range l.Spans {
		switch sp.Kind {
		case SpanWords:
			b.WriteString(apply(s.Words, sp.Text))
		case SpanQuote:
			b.WriteString(apply(s.Quote, sp.Text))
		case SpanWho:
			if s.Who != nil {
				b.WriteString(s.Who(sp.Person))
			} else {
				b.WriteString(PlainWho(sp.Person))
			}
		case SpanWhen:
			if s.When != nil {
				b.WriteString(s.When(sp.Time))
			} else {
				b.WriteString(sp.Time.UTC().Format("2 Jan 2006, 15:04 UTC"))
			}
		}
	}
	return b.String()
}

// Text is the line's spans as plain text, people by identity and name.
func (l Line) Text() string { return l.Render(Style{}) }

func apply(f func(string) string, s string) string {
	if f == nil {
		return s
	}
	return f(s)
}

// PlainWho names a person in plain text: "slack:U0KEV (kevin)", or
// "someone" when nobody is named.
func PlainWho(p Person) string {
	if p.Identity == "" {
		if p.Name != "" {
			return p.Name
		}
		return "someone"
	}
	return bridge.DisplayIdentity(p.Identity, p.Name)
}

// MayAnswer is who may answer a question: operators, admins and owners
// always (Roles), and the question's answerers and owner besides. A
// restricted question names who it waits for; operators may only decline
// it (Note).
type MayAnswer struct {
	Answerers []Person
	Owner     *Person
	// Roles is "operators" (who stand for admins and owners too), or
	// "admins" for a restricted question.
	Roles string
	Note  string
}

func mayAnswerOf(q *bridge.Question) MayAnswer {
	m := MayAnswer{Roles: q.AnswerRoles()}
	if q.Restricted() {
		m.Note = "operators may decline it"
	}
	for _, a := range q.Answerers {
		m.Answerers = append(m.Answerers, Person{Identity: a})
	}
	if q.Owner != "" {
		m.Owner = &Person{Identity: q.Owner}
	}
	return m
}

// delegatedLines are "@kevin asked @dana to answer", one per delegation.
func delegatedLines(q *bridge.Question) []Line {
	var out []Line
	for _, d := range q.Delegations {
		out = append(out, Line{Spans: []Span{Who(Person{Identity: d.By, Name: d.ByName}), Words(" asked "),
			Who(Person{Identity: d.To}), Words(" to answer")}})
	}
	return out
}

// Line says who may answer, naming at most listed answerers and how many
// more there are: "@ana, @bo, 3 more, @kev (owner), and operators".
// Renderers pick listed to fit their platform.
func (m MayAnswer) Line(listed int) Line {
	var items [][]Span
	for i, p := range m.Answerers {
		if i == listed {
			items = append(items, []Span{Words(strconv.Itoa(len(m.Answerers)-i) + " more")})
			break
		}
		items = append(items, []Span{Who(p)})
	}
	if m.Owner != nil {
		items = append(items, []Span{Who(*m.Owner), Words(" (owner)")})
	}
	items = append(items, []Span{Words(m.Roles)})
	l := Line{Label: LabelMayAnswer}
	for i, it := range items {
		switch {
		case i == 0:
		case len(items) == 2:
			l.Spans = append(l.Spans, Words(" and "))
		case i == len(items)-1:
			l.Spans = append(l.Spans, Words(", and "))
		default:
			l.Spans = append(l.Spans, Words(", "))
		}
		l.Spans = append(l.Spans, it...)
	}
	if m.Note != "" {
		l.Spans = append(l.Spans, Words("; "+m.Note))
	}
	return merge(l)
}

// All is Line naming every answerer.
func (m MayAnswer) All() Line { return m.Line(len(m.Answerers)) }

// merge joins neighbouring word spans.
func merge(l Line) Line {
	out := l.Spans[:0:0]
	for _, s := range l.Spans {
		if n := len(out); n > 0 && s.Kind == SpanWords && out[n-1].Kind == SpanWords {
			out[n-1].Text += s.Text
			continue
		}
		out = append(out, s)
	}
	l.Spans = out
	return l
}

// cancelledPrefix is how the runtime's cancel text begins when it gives
// the agent's reason (bridge.CancelledText).
var cancelledPrefix = strings.TrimSuffix(bridge.CancelledText("x"), "x.")

// statusLine is the line of a retired or implicitly answered question:
// "No longer needed: <reason>", "Answered in conversation: “<evidence>”".
// The status comes with the event; a view or a stored card has only the
// runtime's text (bridge.CancelText), which begins the same way.
func statusLine(e *Ending) ([]Span, bool) {
	text := strings.TrimSpace(e.Text)
	switch {
	case e.Status == bridge.CancelRetired || strings.HasPrefix(text, bridge.RetiredPrefix):
		why := strings.TrimSuffix(strings.TrimPrefix(text, bridge.RetiredPrefix), ".")
		return []Span{Words(strings.TrimSuffix(bridge.RetiredPrefix, " ") + " "), Quote(why)}, true
	case e.Status == bridge.CancelImplicitlyAnswered || strings.HasPrefix(text, bridge.ImplicitlyAnsweredPrefix):
		words := strings.TrimPrefix(text, bridge.ImplicitlyAnsweredPrefix+"“")
		if i := strings.LastIndex(words, "”"); i >= 0 {
			// The audit's copy may add the agent's reason after the quote.
			words = words[:i]
		}
		return []Span{Words(bridge.ImplicitlyAnsweredPrefix + "“"), Quote(words), Words("”")}, true
	}
	return nil, false
}

// supersededFormat reads the new task version out of the runtime's
// superseded text (bridge.SupersededText).
var supersededFormat = strings.Replace(bridge.SupersededText(1), "1", "%d", 1)

// outcomeLine says how a question ended: "Answered by @kevin: blue". q,
// when known, gives the timeout of a timed-out question. A hidden card
// does not say the answer, which tells what was asked.
func outcomeLine(e *Ending, q *bridge.Question, hidden bool) Line {
	by := Who(Person{Identity: e.By, Name: e.ByName})
	l := Line{Label: LabelOutcome}
	withWhy := func(lead string, why string) Line {
		l.Spans = []Span{Words(lead + " by "), by}
		if why = strings.TrimSpace(why); why != "" {
			l.Spans = append(l.Spans, Words(": "), Quote(why))
		}
		return l
	}
	switch e.Event {
	case bridge.EventAnswered:
		if q != nil && q.IsApproval() {
			if e.Answer != bridge.Denied {
				return withWhy("Approved", "")
			}
			return withWhy("Denied", unless(hidden, e.Comment))
		}
		return withWhy("Answered", unless(hidden, e.Answer))
	case bridge.EventDeclined:
		return withWhy("Declined", e.Comment)
	case bridge.EventTimedOut:
		switch {
		case q != nil:
			l.Spans = []Span{Words("Nobody answered within " + bridge.FormatTimeout(q.TimeoutDuration()))}
		case strings.TrimSpace(e.Text) != "":
			l.Spans = []Span{Quote(strings.TrimSuffix(strings.TrimSpace(e.Text), "."))}
		default:
			l.Spans = []Span{Words("Nobody answered in time")}
		}
	case bridge.EventCancelled:
		if sl, ok := statusLine(e); ok {
			l.Spans = sl
			break
		}
		l.Spans = []Span{Words("Cancelled")}
		if why, ok := strings.CutPrefix(strings.TrimSuffix(strings.TrimSpace(e.Text), "."), cancelledPrefix); ok && why != "" {
			l.Spans = append(l.Spans, Words(": "), Quote(why))
		}
	case bridge.EventSuperseded:
		l.Spans = []Span{Words("Superseded by a newer version of this task")}
		var v int64
		if _, err := fmt.Sscanf(e.Text, supersededFormat, &v); err == nil && v > 0 {
			l.Spans = []Span{Words("Superseded by task version " + strconv.FormatInt(v, 10))}
		}
	case "":
		l.Spans = []Span{Words("Ended")}
	default:
		// delivery_failed: its text is for the agent ("could not be shown
		// to anyone"), which a card in front of people cannot say.
		l.Spans = []Span{Words("Failed: askbridge could not deliver this question")}
	}
	return l
}

// unless is s, or nothing when hide is set.
func unless(hide bool, s string) string {
	if hide {
		return ""
	}
	return s
}
