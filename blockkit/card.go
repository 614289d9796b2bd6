package blockkit

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
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
	// Proposal is an approval's proposal as it stands, when known.
	Proposal *bridge.ProposalStatus
}

// Console buttons. Their action ids are parsed like the other actions;
// their block ids carry the question's Ref as the other ids do.
const (
	ConsoleButtonText = card.ConsoleLabel
	// cutWithButton and cutPlain follow a text cut short in a channel
	// message: the whole text is behind the console button, or nowhere here.
	cutWithButton = " _(cut short: *" + ConsoleButtonText + "* shows the whole text)_"
	cutPlain      = " _(cut short)_"
)

// Neutral is the platform-neutral card of c: pending, or ended as end says.
func (c Card) Neutral(end *card.Ending) card.Card {
	in := card.Input{Question: c.Question, AskedAt: c.AskedAt, Deadline: c.Deadline, Console: c.Console, End: end, Proposal: c.Proposal}
	if q := c.Question; q != nil {
		in.Tenant, in.JobID, in.QuestionID, in.TaskVersion = q.Tenant, q.JobID, q.QuestionID, q.TaskVersion
	}
	return card.New(in)
}

// consoleButton is the "Open in console" button with action id action.
func consoleButton(action string) *slack.ButtonBlockElement {
	return slack.NewButtonBlockElement(action, action, ptext(ConsoleButtonText))
}

