package discord

import (
	"cmp"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bridge"
	neutral "github.com/askbridge/askbridge/card"
)

// Discord limits the rendering respects.
const (
	maxTitle        = 256
	maxDescription  = 2000 // of 4096: keeps the embed under 6000 in total
	maxFieldValue   = 600  // of 1024
	maxFieldText    = 1024
	maxButtonLabel  = 80
	maxOptionLabel  = 100
	maxOptionDesc   = 100
	maxButtonChoice = 20 // 4 rows of 5, the fifth row holds Decline
	maxLinkURL      = 512
	maxContent      = 2000
	maxModalTitle   = 45
	maxInputLabel   = 45
	maxPlaceholder  = 100
	maxAnswerInput  = 4000
)

// Embed colours.
const (
	colorPending  = 0x5865F2
	colorAnswered = 0x57F287
	colorDeclined = 0xFEE75C
	colorClosed   = 0x95A5A6
	colorRefused  = 0xED4245
)

// who shows an identity: a Discord user as a mention, others as written.
func who(id, name string) string {
	if user, ok := strings.CutPrefix(id, bridge.PlatformDiscord+":"); ok && user != "" {
		return "<@" + user + ">"
	}
	return bridge.DisplayIdentity(id, name)
}

func stamp(t time.Time) string {
	return fmt.Sprintf("<t:%d:f> (<t:%d:R>)", t.Unix(), t.Unix())
}

// consoleEnabled reports whether console links can be signed.
func (b *Bot) consoleEnabled() bool {
	return len(b.o.Console.Secret) > 0 && b.o.Console.PublicURL != ""
}

// questionLink signs a console link to c's question for identity, with
// the roles mapped from their Discord roles (the console passes them on to
// the runtime, as a click's attempt does), or "" when the console is off.
func (b *Bot) questionLink(identity string, roles []string, tenant, job, question string) string {
	if !b.consoleEnabled() || identity == "" {
		return ""
	}
	return b.o.Console.QuestionURLWithRoles(identity, roles, tenant, job, question, console.DefaultLinkTTL)
}

// consoleLinkButton is an Open in console link button to u, or nil when u is
// longer than Discord takes in a button (a long ASK_PUBLIC_URL with long
// ids): the caller then gives the link in its text, which takes it.
func consoleLinkButton(u string) discordgo.MessageComponent {
	if u == "" || len(u) > maxLinkURL {
		return nil
	}
	return discordgo.Button{Label: "Open in console", Style: discordgo.LinkButton, URL: u}
}

// consoleHint tells card readers how to reach the console: each clicker
// gets a link of their own.
const consoleHint = "Click **Open in console** for a link of your own (shown only to you)."

// consoleField heads the waiting card's fields or long list of choices,
// with consoleHint; a settled card, whose button is gone, keeps the list
// under settledConsoleField.
const (
	consoleField        = "Answer in the askbridge console"
	settledConsoleField = "Asked in the askbridge console"
)

// discordStyle draws a card's lines in Discord's markdown: Discord users
// as mentions, moments in each reader's time zone, others' words cut.
var discordStyle = neutral.Style{
	Quote: func(s string) string { return bridge.Truncate(strings.TrimSpace(s), 400) },
	Who:   func(p neutral.Person) string { return who(p.Identity, p.Name) },
	When:  stamp,
}

// mayAnswer says who may answer within a field's value: as many whole
// names as fit (a cut mention shows as raw text), how many more there
// are, the owner and the roles.
func mayAnswer(m neutral.MayAnswer) string {
	best := m.Line(0).Render(discordStyle)
	for listed := 1; listed <= len(m.Answerers); listed++ {
		s := m.Line(listed).Render(discordStyle)
		if utf8.RuneCountInString(s) > maxFieldValue {
			break
		}
		best = s
	}
	return best
}

// neutralOf is the platform-neutral card of c: settled once it has an
// outcome.
func neutralOf(c *card, console bool) neutral.Card {
	in := neutral.Input{Tenant: c.Tenant, JobID: c.JobID, QuestionID: c.QuestionID, TaskVersion: c.TaskVersion,
		Question: c.Question, AskedAt: c.AskedAt, Deadline: c.Deadline, Console: console, Proposal: c.Proposal}
	if c.Outcome != nil {
		in.End = c.Outcome.ending()
	}
	return neutral.New(in)
}

