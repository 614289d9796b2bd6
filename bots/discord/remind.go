package discord

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// onReminder sends each Discord target of a ladder step a direct message,
// once. A person who cannot be messaged (50007) is reported in the log and
// in the question's thread, and not tried again.
func (b *Bot) onReminder(ctx context.Context, ev *bridge.Event) error {
	var c *card
	if ec, ok := b.cards.Get(bridge.RefOf(ev)); ok {
		c = b.viewOf(ec)
	} else if m := bridge.MessageOn(ev, bridge.PlatformDiscord); m != nil {
		c = b.viewOf(&engine.Card{Ref: bridge.RefOf(ev), Question: ev.Question, AskedAt: ev.AskedAt, Deadline: ev.Deadline, Message: m})
	}
	if c != nil && c.Outcome != nil {
		// Settled meanwhile: nothing to remind about, but the round's
		// other questions of the job.
		if ev = bridge.WithoutTop(ev); ev == nil {
			return nil
		}
	}
	if bridge.StaleReminder(ctx, b.o.NATS.Conn, ev, b.now()) {
		b.log.Info("discord: not sending a reminder for a question that no longer waits", "tenant", ev.Tenant,
			"job", ev.JobID, "question", ev.QuestionID, "step", ev.Step)
		return nil
	}
	q := ev.Question
	if q == nil && c != nil {
		q = c.Question
	}
	if err := b.resurface(ctx, ev, c); err != nil {
		return err
	}
	for _, target := range ev.Targets {
		user, ok := strings.CutPrefix(target, bridge.PlatformDiscord+":")
		if !ok || !bridge.ValidSnowflake(user) {
			continue
		}
		m := b.reminderFor(ev, q, c, target)
		if m == nil {
			continue // the round reminds others of this job, not them
		}
		key := seenKey("dm", ev.EventID, ev.Tenant, ev.JobID, ev.QuestionID, user)
		if done, err := b.wasSeen(ctx, key); err != nil {
			return err
		} else if done {
			continue
		}
		err := b.sendDM(ctx, user, m)
		switch {
		case discordCode(err) == codeCannotDM:
			b.log.Warn("discord: cannot send a reminder DM: the user does not accept direct messages from this app",
				"user", target, "tenant", ev.Tenant, "job", ev.JobID, "question", ev.QuestionID, "step", ev.Step)
			b.noteUnreachable(ctx, c, user, ev.EventID)
		case err != nil && isTransient(err):
			return err
		case err != nil:
			b.log.Warn("discord: reminder DM refused", "user", target, "question", ev.QuestionID, "err", err)
		}
		if _, err := b.markSeen(ctx, key, 0); err != nil {
			return err
		}
	}
	return nil
}

func (b *Bot) sendDM(ctx context.Context, user string, m *messageCreate) error {
	var ch *discordgo.Channel
	err := b.call(ctx, "open DM", func(opts ...discordgo.RequestOption) error {
		var err error
		ch, err = b.s.UserChannelCreate(user, opts...)
		return err
	})
	if err != nil {
		return err
	}
	if ch == nil || ch.ID == "" {
		return &apiError{Op: "open DM", Status: 200, Network: "response without a channel id"}
	}
	_, err = b.postMessage(ctx, "send DM", ch.ID, m)
	return err
}

// reminderMessage is the DM: what waits, until when, and where to answer.
func (b *Bot) reminderMessage(ev *bridge.Event, q *bridge.Question, c *card, target string) *messageCreate {
	intro := "A question is waiting for your answer."
	if ev.Type == bridge.EventDelegated {
		intro = who(ev.By, ev.ByName) + " asked you to answer a question."
	}
	if ev.Type == bridge.EventEscalated {
		switch ev.Step {
		case bridge.TargetOwner:
			intro = "Nobody has answered a question on your job yet."
		case bridge.TargetAdmins:
			intro = "Nobody has answered a question yet; it is escalated to the admins."
		default:
			intro = "Nobody has answered a question yet."
		}
	}
	e := &discordgo.MessageEmbed{Type: discordgo.EmbedTypeRich, Title: "Reminder", Color: colorDeclined,
		Footer: &discordgo.MessageEmbedFooter{Text: fmt.Sprintf("askbridge · %s/%s/%s", ev.Tenant, ev.JobID, ev.QuestionID)}}
	if !bridge.ReminderShowsQuestion(ev, q, target) {
		// An operator reminded of a restricted question learns that it
		// waits and for whom, and that they may decline it: nothing more.
		intro = "A restricted question is waiting; you may decline it."
		e.Description = restrictedFor(q)
	} else if q != nil {
		e.Description = bridge.Truncate(q.Question, maxDescription)
		if q.WhyItMatters != "" {
			e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: "Why it matters", Value: bridge.Truncate(q.WhyItMatters, maxFieldValue)})
		}
	}
	if !ev.Deadline.IsZero() {
		e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: "Deadline", Value: stamp(ev.Deadline)})
	}
	var buttons []discordgo.MessageComponent
	if c != nil && c.MessageID != "" && c.Guild != "" {
		buttons = append(buttons, discordgo.Button{Label: "Go to the question", Style: discordgo.LinkButton,
			URL: "https://discord.com/channels/" + c.Guild + "/" + c.Channel + "/" + c.MessageID})
	}
	u := b.questionLink(target, nil, ev.Tenant, ev.JobID, ev.QuestionID)
	if btn := consoleLinkButton(u); btn != nil {
		buttons = append(buttons, btn)
	} else if u != "" && len(u) <= maxFieldText {
		e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: "Open in console", Value: u})
	}
	m := &messageCreate{Content: intro, Embeds: []*discordgo.MessageEmbed{e}, AllowedMentions: noMentions,
		Nonce: nonceFor("dm", ev.EventID, target), EnforceNonce: true}
	if len(buttons) > 0 {
		m.Components = []discordgo.MessageComponent{discordgo.ActionsRow{Components: buttons}}
	}
	return m
}

// noteUnreachable says in the question's thread that a reminder could not
// be delivered, so the people there know. Best effort.
func (b *Bot) noteUnreachable(ctx context.Context, c *card, user, eventID string) {
	if c == nil || c.Channel == "" {
		return
	}
	channel := cmp.Or(c.Thread, c.Channel)
	_, err := b.postMessage(ctx, "note unreachable", channel, &messageCreate{
		Content:         fmt.Sprintf("askbridge could not send <@%s> a reminder: they do not accept direct messages from this app.", user),
		AllowedMentions: noMentions,
		// Per step: Discord swallows a nonce it saw minutes ago.
		Nonce:        nonceFor("unreachable", eventID, user),
		EnforceNonce: true,
	})
	if err != nil {
		b.log.Warn("discord: could not note an unreachable user", "channel", channel, "err", err)
	}
}

// restrictedFor says who may read a restricted question, in a reminder to
// someone who may not.
func restrictedFor(q *bridge.Question) string {
	return bridge.Truncate(bridge.RestrictedNotice(restrictedTo(q.WaitsFor())), maxDescription)
}
