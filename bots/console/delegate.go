package console

import (
	"net/http"
	"strings"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
)

// Ask someone else and Remind me later (docs/contract.md "Delegate and
// snooze"): the question page offers them as the Slack and Discord cards
// do, and proposes them as those adapters do, as answer attempts the
// runtime decides.

// Inputs of the delegate and snooze forms.
const (
	inputDelegate = "delegate"
	inputSnooze   = "snooze"
)

// delegateForm and snoozeForm are the question page's two requests.
type delegateForm struct {
	Nonce, Token string
	Label        string
	Value        string
	Error        string
	DescribedBy  string
}

type snoozeForm struct {
	Nonce, Token string
	Label        string
	Options      []card.SnoozeOption
	Error        string
}

// requestForms draws Ask someone else and Remind me later for a person
// who may answer a waiting question.
func (c *Console) requestForms(l Link, p *questionPage, st formState) {
	if !p.View.CanAnswer || p.Outcome != nil {
		return
	}
	nonce := newNonce()
	d := &delegateForm{Nonce: nonce, Token: c.signer.FormToken(l, nonce), Label: card.DelegateLabel}
	if st.Action == bridge.ActionDelegate {
		d.Value, d.Error = st.Input.get(inputDelegate), st.Problems[inputDelegate]
	}
	d.DescribedBy = "delegate-hint"
	if d.Error != "" {
		d.DescribedBy += " delegate-err"
	}
	nonce = newNonce()
	s := &snoozeForm{Nonce: nonce, Token: c.signer.FormToken(l, nonce), Label: card.SnoozeLabel, Options: card.SnoozeOptions}
	if st.Action == bridge.ActionSnooze {
		s.Error = st.Problems[inputSnooze]
	}
	p.Delegate, p.Snooze = d, s
}

// requestAttempt checks a delegate or snooze; a problem re-draws the page
// with it, and nothing is sent.
func (c *Console) requestAttempt(w http.ResponseWriter, r *http.Request, s submission, rep *bridge.ShowReply) (bridge.AnswerAttempt, bool) {
	v := rep.Question
	problem, field := "", inputDelegate
	a := c.newAttempt(s, v, s.action, nil, "")
	switch s.action {
	case bridge.ActionDelegate:
		to := strings.TrimSpace(s.form.Get(inputDelegate))
		switch {
		case to == "":
			problem = "Say whom to ask: their identity, such as slack:U0DANA or console:dana."
		case bridge.CheckIdentity(to) != nil:
			problem = "The person to ask must be an identity askbridge knows, such as slack:U0DANA, discord:123456789012345678 or console:dana, not " + quoteShort(to) + "."
		case to == s.l.Identity:
			problem = "Pick someone else: you may answer it yourself."
		}
		a.Delegate = to
	default:
		field = inputSnooze
		a.Snooze = s.form.Get(inputSnooze)
		problem = "Pick when to be reminded: " + snoozeChoices() + "."
		for _, o := range card.SnoozeOptions {
			if o.Value == a.Snooze {
				problem = ""
			}
		}
	}
	if problem != "" {
		st := formState{Action: s.action, Input: formInput(s.form), Problems: map[string]string{field: problem}}
		c.render(w, r, http.StatusUnprocessableEntity, "question", c.buildQuestionPage(s.l, rep, st))
		return a, false
	}
	return a, true
}

func snoozeChoices() string {
	var out []string
	for _, o := range card.SnoozeOptions {
		out = append(out, strings.ToLower(o.Label))
	}
	return strings.Join(out, ", ")
}

func quoteShort(s string) string { return `"` + bridge.Truncate(s, 60) + `"` }
