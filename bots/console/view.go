package console

import (
	"cmp"
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
	View *bridge.QuestionView
	Q    *bridge.Question
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

type problemView struct {
	Anchor string
	Label  string
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
	Line    string
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

// buildQuestionPage lays out one question for the link's identity.
func (c *Console) buildQuestionPage(l Link, rep *bridge.ShowReply, st formState) *questionPage {
	v := rep.Question
	nc := card.New(card.FromView(v, false))
	p := &questionPage{
		base:        c.base(l, "Question"),
		View:        v,
		Card:        nc,
		Ref:         v.Tenant + " / " + v.JobID + " / " + v.QuestionID,
		AskedAt:     when(v.AskedAt),
		Deadline:    when(v.Deadline),
		PostURL:     c.signer.RelativeURL(l),
		TaskVersion: v.TaskVersion,
		Message:     st.Message,
		Restricted:  restrictedText(v),
		Proposal:    proposalOf(nc, v.Question),
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
	p.Approvals, p.MayApprove = nc.ApprovalsLine().Text(), nc.MayApproveLine().Text()
	p.YouApproved = nc.Pending() && approvedBy(nc.Proposal, l.Identity)
	if l := nc.ExpiresLine(); !l.IsZero() {
		p.Expires = when(nc.Expires)
	}
	if !nc.Pending() {
		p.Outcome = &outcomeView{
			State:     v.State,
			CardState: moreState(v.State, nc.State),
			Heading:   nc.StateLabel,
			Line:      nc.Outcome.Text(),
			Answer:    v.AnswerText,
			Comment:   v.Comment,
			By:        bridge.DisplayIdentity(v.By, v.ByName),
			Via:       v.Via,
			At:        when(cmp.Or(nc.Ended, v.SettledAt)),

			Approvals: nc.ApprovalsLine().Text(),
		}
		switch nc.State {
		case card.StateApproved, card.StateExecuted, card.StateExecutionFailed:
			if nc.Proposal != nil {
				p.Outcome.ProposalLine = nc.Outcome.Text()
			}
		}
		return p
	}
	answerState, declineState := formState{}, formState{}
	if st.Action == bridge.ActionDecline {
		declineState = st
	} else {
		answerState = st
	}
	if v.CanAnswer && p.Q != nil {
		p.Answer = c.answerForm(l, p.Q, answerState)
	}
	if v.CanDecline {
		nonce := newNonce()
		p.Decline = &declineForm{
			Nonce:        nonce,
			Token:        c.signer.FormToken(l, nonce),
			Comment:      declineState.Input.get(inputComment),
			CommentError: declineState.Problems[inputComment],
			Error:        declineState.Problems[""],
		}
	}
	p.CannotAct = p.Answer == nil && p.Decline == nil
	p.Summary = summary(p)
	return p
}

// summary lists every problem at the top of the page, linking each to
// its input, for people who cannot see the whole form at once.
func summary(p *questionPage) []problemView {
	var out []problemView
	if a := p.Answer; a != nil {
		for _, f := range a.Fields {
			if f.Error != "" {
				out = append(out, problemView{Anchor: f.ID, Label: f.Label, Text: f.Error})
			}
		}
		if a.Error != "" {
			out = append(out, problemView{Anchor: "answer", Label: "Answer", Text: a.Error})
		}
		if a.CommentError != "" {
			out = append(out, problemView{Anchor: "answer-comment", Label: "Reason", Text: a.CommentError})
		}
	}
	if d := p.Decline; d != nil {
		if d.CommentError != "" {
			out = append(out, problemView{Anchor: "decline-comment", Label: "Reason for declining", Text: d.CommentError})
		}
		if d.Error != "" {
			out = append(out, problemView{Anchor: "decline-comment", Label: "Decline", Text: d.Error})
		}
	}
	return out
}

func (c *Console) answerForm(l Link, q *bridge.Question, st formState) *answerForm {
	nonce := newNonce()
	f := &answerForm{
		Nonce:        nonce,
		Token:        c.signer.FormToken(l, nonce),
		Text:         st.Input.get(inputAnswer),
		Error:        st.Problems[inputAnswer],
		Comment:      st.Input.get(inputComment),
		CommentError: st.Problems[inputComment],
	}
	if msg := st.Problems[""]; msg != "" && f.Error == "" {
		f.Error = msg
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
				extra = append(extra, name+": "+st.Problems[name])
			}
		}
		sort.Strings(extra)
		if len(extra) > 0 && f.Error == "" {
			f.Error = strings.Join(extra, "; ")
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
		Error:    st.Problems[f.Name],
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
