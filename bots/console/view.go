package console

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
)

// base is what every page's layout needs.
type base struct {
	Title    string
	Identity string
	// Events is the page's event stream (live updates); Inbox the way
	// back to the inbox, for a page the inbox led to.
	Events string
	Inbox  string
}

func (c *Console) base(l Link, title string) base {
	b := base{Title: title, Identity: l.Identity, Inbox: c.inboxURL(l)}
	if l.Scope == ScopeList || l.Scope == ScopeQuestion {
		b.Events = c.eventsURL(l)
	}
	return b
}

type errorData struct {
	base
	Status int
	Text   string
}

// timeView is a moment as a <time> element shows it.
type timeView struct {
	ISO  string
	Text string
}

func (t timeView) IsZero() bool { return t.ISO == "" }

func when(t time.Time) timeView {
	if t.IsZero() {
		return timeView{}
	}
	u := t.UTC()
	return timeView{ISO: u.Format(time.RFC3339), Text: u.Format("2 Jan 2006, 15:04 UTC")}
}

// sentence makes a problem a sentence with its subject: "is required" of
// the field Send on is "Send on is required.", "on: is required" too (the
// runtime's words name the field by its name); a sentence of its own
// ("Pick someone else: ...") stays as it is. Empty for no problem.
func sentence(subject, name, msg string) string {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return ""
	}
	if name != "" {
		msg = strings.TrimPrefix(msg, name+": ")
	}
	first, _, _ := strings.Cut(msg, " ")
	switch first {
	case "is", "must", "are", "has", "cannot", "needs", "should":
		msg = subject + " " + msg
	default:
		if r := msg[0]; r < 'A' || r > 'Z' {
			msg = subject + ": " + msg
		}
	}
	if !strings.HasSuffix(msg, ".") && !strings.HasSuffix(msg, "?") && !strings.HasSuffix(msg, "!") {
		msg += "."
	}
	return msg
}

// formState is what the form shows besides the question: the input kept
// from a refused attempt, and the problems in words.
type formState struct {
	// Action is the form the input and problems belong to (answer or
	// decline; approve and deny belong to the answer form).
	Action   string
	Input    formInput
	Problems map[string]string
	// Message is the refusal as a whole ("You can't answer this question: ...").
	Message string
}

type questionPage struct {
	base
	// StateKey is the page's state for live updates (a change re-draws
	// the page); StateLine says it in one line, while the question waits:
	// "Waiting for an answer · waiting 12 min · deadline in 3 h".
	StateKey  string
	StateLine []string
	// WhoLabel and Who are the one line of who may decide it.
	WhoLabel string
	Who      string
	// MessageParts is Message with its moments as <time> elements.
	MessageParts []textPart
	// Done is the runtime's words on a delegate or snooze it carried out;
	// SentRequest says what was sent (Sent) is one of those.
	Done        string
	SentRequest bool
	Delegate    *delegateForm
	Snooze      *snoozeForm
	// ApprovedSoFar: "Approved, 1 of 2: it runs once the second approver agrees."
	ApprovedSoFar string
	View          *bridge.QuestionView
	Q             *bridge.Question
	// Card is what every front-end shows about the question: the page
	// takes its words (state, who may answer, outcome, placeholder).
	Card        card.Card
	MayAnswer   string
	Ref         string
	AskedAt     timeView
	Deadline    timeView
	Outcome     *outcomeView
	Sent        bool
	Message     string
	Summary     []problemView
	Answer      *answerForm
	Decline     *declineForm
	CannotAct   bool
	PostURL     string
	TaskVersion int64
	// Restricted names who may read a restricted question ("slack:U0ANA
	// and admins"); empty for a question of tenant visibility.
	Restricted string
	// Proposal is an approval's proposal as the cards show it; Approvals,
	// MayApprove and Expires are the card's lines while it waits.
	Proposal   *proposalView
	Approvals  string
	MayApprove string
	Expires    timeView
	// YouApproved says the link's identity approved the waiting
	// proposal, which needs more approvals.
	YouApproved bool
}

// problemView is one problem, a sentence with its subject ("Copies must
// be at most 9."), linked to its input.
type problemView struct {
	Anchor string
	Text   string
}