// ending is o as the neutral card takes it.
func (o *outcome) ending() *neutral.Ending {
	return &neutral.Ending{Event: o.Type, By: o.By, ByName: o.ByName, Answer: o.Answer, Comment: o.Reason, Text: o.Text, At: o.At}
}

// cardEmbed renders the question's card as an embed: waiting, or settled
// once c has its outcome.
func cardEmbed(c *card) *discordgo.MessageEmbed { return drawEmbed(neutralOf(c, false)) }

// drawEmbed renders a neutral card as an embed. A waiting card ends with
// its status, who may answer, its deadline and the tools it holds up; a
// settled one with its outcome instead.
func drawEmbed(nc neutral.Card) *discordgo.MessageEmbed {
	description := nc.Text
	if nc.Kind == neutral.KindHidden {
		description = "*" + nc.Placeholder + "*"
	}
	e := &discordgo.MessageEmbed{
		Type:        discordgo.EmbedTypeRich,
		Title:       bridge.Truncate(nc.Title, maxTitle),
		Description: bridge.Truncate(description, maxDescription),
		Color:       colorPending,
		Footer: &discordgo.MessageEmbedFooter{
			Text: bridge.Truncate(fmt.Sprintf("askbridge · %s/%s/%s · task version %d", nc.Tenant, nc.JobID, nc.QuestionID, nc.TaskVersion), 200),
		},
	}
	if !nc.AskedAt.IsZero() {
		e.Timestamp = nc.AskedAt.UTC().Format(time.RFC3339)
	}
	add := func(name, value string, inline bool) {
		if strings.TrimSpace(value) == "" {
			return
		}
		e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: name, Value: bridge.Truncate(value, maxFieldValue), Inline: inline})
	}
	for _, sec := range nc.Sections {
		if sec.Rows != nil {
			// A table of bounded rows (card.MaxArgumentRows) fits a field whole.
			e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: sec.Label, Value: bridge.Truncate(rowsText(sec), maxFieldText)})
			continue
		}
		add(sec.Label, cmp.Or(sec.Text, strings.Join(sec.Lines, "\n")), false)
	}
	consoleName, hint := consoleField, consoleHint+"\n"
	if !nc.Pending() {
		// No button is left to click: the list stays, the hint goes.
		consoleName, hint = settledConsoleField, ""
	}
	switch {
	case len(nc.Asks) > 0:
		add(consoleName, hint+"• "+strings.Join(nc.Asks, "\n• "), false)
	case len(nc.Choices) > maxChoices:
		add(consoleName, hint+fmt.Sprintf("%d choices, more than Discord can show: %s", len(nc.Choices), strings.Join(nc.Choices, ", ")), false)
	}
	if !nc.Pending() {
		line, color := outcomeLine(nc)
		e.Color = color
		add(neutral.LabelApprovals, nc.ApprovalsLine().Render(discordStyle), false)
		e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: neutral.LabelOutcome, Value: bridge.Truncate(line, 1000)})
		fitEmbed(e)
		return e
	}
	add(neutral.LabelStatus, nc.Status().Render(discordStyle), true)
	add(neutral.LabelApprovals, nc.ApprovalsLine().Render(discordStyle), true)
	add(neutral.LabelMayApprove, nc.MayApproveLine().Render(discordStyle), true)
	if nc.ShowsMayAnswer() {
		add(neutral.LabelMayAnswer, mayAnswer(nc.MayAnswer), true)
	}
	for _, l := range nc.Delegated {
		add(neutral.LabelAskedToAnswer, l.Render(discordStyle), true)
	}
	add(neutral.LabelDeadline, nc.DeadlineLine().Render(discordStyle), true)
	add(neutral.LabelExpires, nc.ExpiresLine().Render(discordStyle), true)
	add(neutral.LabelBlocked, strings.Join(nc.BlockedTools, ", "), true)
	fitEmbed(e)
	return e
}

