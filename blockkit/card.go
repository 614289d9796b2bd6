package blockkit

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/bridge"
)

// Card is what a question's Slack message shows. It is a projection of the
// durable question record, never the source of truth.
type Card struct {
	Question *bridge.Question
	AskedAt  time.Time
	Deadline time.Time
	// Console says the web console is configured. Channel messages (the
	// card, settled or not) then offer an "Open in console" button; its
	// click is answered with a link minted for the person who clicked.
	// A channel message never carries a console link itself: everyone in
	// the channel reads it, and a link acts as the identity it was signed
	// for.
	Console bool
	// ConsoleURL is a signed console link for one person. Only views shown
	// to that person alone (modals) use it: a text too long for Slack is cut
	// there and points to it. Channel messages ignore it.
	ConsoleURL string
	// Ended is when the question ended, for a settled card's outcome line
	// (in each reader's time zone); zero leaves it out.
	Ended time.Time
}

// Console buttons. Their action ids are parsed like the other actions;
// their block ids carry the question's Ref as the other ids do.
const (
	ConsoleButtonText = "Open in console"
	// cutWithButton and cutPlain follow a text cut short in a channel
	// message: the whole text is behind the console button, or nowhere here.
	cutWithButton = " _(cut short: *" + ConsoleButtonText + "* shows the whole text)_"
	cutPlain      = " _(cut short)_"
)

// consoleButton is the "Open in console" button with action id action.
func consoleButton(action string) *slack.ButtonBlockElement {
	return slack.NewButtonBlockElement(action, action, ptext(ConsoleButtonText))
}

// messageCut is the note after a text cut short in a channel message.
func messageCut(c Card) string {
	if c.Console {
		return cutWithButton
	}
	return cutPlain
}

// modalCut is the note after a text cut short in a modal, which only the
// person who opened it sees: their own console link, when there is one.
func modalCut(c Card) string {
	if c.ConsoleURL != "" {
		return " <" + c.ConsoleURL + "|Read the whole text in the console>"
	}
	return cutPlain
}

// QuestionMessage renders a pending question: its content and its controls.
// The second result is the notification text (Slack's top-level "text").
func QuestionMessage(c Card) ([]slack.Block, string) {
	if c.Question == nil {
		return content(c, messageCut(c), MaxCardText), "A question waits for an answer"
	}
	var tail []slack.Block
	if !c.Deadline.IsZero() || len(c.Question.Answerers) > 0 || c.Question.Owner != "" {
		tail = append(tail, slack.NewContextBlock("", mrkdwn(whoAndWhen(c))))
	}
	tail = append(tail, controls(c.Question, c.Console)...)
	blocks := append(content(c, messageCut(c), MaxCardText-textSize(tail)), tail...)
	return capBlocks(blocks, MaxMessageBlks), fallback(c.Question)
}

// SettledMessage renders a question that no longer waits: the same content,
// no controls, and one context line saying how it ended. With the console
// configured, a section before that line offers "Open in console" (the
// whole text, the answer and its history), as an accessory button: the
// card keeps no actions block once settled.
func SettledMessage(c Card, outcome string) ([]slack.Block, string) {
	var tail []slack.Block
	if c.Console && c.Question != nil {
		tail = append(tail, slack.NewSectionBlock(mrkdwn("The whole question, its answer and its history are in the askbridge console."),
			nil, slack.NewAccessory(consoleButton(ActionConsole)), slack.SectionBlockOptionBlockID(ActionsBlockID(RefOf(c.Question)))))
	}
	if !c.Ended.IsZero() {
		outcome += " · " + SlackDate(c.Ended)
	}
	tail = append(tail, slack.NewContextBlock("outcome", mrkdwn(outcome)))
	blocks := capBlocks(content(c, messageCut(c), MaxCardText-textSize(tail)), MaxMessageBlks-len(tail))
	blocks = append(blocks, tail...)
	text := outcome // mrkdwn already, and not cut: a cut could split its markup
	if c.Question != nil {
		text = fallback(c.Question) + " — " + outcome
	}
	return blocks, text
}