type outcomeView struct {
	State string
	// CardState is the card's state where it says more than State: an
	// approval's approved, denied, executed, execution_failed, expired.
	CardState string
	Heading   string
	// ProposalLine is the card's outcome line of an approved proposal:
	// who approved it, not yet executed, or its execution ("Executed:
	// …"); Approvals the card's approvals line.
	ProposalLine string
	Approvals    string
	// Line is the card's outcome line, for endings without an answer or
	// a reason to show (timed out, cancelled, superseded, failed).
	Line string
	// Next says what happens now: "Your answer reached the agent; job-3 goes on."
	Next    string
	Answer  string
	Comment string
	By      string
	Via     string
	At      timeView
}

type answerForm struct {
	Nonce string
	Token string
	// Kind is fields, choices, text or approval.
	Kind         string
	Fields       []fieldView
	Choices      []optionView
	Text         string
	Error        string
	Comment      string
	CommentError string
}

type declineForm struct {
	Nonce        string
	Token        string
	Comment      string
	CommentError string
	Error        string
}

type fieldView struct {
	ID       string
	Name     string
	Label    string
	Desc     string
	Hint     string
	Input    string
	Required bool
	Min      string
	Max      string
	// InputMode is a number input's inputmode: the keyboard phones show.
	InputMode string
	MaxLength int
	Value     string
	Checked   bool
	Options   []optionView
	Error     string
	// DescribedBy lists the ids of the description, hint and error.
	DescribedBy string
}

type optionView struct {
	ID       string
	Value    string
	Selected bool
}

// summary lists every problem at the top of the page, linking each to
// its input, for people who cannot see the whole form at once.
func summary(p *questionPage) []problemView {
	var out []problemView
	if a := p.Answer; a != nil {
		for _, f := range a.Fields {
			if f.Error != "" {
				out = append(out, problemView{Anchor: f.ID, Text: f.Error})
			}
		}
		if a.Error != "" {
			out = append(out, problemView{Anchor: "answer", Text: a.Error})
		}
		if a.CommentError != "" {
			out = append(out, problemView{Anchor: "answer-comment", Text: a.CommentError})
		}
	}
	if d := p.Decline; d != nil {
		if d.CommentError != "" {
			out = append(out, problemView{Anchor: "decline-comment", Text: d.CommentError})
		}
		if d.Error != "" {
			out = append(out, problemView{Anchor: "decline-comment", Text: d.Error})
		}
	}
	if d := p.Delegate; d != nil && d.Error != "" {
		out = append(out, problemView{Anchor: "delegate-to", Text: d.Error})
	}
	if sn := p.Snooze; sn != nil && sn.Error != "" {
		out = append(out, problemView{Anchor: "snooze", Text: sn.Error})
	}
	return out
}

func (c *Console) answerForm(l Link, q *bridge.Question, st formState) *answerForm {
	nonce := newNonce()
	f := &answerForm{
		Nonce:        nonce,
		Token:        c.signer.FormToken(l, nonce),
		Text:         st.Input.get(inputAnswer),
		Error:        sentence("Your answer", inputAnswer, st.Problems[inputAnswer]),
		Comment:      st.Input.get(inputComment),
		CommentError: sentence("The reason", inputComment, st.Problems[inputComment]),
	}
	if msg := st.Problems[""]; msg != "" && f.Error == "" {
		f.Error = sentence("Your answer", "", msg)
	}
	switch {
	case q.IsApproval():
		f.Kind = "approval"
	case len(q.Fields) > 0:
		f.Kind = "fields"
		for i := range q.Fields {
			f.Fields = append(f.Fields, fieldViewOf(&q.Fields[i], st))
		}
		// Problems for names that are not fields of the question.
		var extra []string
		for name := range st.Problems {
			if name != "" && name != inputAnswer && name != inputComment && !hasField(q, name) {
				extra = append(extra, sentence(name, name, st.Problems[name]))
			}
		}
		sort.Strings(extra)
		if len(extra) > 0 && f.Error == "" {
			f.Error = strings.Join(extra, " ")
		}
	case len(q.Choices) > 0:
		f.Kind = "choices"
		for i, ch := range q.Choices {
			f.Choices = append(f.Choices, optionView{ID: "choice-" + strconv.Itoa(i), Value: ch, Selected: f.Text == ch})
		}
	default:
		f.Kind = "text"
	}
	return f
}