// cardComponents renders the card's enabled controls: buttons five a
// row, a select for choices that do not fit buttons, and Open in console
// for what Discord cannot ask (typed fields, more choices than a select
// takes). Decline and Open in console share the last row. Open in console
// is a normal button, never a link: the card sits on a channel message
// anyone there can read, so its click replies, to the clicker alone,
// with a console link signed for that clicker.
func (b *Bot) cardComponents(c *card) []discordgo.MessageComponent {
	return drawComponents(neutralOf(c, b.consoleEnabled()))
}

// rowsText is a table of arguments, a row a line: "`order`: 4471".
// Backticks in a key would end its code span.
func rowsText(sec neutral.Section) string {
	lines := make([]string, 0, len(sec.Rows)+1)
	for _, r := range sec.Rows {
		lines = append(lines, "`"+strings.ReplaceAll(r.Key, "`", "'")+"`: "+r.Value)
	}
	if sec.More > 0 {
		lines = append(lines, neutral.MoreText(sec.More))
	}
	return strings.Join(lines, "\n")
}

// drawComponents renders a neutral card's enabled controls. A settled
// card has none on Discord: its edit removes every component, Open in
// console too (/ask show gives a link of one's own).
func drawComponents(nc neutral.Card) []discordgo.MessageComponent {
	if !nc.Pending() {
		return nil
	}
	id := func(act string, index int) string {
		return customID(act, nc.Tenant, nc.JobID, nc.QuestionID, nc.TaskVersion, index)
	}
	var rows []discordgo.MessageComponent
	var last []discordgo.MessageComponent // Decline, and Open in console
	var more []discordgo.MessageComponent // Ask someone else, Remind me later
	// A hidden card's answerers read and answer it in the console.
	console := nc.Pending() && nc.Kind == neutral.KindHidden
	for _, k := range nc.Enabled() {
		switch k.Action {
		case neutral.ActApprove:
			// As on Slack: Approve proposes at once, Deny opens a form asking
			// why, Decline (for someone who cannot decide) the decline form.
			last = append(last, discordgo.Button{Label: k.Label, Style: discordgo.SuccessButton, CustomID: id(actApprove, 0)})
		case neutral.ActDeny:
			last = append(last, discordgo.Button{Label: k.Label, Style: discordgo.DangerButton, CustomID: id(actDeny, 0)})
		case neutral.ActAnswer:
			if nc.Kind == neutral.KindFields {
				console = true
				continue
			}
			last = append(last, discordgo.Button{Label: k.Label, Style: discordgo.PrimaryButton, CustomID: id(actAnswer, 0)})
		case neutral.ActChoice:
			if k.Index > 0 {
				continue
			}
			if len(nc.Choices) > maxChoices {
				console = true
				continue
			}
			rows = append(rows, choiceRows(nc.Choices, id)...)
		case neutral.ActDecline:
			last = append(last, discordgo.Button{Label: k.Label, Style: discordgo.SecondaryButton, CustomID: id(actDecline, 0)})
		case neutral.ActConsole:
			console = true
		case neutral.ActDelegate:
			more = append(more, discordgo.Button{Label: k.Label, Style: discordgo.SecondaryButton, CustomID: id(actDelegate, 0)})
		case neutral.ActSnooze:
			more = append(more, discordgo.Button{Label: k.Label, Style: discordgo.SecondaryButton, CustomID: id(actSnooze, 0)})
		}
	}
	if console {
		last = append(last, discordgo.Button{Label: neutral.ConsoleLabel, Style: discordgo.PrimaryButton, CustomID: id(actConsole, 0)})
	}
	// Ask someone else and Remind me later get a row of their own, or,
	// when the choices leave no row for it, join the last row, which then
	// holds at most Decline and Open in console.
	if len(more) > 0 && len(rows)+2 > maxRows && len(last)+len(more) <= maxRowButtons {
		last, more = append(last, more...), nil
	}
	if len(last) > 0 {
		rows = append(rows, discordgo.ActionsRow{Components: last})
	}
	if len(more) > 0 && len(rows) < maxRows {
		rows = append(rows, discordgo.ActionsRow{Components: more})
	}
	return rows
}

// Discord's limits on a message's components: rows, and buttons a row.
const (
	maxRows       = 5
	maxRowButtons = 5
)