// ThreadParent renders the message that opens a job's thread. With the
// console configured, its section has an "Open in console" button (action
// ActionConsoleJob, block id carrying the first question's Ref) whose click
// is answered with a job link for the person who clicked.
func ThreadParent(q *bridge.Question, console bool) ([]slack.Block, string) {
	agent := q.Agent
	if agent == "" {
		agent = "An agent"
	}
	agentText, _ := fitEscaped(agent, 200, 0)
	// No task version: the thread holds the job's questions of every
	// version, and its first message is not edited when the task moves on.
	line := "*" + agentText + "* needs input on job `" + q.JobID + "` (tenant `" + q.Tenant + "`). Questions follow in this thread."
	var blocks []slack.Block
	if console {
		blocks = []slack.Block{slack.NewSectionBlock(mrkdwn(line), nil, slack.NewAccessory(consoleButton(ActionConsoleJob)),
			slack.SectionBlockOptionBlockID(ActionsBlockID(RefOf(q))))}
	} else {
		blocks = []slack.Block{slack.NewSectionBlock(mrkdwn(line), nil, nil)}
	}
	text, _ := fitEscaped(strings.TrimSpace(agent)+" needs input on job "+q.JobID, 300, 0)
	return blocks, text
}

// content is the part of the card that stays after the question settles;
// more follows any text cut short. Its texts share budget characters,
// served in order of importance (the question, the proposal, why it
// matters, the context), each given at least minSectionText.
func content(c Card, more string, budget int) []slack.Block {
	q := c.Question
	if q == nil {
		return []slack.Block{slack.NewSectionBlock(mrkdwn("_This question's text is not available here._"), nil, nil)}
	}
	type part struct {
		head, text string
		rank       int // served in this order
	}
	head := ""
	if q.IsApproval() {
		head = "*Approval requested*\n"
	}
	parts := []part{{head, q.Question, 0}}
	if q.Context != "" {
		parts = append(parts, part{"*Context:* ", q.Context, 3})
	}
	if q.WhyItMatters != "" {
		parts = append(parts, part{"*Why it matters:* ", q.WhyItMatters, 2})
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
		parts = append(parts, part{head + "\n", strings.TrimRight(b.String(), "\n"), 1})
	}
	var asks slack.Block
	if len(q.Fields) > 0 {
		names := make([]string, len(q.Fields))
		for i, f := range q.Fields {
			names[i] = f.Title()
			if f.Required {
				names[i] += " (required)"
			}
		}
		text, _ := fitEscaped(strings.Join(names, ", "), MaxContextText-20, 0)
		asks = slack.NewContextBlock("", mrkdwn("Asks for: "+text))
		budget -= textSize([]slack.Block{asks})
	}
	blocks := make([]slack.Block, len(parts), len(parts)+1)
	later := len(parts)
	for rank := range 4 {
		for i, p := range parts {
			if p.rank != rank {
				continue
			}
			later--
			limit := max(min(MaxSectionText, budget-later*minSectionText), minSectionText)
			s, n := sectionWithin(p.head, p.text, more, limit)
			blocks[i] = s
			budget -= n
		}
	}
	if asks != nil {
		blocks = append(blocks, asks)
	}
	return blocks
}

// section renders head (already mrkdwn) and escaped user text, cut to
// Slack's section limit when too long, followed by more (which says where
// the whole text is): never dropped silently.
func section(head, text, more string) slack.Block {
	s, _ := sectionWithin(head, text, more, MaxSectionText)
	return s
}

// sectionWithin is section cut to limit characters; it also returns the
// characters the section's text holds.
func sectionWithin(head, text, more string, limit int) (slack.Block, int) {
	body, cut := fitEscaped(text, limit-utf8.RuneCountInString(head), utf8.RuneCountInString(more))
	if cut {
		body += more
	}
	return slack.NewSectionBlock(mrkdwn(head+body), nil, nil), utf8.RuneCountInString(head + body)
}

