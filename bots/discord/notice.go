package discord

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/bridge"
	neutral "github.com/askbridge/askbridge/card"
)

// colorNotice marks a notice: a failure to read, not a question to answer.
const colorNotice = 0xE67E22

// drawNoticeEmbed renders a notice card (card.NewNotice) as an embed: its
// title, the five parts as fields in order, and a footer saying nobody
// needs to answer. A notice has no components.
func drawNoticeEmbed(nc neutral.Notice) *discordgo.MessageEmbed {
	e := &discordgo.MessageEmbed{Type: discordgo.EmbedTypeRich, Title: bridge.Truncate(nc.Title, maxTitle), Color: colorNotice,
		Footer: &discordgo.MessageEmbedFooter{Text: "Notice · nothing to answer"}}
	for _, p := range nc.Parts {
		e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: p.Label, Value: bridge.Truncate(p.Text, maxFieldText)})
	}
	if !nc.At.IsZero() {
		e.Timestamp = nc.At.UTC().Format(time.RFC3339)
	}
	return e
}

// onNotice posts a notice's card in the job's thread, else as a new
// message in the default channel (docs/contract.md, "Notices"); once per
// event id: a record in the seen bucket once posted, and a nonce for a
// post retried before that record was written.
func (b *Bot) onNotice(ctx context.Context, ev *bridge.Event) error {
	if ev.Notice == nil {
		return fmt.Errorf("%w: a notice event without its notice", errPermanent)
	}
	channel, thread := b.noticePlace(ev)
	if channel == "" {
		b.log.Info("discord: notice not shown: the job has no Discord thread and there is no default channel",
			"tenant", ev.Tenant, "job", ev.JobID)
		return nil
	}
	key := seenKey("notice", ev.EventID)
	if done, err := b.wasSeen(ctx, key); err != nil || done {
		return err
	}
	n := *ev.Notice
	n.Tenant, n.JobID = ev.Tenant, ev.JobID
	m := &messageCreate{
		Embeds:          []*discordgo.MessageEmbed{drawNoticeEmbed(neutral.NewNotice(n))},
		Components:      []discordgo.MessageComponent{},
		AllowedMentions: noMentions,
		Nonce:           nonceFor("notice", ev.EventID),
		EnforceNonce:    true,
	}
	target := cmp.Or(thread, channel)
	_, err := b.postMessage(ctx, "post notice", target, m)
	if err != nil && thread != "" && threadGone(err) {
		b.log.Info("discord: the job's thread is gone; posting the notice in the channel", "tenant", ev.Tenant, "job", ev.JobID,
			"thread", thread, "channel", channel)
		_, err = b.postMessage(ctx, "post notice", channel, m)
	}
	switch {
	case err != nil && isTransient(err):
		return err
	case err != nil:
		b.log.Warn("discord: could not post a notice", "tenant", ev.Tenant, "job", ev.JobID, "channel", target, "err", err)
	}
	_, err = b.markSeen(ctx, key, 0)
	return err
}

// noticePlace is where a notice goes: the job's thread in the default
// channel, else its thread in another channel (a route's), else the
// default channel itself; "" when there is none of these.
func (b *Bot) noticePlace(ev *bridge.Event) (channel, thread string) {
	p := platform{b}
	if ch := b.o.DefaultChannel; ch != "" {
		if th := p.knownThread(ev, ch); th != "" {
			return ch, th
		}
	}
	for _, t := range ev.Threads {
		if t.Platform == bridge.PlatformDiscord && t.Channel != "" && t.Thread != "" && t.Thread != t.Channel {
			return t.Channel, t.Thread
		}
	}
	return b.o.DefaultChannel, ""
}