func hasField(q *bridge.Question, name string) bool {
	for _, f := range q.Fields {
		if f.Name == name {
			return true
		}
	}
	return false
}

func fieldViewOf(f *bridge.Field, st formState) fieldView {
	name := fieldPrefix + f.Name
	v := fieldView{
		ID:       "f-" + f.Name,
		Name:     name,
		Label:    f.Title(),
		Desc:     f.Description,
		Required: f.Required,
		Value:    st.Input.get(name),
		Error:    sentence(f.Title(), f.Name, st.Problems[f.Name]),
	}
	switch f.Kind {
	case bridge.FieldDate:
		v.Input = "date"
		if f.DateTime {
			v.Input = "datetime-local"
			v.Hint = "A date and time, in UTC."
		}
	case bridge.FieldNumber:
		// A text input, not type=number: for what it cannot read ("1e",
		// "2,5") a number input sends nothing, and an optional field would
		// be dropped from the answer without a word. As text, what was
		// typed reaches the validator, which says what is wrong with it.
		v.Input = "number"
		lo, hi := f.InputBounds()
		if lo != nil {
			v.Min = strconv.FormatFloat(*lo, 'f', -1, 64)
		}
		if hi != nil {
			v.Max = strconv.FormatFloat(*hi, 'f', -1, 64)
		}
		v.Hint = numberHint(f.Integer, v.Min, v.Max)
		// A phone's number pad, when no minus sign is needed.
		if lo != nil && *lo >= 0 {
			v.InputMode = "decimal"
			if f.Integer {
				v.InputMode = "numeric"
			}
		}
	case bridge.FieldChoice:
		v.Input = "select"
		for i, o := range f.Options {
			v.Options = append(v.Options, optionView{ID: v.ID + "-" + strconv.Itoa(i), Value: o, Selected: v.Value == o})
		}
	case bridge.FieldMultiChoice:
		v.Input = "checkboxes"
		v.Hint = "Pick any that apply."
		for i, o := range f.Options {
			v.Options = append(v.Options, optionView{ID: v.ID + "-" + strconv.Itoa(i), Value: o, Selected: st.Input.has(name, o)})
		}
	case bridge.FieldToggle:
		v.Input = "toggle"
		v.Checked = v.Value == "true"
	default:
		v.Input = "text"
		if f.Multiline {
			v.Input = "textarea"
		}
		// A browser counts maxlength in UTF-16 units, the validator in
		// characters: twice as many units never stops a valid answer, and
		// the validator says when it is too long.
		v.MaxLength = 2 * f.MaxLength
		if f.MaxLength > 0 {
			v.Hint = "At most " + strconv.Itoa(f.MaxLength) + " characters."
		}
	}
	var ids []string
	if v.Desc != "" {
		ids = append(ids, v.ID+"-desc")
	}
	if v.Hint != "" {
		ids = append(ids, v.ID+"-hint")
	}
	if v.Error != "" {
		ids = append(ids, v.ID+"-err")
	}
	v.DescribedBy = strings.Join(ids, " ")
	return v
}

func numberHint(integer bool, lo, hi string) string {
	what := "A number"
	if integer {
		what = "A whole number"
	}
	switch {
	case lo != "" && hi != "":
		return what + " from " + lo + " to " + hi + "."
	case lo != "":
		return what + ", at least " + lo + "."
	case hi != "":
		return what + ", at most " + hi + "."
	}
	return what + "."
}

type auditRow struct {
	From   string
	To     string
	By     string
	Via    string
	Reason string
	At     timeView
}

func auditView(a bridge.AuditEntry) auditRow {
	from := a.From
	if from == "" {
		from = "new"
	}
	return auditRow{From: from, To: a.To, By: a.By, Via: a.Via, Reason: a.Reason, At: when(a.At)}
}
