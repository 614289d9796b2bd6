package discord

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bridge"
	neutral "github.com/askbridge/askbridge/card"
)

// reminderFor is target's one DM of a reminder or escalation event: for a
// job's round (ev.Nudge), the questions it reminds them of, merged when
// several; nil when it reminds them of none.
func (b *Bot) reminderFor(ev *bridge.Event, q *bridge.Question, c *card, target string) *messageCreate {
	if ev.Nudge == nil {
		return b.reminderMessage(ev, q, c, target)
	}
	if r, ok := neutral.ReminderOf(ev, target); ok {
		return b.mergedReminder(ev, r, c, target)
	}
	mine := ev.Nudge.For(target)
	if len(mine) == 0 {
		return nil
	}
	nq := mine[0]
	if nq.QuestionID == ev.QuestionID {
		return b.reminderMessage(ev, q, c, target)
	}
	// One question of the round, not the top one: remind of it.
	one := *ev
	one.QuestionID, one.TaskVersion, one.Question, one.Step = nq.QuestionID, nq.TaskVersion, nq.Question, nq.Step
	one.AskedAt, one.Deadline, one.Messages = nq.AskedAt, nq.Deadline, nil
	var oc *card
	if ec, ok := b.cards.Get(bridge.RefOf(&one)); ok {
		oc = b.viewOf(ec)
	}
	return b.reminderMessage(&one, nq.Question, oc, target)
}

// mergedReminder is the one DM listing a person's questions of a job in a
// round (neutral.ReminderOf), in queue order, with where to answer them.
func (b *Bot) mergedReminder(ev *bridge.Event, r neutral.Reminder, c *card, target string) *messageCreate {
	var lines []string
	for _, it := range r.Items {
		text := bridge.Truncate(strings.Join(strings.Fields(it.Text), " "), 300)
		if it.Hidden {
			text = "*" + bridge.RestrictedNotice(restrictedTo(it.WaitsFor)) + "*"
		}
		line := "• **" + it.Priority + "** " + text + " (`" + it.QuestionID + "`)"
		if !it.Deadline.IsZero() {
			line += " · until " + stamp(it.Deadline)
		}
		lines = append(lines, line)
	}
	e := &discordgo.MessageEmbed{Type: discordgo.EmbedTypeRich, Title: "Reminder", Color: colorDeclined,
		Description: bridge.Truncate(strings.Join(lines, "\n"), maxDescription),
		Footer:      &discordgo.MessageEmbedFooter{Text: "askbridge · " + ev.Tenant + "/" + ev.JobID}}
	var buttons []discordgo.MessageComponent
	if c != nil && c.MessageID != "" && c.Guild != "" {
		buttons = append(buttons, discordgo.Button{Label: "Go to the thread", Style: discordgo.LinkButton,
			URL: "https://discord.com/channels/" + c.Guild + "/" + cmp.Or(c.Thread, c.Channel) + "/" + c.MessageID})
	}
	if b.consoleEnabled() {
		u := b.o.Console.JobURL(target, ev.Tenant, ev.JobID, console.DefaultLinkTTL)
		if btn := consoleLinkButton(u); btn != nil {
			buttons = append(buttons, btn)
		} else if len(u) <= maxFieldText {
			e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: "Open in console", Value: u})
		}
	}
	m := &messageCreate{Content: r.Intro, Embeds: []*discordgo.MessageEmbed{e}, AllowedMentions: noMentions,
		Nonce: nonceFor("dm", ev.EventID, target), EnforceNonce: true}
	if len(buttons) > 0 {
		m.Components = []discordgo.MessageComponent{discordgo.ActionsRow{Components: buttons}}
	}
	return m
}

