package discord

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bridge"
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

// truncate cuts s to n runes, marking the cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

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

// inConsole reports whether a question is answered in the console rather
// than on the card: typed fields, or more choices than Discord can show.
func inConsole(q *bridge.Question) bool {
	return len(q.Fields) > 0 || len(q.Choices) > maxChoices
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

// mayAnswer names who may answer within a field's value: whole names
// only (a cut mention shows as raw text), how many more there are, and
// the owner.
func mayAnswer(q *bridge.Question) string {
	owner := ""
	if q.Owner != "" {
		owner = who(q.Owner, "") + " (owner)"
	}
	if len(q.Answerers) == 0 && owner == "" {
		return "operators and admins"
	}
	room := maxFieldValue - utf8.RuneCountInString(owner) - len(", and 999 more, ")
	var names []string
	used := 0
	for i, a := range q.Answerers {
		n := who(a, "")
		used += utf8.RuneCountInString(n) + len(", ")
		if used > room {
			names = append(names, fmt.Sprintf("and %d more", len(q.Answerers)-i))
			break
		}
		names = append(names, n)
	}
	if owner != "" {
		names = append(names, owner)
	}
	return strings.Join(names, ", ")
}

// cardEmbed renders the question as an embed.
func cardEmbed(c *card) *discordgo.MessageEmbed {
	q := c.Question
	title := "Question"
	if q.IsApproval() {
		title = "Approval needed"
	}
	if q.Agent != "" {
		title += " from " + q.Agent
	}
	e := &discordgo.MessageEmbed{
		Type:        discordgo.EmbedTypeRich,
		Title:       truncate(title, maxTitle),
		Description: truncate(q.Question, maxDescription),
		Color:       colorPending,
		Footer: &discordgo.MessageEmbedFooter{
			Text: truncate(fmt.Sprintf("askbridge · %s/%s/%s · task version %d", c.Tenant, c.JobID, c.QuestionID, c.TaskVersion), 200),
		},
	}
	if !c.AskedAt.IsZero() {
		e.Timestamp = c.AskedAt.UTC().Format(time.RFC3339)
	}
	add := func(name, value string, inline bool) {
		if strings.TrimSpace(value) == "" {
			return
		}
		e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: name, Value: truncate(value, maxFieldValue), Inline: inline})
	}
	add("Context", q.Context, false)
	add("Why it matters", q.WhyItMatters, false)
	if q.Proposal != nil {
		add("Proposal", strings.Join(q.Proposal.Summary, "\n"), false)
	}
	switch {
	case len(q.Fields) > 0:
		var lines []string
		for _, f := range q.Fields {
			l := "• " + f.Title() + " (" + f.Kind
			if f.Required {
				l += ", required"
			}
			lines = append(lines, l+")")
		}
		add(consoleField, consoleHint+"\n"+strings.Join(lines, "\n"), false)
	case len(q.Choices) > maxChoices:
		add(consoleField, consoleHint+"\n"+fmt.Sprintf("%d choices, more than Discord can show: %s", len(q.Choices), strings.Join(q.Choices, ", ")), false)
	}
	add("Who may answer", mayAnswer(q), true)
	if !c.Deadline.IsZero() {
		add("Deadline", stamp(c.Deadline), true)
	}
	if len(q.BlockedTools) > 0 {
		add("Waiting on this", strings.Join(q.BlockedTools, ", "), true)
	}
	fitEmbed(e)
	return e
}