// choiceRows are choices as buttons, five a row, or as one select when
// they are too many or too long for buttons.
func choiceRows(choices []string, id func(string, int) string) []discordgo.MessageComponent {
	if len(choices) > maxButtonChoice || !buttonsFit(choices) {
		opts := make([]discordgo.SelectMenuOption, len(choices))
		for i, ch := range choices {
			label, desc := optionText(ch)
			opts[i] = discordgo.SelectMenuOption{Label: label, Description: desc, Value: fmt.Sprint(i)}
		}
		one := 1
		return []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.SelectMenu{
			MenuType: discordgo.StringSelectMenu, CustomID: id(actSelect, 0), Placeholder: neutral.ChooseLabel,
			MinValues: &one, MaxValues: 1, Options: opts,
		}}}}
	}
	var rows []discordgo.MessageComponent
	var row []discordgo.MessageComponent
	for i, ch := range choices {
		row = append(row, discordgo.Button{Label: bridge.Truncate(strings.TrimSpace(ch), maxButtonLabel), Style: discordgo.PrimaryButton, CustomID: id(actChoice, i)})
		if len(row) == 5 {
			rows = append(rows, discordgo.ActionsRow{Components: row})
			row = nil
		}
	}
	if len(row) > 0 {
		rows = append(rows, discordgo.ActionsRow{Components: row})
	}
	return rows
}

// buttonsFit reports whether every choice fits a button's label whole:
// a cut label could read the same as another choice's.
func buttonsFit(choices []string) bool {
	for _, ch := range choices {
		if utf8.RuneCountInString(strings.TrimSpace(ch)) > maxButtonLabel {
			return false
		}
	}
	return true
}

// optionText splits a choice into a select option's label and
// description, which together show it whole: a choice has at most
// bridge.MaxChoiceText (200) characters, a label and a description 100
// each. The label ends at a space when one leaves the rest room.
func optionText(choice string) (label, desc string) {
	r := []rune(strings.TrimSpace(choice))
	if len(r) <= maxOptionLabel {
		return string(r), ""
	}
	cut := maxOptionLabel
	for i := maxOptionLabel; i > 0 && len(r)-i-1 <= maxOptionDesc; i-- {
		if unicode.IsSpace(r[i]) && strings.TrimSpace(string(r[:i])) != "" {
			cut = i
			break
		}
	}
	return strings.TrimSpace(string(r[:cut])), bridge.Truncate(strings.TrimSpace(string(r[cut:])), maxOptionDesc)
}

// outcomeLine is what a settled card says happened, with when, and the
// embed's colour.
func outcomeLine(nc neutral.Card) (string, int) {
	line := nc.Outcome.Render(discordStyle)
	if !nc.Ended.IsZero() {
		line += " · " + stamp(nc.Ended)
	}
	switch nc.State {
	case bridge.StateAnswered, neutral.StateApproved, neutral.StateExecuted:
		return line, colorAnswered
	case neutral.StateDenied, neutral.StateExecutionFailed:
		return line, colorRefused
	case bridge.StateDeclined:
		return line, colorDeclined
	}
	return line, colorClosed
}

// settledEmbed is e, a card drawn before (a message the bot has no
// record of), with the outcome o: its content stays, what only a waiting
// card shows goes.
func settledEmbed(e *discordgo.MessageEmbed, o *outcome) *discordgo.MessageEmbed {
	line, color := outcomeLine(neutral.New(neutral.Input{End: o.ending()}))
	out := *e
	out.Color = color
	out.Fields = nil
	for _, f := range e.Fields {
		switch f.Name {
		case neutral.LabelOutcome, neutral.LabelStatus, neutral.LabelMayAnswer, neutral.LabelDeadline, neutral.LabelBlocked,
			neutral.LabelApprovals, neutral.LabelMayApprove, neutral.LabelExpires, neutral.LabelAskedToAnswer:
		case consoleField:
			out.Fields = append(out.Fields, &discordgo.MessageEmbedField{Name: settledConsoleField,
				Value: strings.TrimPrefix(f.Value, consoleHint+"\n"), Inline: f.Inline})
		default:
			out.Fields = append(out.Fields, f)
		}
	}
	out.Fields = append(out.Fields, &discordgo.MessageEmbedField{Name: neutral.LabelOutcome, Value: bridge.Truncate(line, 1000)})
	fitEmbed(&out)
	return &out
}