// messageCut is the note after a text cut short in a channel message.
func messageCut(console bool) string {
	if console {
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
	return Draw(c.Neutral(nil))
}

// SettledMessage renders a question that no longer waits, with outcome
// (mrkdwn, from OutcomeLine) as its outcome line.
func SettledMessage(c Card, outcome string) ([]slack.Block, string) {
	return drawSettled(c.Neutral(&card.Ending{At: c.Ended}), outcome)
}

// Draw renders a neutral card: a waiting card with its controls, or a
// settled one with its outcome line.
func Draw(nc card.Card) ([]slack.Block, string) {
	if !nc.Pending() {
		return drawSettled(nc, mrkdwnLine(nc.Outcome))
	}
	var tail []slack.Block
	if line := stateLine(nc); line != "" {
		tail = append(tail, slack.NewContextBlock("", mrkdwn(line)))
	}
	tail = append(tail, controls(nc)...)
	blocks := append(content(nc, messageCut(hasConsole(nc)), MaxCardText-textSize(tail)), tail...)
	return capBlocks(blocks, MaxMessageBlks), fallback(nc)
}

// drawSettled renders a settled card: the same content, no controls, and
// one context line saying how it ended. With the console configured, a
// section before that line offers "Open in console" (the whole text, the
// answer and its history), as an accessory button: the card keeps no
// actions block once settled.
func drawSettled(nc card.Card, outcome string) ([]slack.Block, string) {
	var tail []slack.Block
	if hasConsole(nc) && nc.QuestionID != "" {
		tail = append(tail, slack.NewSectionBlock(mrkdwn("The whole question, its answer and its history are in the askbridge console."),
			nil, slack.NewAccessory(consoleButton(ActionConsole)), slack.SectionBlockOptionBlockID(ActionsBlockID(refOf(nc)))))
	}
	if !nc.Ended.IsZero() {
		outcome += " · " + SlackDate(nc.Ended)
	}
	if l := nc.ApprovalsLine(); !l.IsZero() {
		tail = append(tail, slack.NewContextBlock("approvals", mrkdwn(mrkdwnLine(l))))
	}
	tail = append(tail, slack.NewContextBlock("outcome", mrkdwn(outcome)))
	blocks := capBlocks(content(nc, messageCut(hasConsole(nc)), MaxCardText-textSize(tail)), MaxMessageBlks-len(tail))
	blocks = append(blocks, tail...)
	text := outcome // mrkdwn already, and not cut: a cut could split its markup
	if nc.QuestionID != "" {
		text = fallback(nc) + " — " + outcome
	}
	return blocks, text
}

func hasConsole(nc card.Card) bool {
	for _, k := range nc.Controls {
		if k.Action == card.ActConsole {
			return true
		}
	}
	return false
}

func refOf(nc card.Card) Ref {
	return Ref{Tenant: nc.Tenant, JobID: nc.JobID, QuestionID: nc.QuestionID, Version: nc.TaskVersion}
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
func content(nc card.Card, more string, budget int) []slack.Block {
	title, _ := fitEscaped(nc.Title, 200, 0)
	head := "*" + title + "*\n"
	if nc.Kind == card.KindHidden {
		return []slack.Block{slack.NewSectionBlock(mrkdwn(head+"_"+nc.Placeholder+"_"), nil, nil)}
	}
	type part struct {
		head, text string
		rank       int // served in this order
	}
	parts := []part{{head, nc.Text, 0}}
	ranks := map[string]int{card.LabelProposal: 1, card.LabelAmount: 1, card.LabelArguments: 1, card.LabelWhy: 2, card.LabelContext: 3}
	for _, sec := range nc.Sections {
		p := part{"*" + sec.Label + ":* ", sec.Text, ranks[sec.Label]}
		if sec.Rows != nil {
			p.head, p.text = "*"+sec.Label+"*\n", rowsText(sec)
		}
		if sec.Lines != nil {
			var b strings.Builder
			for _, l := range sec.Lines {
				b.WriteString("• " + l + "\n")
			}
			p.head = "*" + sec.Label + "*"
			if sec.Tag != "" {
				id, _ := fitEscaped(sec.Tag, 100, 0)
				p.head += " `" + id + "`"
			}
			p.head, p.text = p.head+"\n", strings.TrimRight(b.String(), "\n")
		}
		parts = append(parts, p)
	}
	var asks slack.Block
	if len(nc.Asks) > 0 {
		text, _ := fitEscaped(strings.Join(nc.Asks, ", "), MaxContextText-20, 0)
		asks = slack.NewContextBlock("", mrkdwn(card.LabelAsks+": "+text))
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

// stateLine is a waiting card's context line: its status, its approvals
// so far and who may still approve (or else who may answer), its deadline and
// expiry, and the tools it holds up.
func stateLine(nc card.Card) string {
	var parts []string
	if l := nc.Status(); !l.IsZero() {
		parts = append(parts, l.Label+": "+mrkdwnLine(l))
	}
	if l := nc.ApprovalsLine(); !l.IsZero() {
		parts = append(parts, mrkdwnLine(l)) // "1 of 2 approvals: @kevin" says what it is
	}
	lines := []card.Line{nc.MayApproveLine()}
	if nc.ShowsMayAnswer() {
		lines = append(lines, nc.MayAnswer.Line(maxListedAnswerers))
	}
	for _, l := range append(lines, nc.DeadlineLine(), nc.ExpiresLine()) {
		if !l.IsZero() {
			parts = append(parts, l.Label+": "+mrkdwnLine(l))
		}
	}
	for _, l := range nc.Delegated {
		parts = append(parts, mrkdwnLine(l))
	}
	if len(nc.BlockedTools) > 0 {
		tools, _ := fitEscaped(strings.Join(nc.BlockedTools, ", "), 500, 0)
		parts = append(parts, card.LabelBlocked+": "+tools)
	}
	// At most maxListedAnswerers mentions (each at most 140 characters),
	// the owner and the date fit the block: nothing is cut, so no mention
	// is split and the deadline always shows.
	return strings.Join(parts, " · ")
}

// maxListedAnswerers is how many answerers a card names; it says how many
// more there are.
const maxListedAnswerers = 10

// slackStyle draws a card's lines in mrkdwn: people as mentions (or by
// name), moments in each reader's time zone, others' words escaped.
var slackStyle = card.Style{
	Quote: func(s string) string {
		out, _ := fitEscaped(strings.TrimSpace(s), 2500, 0)
		return out
	},
	Who:  func(p card.Person) string { return Who(p.Identity, p.Name) },
	When: SlackDate,
}

// mrkdwnLine is a card's line in mrkdwn, without its label.
func mrkdwnLine(l card.Line) string { return l.Render(slackStyle) }

// controls are the card's enabled controls in one actions block whose id
// carries the question's Ref: choices as buttons when they are few and
// short, else one select.
func controls(nc card.Card) []slack.Block {
	var els []slack.BlockElement
	for _, k := range nc.Enabled() {
		switch k.Action {
		case card.ActApprove:
			els = append(els, slack.NewButtonBlockElement(ActionApprove, "approve", ptext(k.Label)).WithStyle(slack.StylePrimary))
		case card.ActDeny:
			els = append(els, slack.NewButtonBlockElement(ActionDeny, "deny", ptext(k.Label)).WithStyle(slack.StyleDanger))
		case card.ActAnswer:
			els = append(els, slack.NewButtonBlockElement(ActionAnswer, "answer", ptext(k.Label)).WithStyle(slack.StylePrimary))
		case card.ActDecline:
			els = append(els, slack.NewButtonBlockElement(ActionDecline, "decline", ptext(k.Label)))
		case card.ActConsole:
			els = append(els, consoleButton(ActionConsole))
		case card.ActDelegate:
			els = append(els, moreMenu()) // Remind me later's lengths with it
		case card.ActSnooze:
		case card.ActChoice:
			if k.Index > 0 {
				continue // all choices are drawn with the first
			}
			if buttonsFit(nc.Choices) {
				for i, c := range nc.Choices {
					els = append(els, slack.NewButtonBlockElement(actionChoice+strconv.Itoa(i), c, ptext(c)))
				}
				continue
			}
			els = append(els, slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, ptext(card.ChooseLabel), ActionSelect,
				options(nc.Choices, MaxSelectOpts)...))
		}
	}
	if len(els) == 0 {
		return nil
	}
	return []slack.Block{slack.NewActionBlock(ActionsBlockID(refOf(nc)), els...)}
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
// question must not notify a channel. A hidden card's says only that a
// question waits.
func fallback(nc card.Card) string {
	text := nc.Text
	if nc.Kind == card.KindHidden {
		text = nc.Placeholder
	}
	out, _ := fitEscaped(nc.Title+": "+strings.TrimSpace(text), 300, 0)
	return out
}

func mrkdwn(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

func ptext(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, plain(s, MaxButtonText), false, false)
}

// OutcomeLine is the mrkdwn line of a settled card, e.g. "Answered by
// @kevin: blue": the card's outcome (card.New) drawn for Slack. q, when
// known, gives the timeout for timed_out events.
func OutcomeLine(ev *bridge.Event, q *bridge.Question) string {
	end := card.EndingOf(ev)
	if end == nil {
		end = &card.Ending{Event: ev.Type, At: ev.At}
	}
	return mrkdwnLine(card.New(card.Input{Question: q, End: end}).Outcome)
}