// resurface posts, once, the message of a round that re-surfaces the top
// of the job's queue (card.NudgeOf) in the thread of its card.
func (b *Bot) resurface(ctx context.Context, ev *bridge.Event, c *card) error {
	n, ok := neutral.NudgeOf(ev)
	if !ok || c == nil || c.Channel == "" {
		return nil
	}
	key := seenKey("nudge", ev.EventID)
	if done, err := b.wasSeen(ctx, key); err != nil || done {
		return err
	}
	_, err := b.postMessage(ctx, "re-surface a question", cmp.Or(c.Thread, c.Channel), nudgeMessage(n, c, ev.EventID, b.consoleEnabled()))
	switch {
	case err != nil && isTransient(err):
		return err
	case err != nil:
		b.log.Warn("discord: could not re-surface a question in its thread", "tenant", ev.Tenant, "job", ev.JobID, "err", err)
	}
	_, err = b.markSeen(ctx, key, 0)
	return err
}

// nudgeMessage draws a card.Nudge: the question (for a restricted one,
// whom it waits for), how many others wait, a link to its card and, with
// the console configured, a button answered with a job link for the
// person who clicks.
func nudgeMessage(n neutral.Nudge, c *card, eventID string, console bool) *messageCreate {
	text := bridge.Truncate(n.Title, maxDescription)
	if n.Hidden {
		text = "*" + bridge.RestrictedNotice(restrictedTo(n.WaitsFor)) + "*"
	}
	e := &discordgo.MessageEmbed{Type: discordgo.EmbedTypeRich, Title: n.Lead, Description: text, Color: colorDeclined,
		Footer: &discordgo.MessageEmbedFooter{Text: "askbridge · " + n.Tenant + "/" + n.JobID + "/" + n.QuestionID}}
	if n.More != "" {
		e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: "In this job", Value: n.More})
	}
	var buttons []discordgo.MessageComponent
	if c.MessageID != "" && c.Guild != "" {
		buttons = append(buttons, discordgo.Button{Label: "Go to the question", Style: discordgo.LinkButton,
			URL: "https://discord.com/channels/" + c.Guild + "/" + cmp.Or(c.Thread, c.Channel) + "/" + c.MessageID})
	}
	if console {
		buttons = append(buttons, discordgo.Button{Label: "Open job in console", Style: discordgo.PrimaryButton,
			CustomID: customID(actConsoleJob, n.Tenant, n.JobID, n.QuestionID, n.TaskVersion, 0)})
	}
	m := &messageCreate{Content: "Still waiting in job `" + n.JobID + "`.", Embeds: []*discordgo.MessageEmbed{e}, AllowedMentions: noMentions,
		Nonce: nonceFor("nudge", eventID), EnforceNonce: true}
	if len(buttons) > 0 {
		m.Components = []discordgo.MessageComponent{discordgo.ActionsRow{Components: buttons}}
	}
	return m
}

// cmdQueue answers /ask queue: the job's pending questions in queue order,
// as the runtime lets this person see them, as the CLI's table.
func (b *Bot) cmdQueue(ctx context.Context, who clicker, opt map[string]string) *discordgo.InteractionResponse {
	var reply bridge.QueueReply
	err := b.request(ctx, bridge.APIQueue, bridge.QueueRequest{As: who.Identity, Roles: who.Roles, Tenant: opt["tenant"], JobID: opt["job"]}, &reply)
	if err != nil {
		return b.apiTrouble(err)
	}
	if reply.Error != "" {
		return ephemeral("askbridge: " + reply.Error)
	}
	if len(reply.Questions) == 0 {
		return ephemeral("No questions wait in job `" + opt["job"] + "` that you can see.")
	}
	head := fmt.Sprintf("**Job `%s`: %d pending question(s), by priority then age**\n", opt["job"], len(reply.Questions))
	table := neutral.QueueTable(reply.Questions, b.now(), 40)
	// An ephemeral message holds 2000 characters: the table is cut at a
	// line, the first questions kept.
	for utf8.RuneCountInString(head+table) > 1900 {
		i := strings.LastIndex(table, "\n")
		if i < 0 {
			break
		}
		table = table[:i]
	}
	return ephemeral(head + "```\n" + strings.ReplaceAll(table, "`", "'") + "\n```")
}