// maxEmbedTotal is Discord's limit on an embed's title, description,
// field names and values, footer and author together; an edit over it is
// refused (50035), and the card would keep its buttons.
const maxEmbedTotal = 6000

// embedSize counts what Discord counts toward maxEmbedTotal.
func embedSize(e *discordgo.MessageEmbed) int {
	n := utf8.RuneCountInString(e.Title) + utf8.RuneCountInString(e.Description)
	for _, f := range e.Fields {
		n += utf8.RuneCountInString(f.Name) + utf8.RuneCountInString(f.Value)
	}
	if e.Footer != nil {
		n += utf8.RuneCountInString(e.Footer.Text)
	}
	if e.Author != nil {
		n += utf8.RuneCountInString(e.Author.Name)
	}
	return n
}

// fitEmbed cuts e to maxEmbedTotal: the description first, then the
// longest fields other than the outcome (the choices last), never below
// a short excerpt.
func fitEmbed(e *discordgo.MessageEmbed) {
	over := embedSize(e) - maxEmbedTotal
	if over <= 0 {
		return
	}
	const keep = 200
	if d := utf8.RuneCountInString(e.Description); d > keep {
		cut := min(over, d-keep)
		e.Description = bridge.Truncate(e.Description, d-cut)
		over -= cut
	}
	fields := make([]*discordgo.MessageEmbedField, len(e.Fields))
	for i, f := range e.Fields {
		copied := *f // the pending card's fields stay as they are
		fields[i] = &copied
	}
	e.Fields = fields
	// The choices /ask show lists are the words /ask answer takes: they
	// are cut only when nothing else is left to cut.
	for _, cutChoices := range []bool{false, true} {
		for over > 0 {
			var longest *discordgo.MessageEmbedField
			for _, f := range fields {
				if f.Name == "Outcome" || strings.HasPrefix(f.Name, "Choices") && !cutChoices {
					continue
				}
				if longest == nil || utf8.RuneCountInString(f.Value) > utf8.RuneCountInString(longest.Value) {
					longest = f
				}
			}
			n := 0
			if longest != nil {
				n = utf8.RuneCountInString(longest.Value)
			}
			if n <= 60 {
				break // nothing left worth cutting
			}
			cut := min(over, n-60)
			longest.Value = bridge.Truncate(longest.Value, n-cut)
			over -= cut
		}
	}
}

// answerModal is the free-text answer form.
func answerModal(c *card) *discordgo.InteractionResponse {
	return textModal(c, actModalAnswer, "Answer the question", discordgo.TextInput{CustomID: "answer", Label: "Your answer",
		Placeholder: bridge.Truncate(c.Question.Question, maxPlaceholder), Required: true, MinLength: 1, MaxLength: maxAnswerInput})
}

// denyModal asks why an approval is denied, as Slack's deny modal does:
// the reason is required, since the agent reads it to adjust its plan.
func denyModal(c *card) *discordgo.InteractionResponse {
	return textModal(c, actModalDeny, "Deny the proposal", discordgo.TextInput{CustomID: "reason", Label: "Why deny it?",
		Placeholder: "What should the agent do instead?", Required: true, MinLength: 1, MaxLength: bridge.MaxCommentText})
}

// declineModal asks for the reason of a decline.
func declineModal(c *card) *discordgo.InteractionResponse {
	return textModal(c, actModalReason, "Decline to answer", discordgo.TextInput{CustomID: "reason", Label: "Why? Who could answer instead?",
		Placeholder: "For example: ask Ana, she owns the report.", Required: false, MaxLength: bridge.MaxCommentText})
}

// textModal is a form of one paragraph input about c's question, submitted
// with action act.
func textModal(c *card, act, title string, in discordgo.TextInput) *discordgo.InteractionResponse {
	in.Style = discordgo.TextInputParagraph
	return &discordgo.InteractionResponse{Type: discordgo.InteractionResponseModal, Data: &discordgo.InteractionResponseData{
		CustomID:   customID(act, c.Tenant, c.JobID, c.QuestionID, c.TaskVersion, 0),
		Title:      title,
		Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{in}}},
	}}
}