// cardComponents renders the card's buttons and selects.
func (b *Bot) cardComponents(c *card) []discordgo.MessageComponent {
	q := c.Question
	id := func(act string, index int) string {
		return customID(act, c.Tenant, c.JobID, c.QuestionID, c.TaskVersion, index)
	}
	decline := discordgo.Button{Label: "Decline", Style: discordgo.SecondaryButton, CustomID: id(actDecline, 0)}
	var rows []discordgo.MessageComponent
	switch {
	case q.IsApproval():
		// As on Slack: Approve proposes at once, Deny opens a form asking
		// why, Decline (for someone who cannot decide) the decline form.
		rows = append(rows, discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.Button{Label: "Approve", Style: discordgo.SuccessButton, CustomID: id(actApprove, 0)},
			discordgo.Button{Label: "Deny", Style: discordgo.DangerButton, CustomID: id(actDeny, 0)},
			decline,
		}})
		return rows
	case inConsole(q):
		rows = append(rows, discordgo.ActionsRow{Components: []discordgo.MessageComponent{consoleButton(c), decline}})
	case len(q.Choices) > maxButtonChoice || !buttonsFit(q.Choices):
		opts := make([]discordgo.SelectMenuOption, len(q.Choices))
		for i, ch := range q.Choices {
			label, desc := optionText(ch)
			opts[i] = discordgo.SelectMenuOption{Label: label, Description: desc, Value: fmt.Sprint(i)}
		}
		one := 1
		rows = append(rows,
			discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.SelectMenu{
				MenuType: discordgo.StringSelectMenu, CustomID: id(actSelect, 0), Placeholder: "Choose an answer",
				MinValues: &one, MaxValues: 1, Options: opts,
			}}},
			discordgo.ActionsRow{Components: []discordgo.MessageComponent{decline}})
	case len(q.Choices) > 0:
		var row []discordgo.MessageComponent
		for i, ch := range q.Choices {
			row = append(row, discordgo.Button{Label: truncate(strings.TrimSpace(ch), maxButtonLabel), Style: discordgo.PrimaryButton, CustomID: id(actChoice, i)})
			if len(row) == 5 {
				rows = append(rows, discordgo.ActionsRow{Components: row})
				row = nil
			}
		}
		if len(row) > 0 {
			rows = append(rows, discordgo.ActionsRow{Components: row})
		}
		rows = append(rows, discordgo.ActionsRow{Components: []discordgo.MessageComponent{decline}})
	default:
		rows = append(rows, discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.Button{Label: "Answer", Style: discordgo.PrimaryButton, CustomID: id(actAnswer, 0)},
			decline,
		}})
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
	return strings.TrimSpace(string(r[:cut])), truncate(strings.TrimSpace(string(r[cut:])), maxOptionDesc)
}

// consoleButton is a normal button, never a link: the card sits on a
// channel message anyone there can read, so its click replies, to the
// clicker alone, with a console link signed for that clicker.
func consoleButton(c *card) discordgo.MessageComponent {
	return discordgo.Button{Label: "Open in console", Style: discordgo.PrimaryButton,
		CustomID: customID(actConsole, c.Tenant, c.JobID, c.QuestionID, c.TaskVersion, 0)}
}

// outcomeLine is what a settled card says happened.
func outcomeLine(o *outcome) (string, int) {
	at := ""
	if !o.At.IsZero() {
		at = " · " + stamp(o.At)
	}
	switch o.Type {
	case bridge.EventAnswered:
		s := fmt.Sprintf("Answered by %s: **%s**", who(o.By, o.ByName), truncate(o.Answer, 400))
		if o.Answer == bridge.Denied && strings.TrimSpace(o.Reason) != "" {
			// A denial's reason, as the agent reads it.
			s += ". Reason: " + truncate(o.Reason, 400)
		}
		return s + at, colorAnswered
	case bridge.EventDeclined:
		s := "Declined by " + who(o.By, o.ByName)
		if strings.TrimSpace(o.Reason) != "" {
			s += ": " + truncate(o.Reason, 400)
		}
		return s + at, colorDeclined
	case bridge.EventTimedOut:
		return "Timed out. " + o.Text + at, colorClosed
	case bridge.EventCancelled:
		return "Cancelled. " + o.Text + at, colorClosed
	case bridge.EventSuperseded:
		return "Superseded. " + o.Text + at, colorClosed
	case bridge.EventDeliveryFailed:
		// The event's text is for the agent ("could not be shown to
		// anyone"), which a card in front of people cannot say.
		return "Failed: askbridge could not deliver this question" + at, colorClosed
	}
	return o.Text + at, colorClosed
}

// settledEmbed is the card's embed with its outcome.
func settledEmbed(e *discordgo.MessageEmbed, o *outcome) *discordgo.MessageEmbed {
	line, color := outcomeLine(o)
	out := *e
	out.Color = color
	out.Fields = nil
	for _, f := range e.Fields {
		switch f.Name {
		case "Outcome":
		case consoleField:
			// No button is left to click: the list stays, the hint goes.
			out.Fields = append(out.Fields, &discordgo.MessageEmbedField{Name: settledConsoleField,
				Value: strings.TrimPrefix(f.Value, consoleHint+"\n"), Inline: f.Inline})
		default:
			out.Fields = append(out.Fields, f)
		}
	}
	out.Fields = append(out.Fields, &discordgo.MessageEmbedField{Name: "Outcome", Value: truncate(line, 1000)})
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
		e.Description = truncate(e.Description, d-cut)
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
			longest.Value = truncate(longest.Value, n-cut)
			over -= cut
		}
	}
}

// answerModal is the free-text answer form.
func answerModal(c *card) *discordgo.InteractionResponse {
	return textModal(c, actModalAnswer, "Answer the question", discordgo.TextInput{CustomID: "answer", Label: "Your answer",
		Placeholder: truncate(c.Question.Question, maxPlaceholder), Required: true, MinLength: 1, MaxLength: maxAnswerInput})
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