// textSize counts the characters of every text in blocks (text objects,
// option texts, labels), as Slack counts a message's text in all. The
// block kinds cards use are counted directly: every settled card is sized
// on the answer path, where a JSON round trip cost ten times the render.
func textSize(blocks []slack.Block) int {
	n := 0
	for _, b := range blocks {
		k, ok := knownTextSize(b)
		if !ok {
			k = jsonTextSize(b)
		}
		n += k
	}
	return n
}

// knownTextSize sizes the blocks cards are made of; false for others.
func knownTextSize(b slack.Block) (int, bool) {
	n := 0
	switch b := b.(type) {
	case *slack.SectionBlock:
		n += objectSize(b.Text)
		for _, f := range b.Fields {
			n += objectSize(f)
		}
		if a := b.Accessory; a != nil {
			if a.ButtonElement == nil {
				return 0, false
			}
			n += objectSize(a.ButtonElement.Text)
		}
	case *slack.ContextBlock:
		for _, e := range b.ContextElements.Elements {
			t, ok := e.(*slack.TextBlockObject)
			if !ok {
				return 0, false
			}
			n += objectSize(t)
		}
	case *slack.ActionBlock:
		if b.Elements == nil {
			return 0, true
		}
		for _, e := range b.Elements.ElementSet {
			switch e := e.(type) {
			case *slack.ButtonBlockElement:
				n += objectSize(e.Text)
			case *slack.SelectBlockElement:
				n += objectSize(e.Placeholder)
				for _, o := range e.Options {
					n += objectSize(o.Text) + objectSize(o.Description)
				}
				if e.InitialOption != nil || len(e.OptionGroups) > 0 || e.Confirm != nil {
					return 0, false
				}
			default:
				return 0, false
			}
		}
	default:
		return 0, false
	}
	return n, true
}

func objectSize(t *slack.TextBlockObject) int {
	if t == nil {
		return 0
	}
	return utf8.RuneCountInString(t.Text)
}

// jsonTextSize sizes any block through its JSON.
func jsonTextSize(b slack.Block) int {
	raw, err := json.Marshal(b)
	if err != nil {
		return 0
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return 0
	}
	n := 0
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			if s, ok := x["text"].(string); ok {
				n += utf8.RuneCountInString(s)
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(v)
	return n
}

func whoAndWhen(c Card) string {
	q := c.Question
	var parts []string
	var who []string
	for i, a := range q.Answerers {
		if i == maxListedAnswerers {
			who = append(who, "and "+strconv.Itoa(len(q.Answerers)-i)+" more")
			break
		}
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
	// At most maxListedAnswerers mentions (each at most 140 characters),
	// the owner and the date fit the block: nothing is cut, so no mention
	// is split and the deadline always shows.
	return strings.Join(parts, " · ")
}

// maxListedAnswerers is how many answerers a card names; it says how many
// more there are.
const maxListedAnswerers = 10

// controls are the card's buttons or select, in one actions block whose
// id carries the question's Ref; with the console configured, last comes
// "Open in console".
func controls(q *bridge.Question, console bool) []slack.Block {
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
		els = append(els, slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, ptext("Choose an answer"), ActionSelect,
			options(q.Choices, MaxSelectOpts)...), decline)
	default:
		els = append(els, slack.NewButtonBlockElement(ActionAnswer, "answer", ptext("Answer")).WithStyle(slack.StylePrimary), decline)
	}
	if console {
		els = append(els, consoleButton(ActionConsole))
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

// fallback is a message's top-level text, which notifications show. Slack
// reads it as mrkdwn, so the agent's words are escaped: "<!channel>" in a
// question must not notify a channel.
func fallback(q *bridge.Question) string {
	prefix := "Question: "
	if q.IsApproval() {
		prefix = "Approval requested: "
	}
	text, _ := fitEscaped(prefix+strings.TrimSpace(q.Question), 300, 0)
	return text
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
		return "Failed: askbridge could not deliver this question"
	}
	return "Closed"
}
