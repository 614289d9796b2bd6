package blockkit

import (
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/bridge"
)

// Card is what a question's Slack message shows. It is a projection of the
// durable question record, never the source of truth.
type Card struct {
	Question *bridge.Question
	AskedAt  time.Time
	Deadline time.Time
	// ConsoleURL is a signed link to the question in the web console; a
	// text too long for Slack is cut and points there.
	ConsoleURL string
}

// QuestionMessage renders a pending question: its content and its controls.
// The second result is the notification text (Slack's top-level "text").
func QuestionMessage(c Card) ([]slack.Block, string) {
	blocks := content(c)
	if c.Question == nil {
		return blocks, "A question waits for an answer"
	}
	if !c.Deadline.IsZero() || len(c.Question.Answerers) > 0 || c.Question.Owner != "" {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(whoAndWhen(c))))
	}
	blocks = append(blocks, controls(c.Question)...)
	return capBlocks(blocks, MaxMessageBlks), fallback(c.Question)
}

// SettledMessage renders a question that no longer waits: the same content,
// no controls, and one context line saying how it ended.
func SettledMessage(c Card, outcome string) ([]slack.Block, string) {
	blocks := content(c)
	blocks = capBlocks(blocks, MaxMessageBlks-1)
	blocks = append(blocks, slack.NewContextBlock("outcome", mrkdwn(outcome)))
	text := outcome
	if c.Question != nil {
		text = fallback(c.Question) + " — " + outcome
	}
	return blocks, plain(text, 300)
}

// ThreadParent renders the message that opens a job's thread.
func ThreadParent(q *bridge.Question, consoleURL string) ([]slack.Block, string) {
	agent := q.Agent
	if agent == "" {
		agent = "An agent"
	}
	agentText, _ := fitEscaped(agent, 200, 0)
	line := "*" + agentText + "* needs input on job `" + q.JobID + "` (task version " +
		strconv.FormatInt(q.TaskVersion, 10) + ", tenant `" + q.Tenant + "`). Questions follow in this thread."
	blocks := []slack.Block{slack.NewSectionBlock(mrkdwn(line), nil, nil)}
	if consoleURL != "" {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn("<"+consoleURL+"|Open the job in the askbridge console>")))
	}
	return blocks, plain(agent+" needs input on job "+q.JobID, 300)
}

// content is the part of the card that stays after the question settles.
func content(c Card) []slack.Block {
	q := c.Question
	if q == nil {
		return []slack.Block{slack.NewSectionBlock(mrkdwn("_This question's text is not available here._"), nil, nil)}
	}
	var blocks []slack.Block
	head := ""
	if q.IsApproval() {
		head = "*Approval requested*\n"
	}
	blocks = append(blocks, section(head, q.Question, c.ConsoleURL))
	if q.Context != "" {
		blocks = append(blocks, section("*Context:* ", q.Context, c.ConsoleURL))
	}
	if q.WhyItMatters != "" {
		blocks = append(blocks, section("*Why it matters:* ", q.WhyItMatters, c.ConsoleURL))
	}
	if q.Proposal != nil {
		var b strings.Builder
		for _, l := range q.Proposal.Summary {
			b.WriteString("• " + l + "\n")
		}
		head := "*Proposal*"
		if q.Proposal.ID != "" {
			id, _ := fitEscaped(q.Proposal.ID, 100, 0)
			head += " `" + id + "`"
		}
		blocks = append(blocks, section(head+"\n", strings.TrimRight(b.String(), "\n"), c.ConsoleURL))
	}
	if len(q.Fields) > 0 {
		names := make([]string, len(q.Fields))
		for i, f := range q.Fields {
			names[i] = f.Title()
			if f.Required {
				names[i] += " (required)"
			}
		}
		text, _ := fitEscaped(strings.Join(names, ", "), MaxContextText-20, 0)
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn("Asks for: "+text)))
	}
	return blocks
}

// section renders head (already mrkdwn) and escaped user text, cut to
// Slack's section limit with a console link when too long: never dropped.
func section(head, text, consoleURL string) slack.Block {
	more := " _(cut short)_"
	if consoleURL != "" {
		more = " <" + consoleURL + "|Read the whole text in the console>"
	}
	body, cut := fitEscaped(text, MaxSectionText-len([]rune(head)), len([]rune(more)))
	if cut {
		body += more
	}
	return slack.NewSectionBlock(mrkdwn(head+body), nil, nil)
}

