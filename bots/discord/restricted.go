package discord

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/bridge"
)

// onRestrictedAsked sends the content of a restricted question to the
// people it names, once each, in a DM: the channel's card shows only that
// it waits and for whom (docs/contract.md "Who may do what"). The runtime
// names them in the asked event's targets, one identity per person.
func (b *Bot) onRestrictedAsked(ctx context.Context, ev *bridge.Event) error {
	q := ev.Question
	if q == nil || !q.Restricted() || len(ev.Targets) == 0 {
		return nil
	}
	var c *card
	if ec, ok := b.cards.Get(bridge.RefOf(ev)); ok {
		c = b.viewOf(ec)
	}
	for _, target := range ev.Targets {
		user, ok := strings.CutPrefix(target, bridge.PlatformDiscord+":")
		if !ok || !bridge.ValidSnowflake(user) {
			continue
		}
		// Per question and version, not per event: an asked event sent
		// again for a new consumer DMs nobody twice.
		key := seenKey("rdm", ev.Tenant, ev.JobID, ev.QuestionID, strconv.FormatInt(ev.TaskVersion, 10), user)
		if done, err := b.wasSeen(ctx, key); err != nil {
			return err
		} else if done {
			continue
		}
		err := b.sendDM(ctx, user, b.restrictedMessage(ev, q, c, target))
		switch {
		case discordCode(err) == codeCannotDM:
			b.log.Warn("discord: cannot send a restricted question's DM: the user does not accept direct messages from this app",
				"user", target, "tenant", ev.Tenant, "job", ev.JobID, "question", ev.QuestionID)
			b.noteUnreachable(ctx, c, user, ev.EventID)
		case err != nil && isTransient(err):
			return err
		case err != nil:
			b.log.Warn("discord: restricted question DM refused", "user", target, "question", ev.QuestionID, "err", err)
		}
		if _, err := b.markSeen(ctx, key, 0); err != nil {
			return err
		}
	}
	return nil
}

// restrictedMessage is the DM that carries a restricted question's content
// to one of its people: the question, why it matters, its choices, the
// deadline, and where to answer (the console; the card shows others only
// that it waits).
func (b *Bot) restrictedMessage(ev *bridge.Event, q *bridge.Question, c *card, target string) *messageCreate {
	e := &discordgo.MessageEmbed{Type: discordgo.EmbedTypeRich, Title: "Restricted question", Color: colorDeclined,
		Description: bridge.Truncate(q.Question, maxDescription),
		Footer:      &discordgo.MessageEmbedFooter{Text: fmt.Sprintf("askbridge · %s/%s/%s", ev.Tenant, ev.JobID, ev.QuestionID)}}
	if q.WhyItMatters != "" {
		e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: "Why it matters", Value: bridge.Truncate(q.WhyItMatters, maxFieldValue)})
	}
	if len(q.Choices) > 0 {
		e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: "Choices", Value: bridge.Truncate(strings.Join(q.Choices, " · "), maxFieldValue)})
	}
	if !ev.Deadline.IsZero() {
		e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: "Deadline", Value: stamp(ev.Deadline)})
	}
	var buttons []discordgo.MessageComponent
	u := b.questionLink(target, nil, ev.Tenant, ev.JobID, ev.QuestionID)
	if btn := consoleLinkButton(u); btn != nil {
		buttons = append(buttons, btn)
	} else if u != "" && len(u) <= maxFieldText {
		e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: "Open in console", Value: u})
	}
	if c != nil && c.MessageID != "" && c.Guild != "" {
		buttons = append(buttons, discordgo.Button{Label: "Go to the card", Style: discordgo.LinkButton,
			URL: "https://discord.com/channels/" + c.Guild + "/" + c.Channel + "/" + c.MessageID})
	}
	// Without the console, /ask answer is the way to answer it here.
	e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: "Answer here",
		Value: "`/ask answer question:" + ev.Tenant + "/" + ev.JobID + "/" + ev.QuestionID + " answer:<your answer>`"})
	m := &messageCreate{Content: "A restricted question for you, in job " + ev.JobID + ": only the people it names and admins may read it.",
		Embeds: []*discordgo.MessageEmbed{e}, AllowedMentions: noMentions,
		Nonce: nonceFor("rdm", ev.Tenant, ev.JobID, ev.QuestionID, strconv.FormatInt(ev.TaskVersion, 10), target), EnforceNonce: true}
	if len(buttons) > 0 {
		m.Components = []discordgo.MessageComponent{discordgo.ActionsRow{Components: buttons}}
	}
	return m
}