func whoAndWhen(c Card) string {
	q := c.Question
	var parts []string
	var who []string
	for _, a := range q.Answerers {
		who = append(who, Mention(a))
	}
	switch {
	case len(who) > 0 && q.Owner != "":
		parts = append(parts, "Who may answer: "+strings.Join(who, ", ")+" (owner "+Mention(q.Owner)+")")
	case len(who) > 0:
		parts = append(parts, "Who may answer: "+strings.Join(who, ", "))
	case q.Owner != "":
		parts = append(parts, "Who may answer: operators, and the owner "+Mention(q.Owner))
	default:
		parts = append(parts, "Who may answer: operators")
	}
	if !c.Deadline.IsZero() {
		parts = append(parts, "Answer by "+SlackDate(c.Deadline))
	}
	s := strings.Join(parts, " · ")
	// Mentions only, no user text: cut without escaping.
	return plain(s, MaxContextText)
}

// controls are the card's buttons or select, in one actions block whose
// id carries the question's Ref.
func controls(q *bridge.Question) []slack.Block {
	ref := RefOf(q)
	var els []slack.BlockElement
	decline := slack.NewButtonBlockElement(ActionDecline, "decline", ptext("Decline"))
	switch {
	case q.IsApproval():
		els = append(els,
			slack.NewButtonBlockElement(ActionApprove, "approve", ptext("Approve")).WithStyle(slack.StylePrimary),
			slack.NewButtonBlockElement(ActionDeny, "deny", ptext("Deny")).WithStyle(slack.StyleDanger),
			decline)
	case len(q.Fields) > 0:
		els = append(els, slack.NewButtonBlockElement(ActionAnswer, "answer", ptext("Answer…")).WithStyle(slack.StylePrimary), decline)
	case len(q.Choices) > 0 && buttonsFit(q.Choices):
		for i, c := range q.Choices {
			els = append(els, slack.NewButtonBlockElement(actionChoice+strconv.Itoa(i), c, ptext(c)))
		}
		els = append(els, decline)
	case len(q.Choices) > 0:
		opts := make([]*slack.OptionBlockObject, 0, min(len(q.Choices), MaxSelectOpts))
		for i, c := range q.Choices {
			if i == MaxSelectOpts {
				break
			}
			opts = append(opts, slack.NewOptionBlockObject(strconv.Itoa(i), ptext(plain(c, MaxOptionText)), nil))
		}
		els = append(els, slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, ptext("Choose an answer"), ActionSelect, opts...), decline)
	default:
		els = append(els, slack.NewButtonBlockElement(ActionAnswer, "answer", ptext("Answer")).WithStyle(slack.StylePrimary), decline)
	}
	return []slack.Block{slack.NewActionBlock(ActionsBlockID(ref), els...)}
}

// buttonsFit reports whether choices are few and short enough to be buttons.
func buttonsFit(choices []string) bool {
	if len(choices) > maxButtonChoices {
		return false
	}
	for _, c := range choices {
		if len([]rune(c)) > maxShortChoice || strings.TrimSpace(c) == "" {
			return false
		}
	}
	return true
}

// capBlocks keeps the first n blocks. Our cards have far fewer; this is a
// last guard so a message is never refused outright.
func capBlocks(b []slack.Block, n int) []slack.Block {
	if len(b) > n {
		return b[:n]
	}
	return b
}

func fallback(q *bridge.Question) string {
	prefix := "Question: "
	if q.IsApproval() {
		prefix = "Approval requested: "
	}
	return plain(prefix+q.Question, 300)
}

func mrkdwn(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

func ptext(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, plain(s, MaxButtonText), false, false)
}

// OutcomeLine is the mrkdwn context line of a settled card, e.g. "Answered
// by @kevin: blue". q, when known, gives the timeout for timed_out events.
// Answers and comments are escaped and cut so the line fits its block.
func OutcomeLine(ev *bridge.Event, q *bridge.Question) string {
	who := Who(ev.By, ev.ByName)
	user := func(s string) string {
		out, _ := fitEscaped(strings.TrimSpace(s), 2500, 0)
		return out
	}
	switch ev.Type {
	case bridge.EventAnswered:
		if q != nil && q.IsApproval() {
			var v string
			if s := strings.Trim(string(ev.Answer), `"`); s == bridge.Denied {
				v = "Denied by " + who
				if ev.Comment != "" {
					v += ": " + user(ev.Comment)
				}
				return v
			}
			return "Approved by " + who
		}
		text := ev.AnswerText
		if text == "" {
			text = string(ev.Answer)
		}
		return "Answered by " + who + ": " + user(text)
	case bridge.EventDeclined:
		if strings.TrimSpace(ev.Comment) == "" {
			return "Declined by " + who
		}
		return "Declined by " + who + ": " + user(ev.Comment)
	case bridge.EventTimedOut:
		if q != nil {
			return "Nobody answered within " + bridge.FormatTimeout(q.TimeoutDuration())
		}
		if ev.Text != "" {
			return user(strings.TrimSuffix(ev.Text, "."))
		}
		return "Nobody answered in time"
	case bridge.EventSuperseded:
		return "Superseded by a newer version of this task"
	case bridge.EventCancelled:
		return "Cancelled"
	case bridge.EventDeliveryFailed:
		return "Could not be delivered"
	}
	return "Closed"
}
