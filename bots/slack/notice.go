package slack

import (
	"context"
	"errors"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
)

// metaNotice marks a notice's message, so a post whose outcome is unknown
// finds it rather than posting it twice.
const metaNotice = "askbridge_notice"

// onNotice posts a notice's card, which has no controls, in the job's
// thread, else as a new message in the default channel
// (docs/contract.md, "Notices"); once per event id, as reminders are
// sent once: a claim in the one-off bucket, released when the post fails
// so that a redelivery tries again.
func (b *Bot) onNotice(ctx context.Context, ev *bridge.Event) error {
	if ev.Notice == nil {
		b.log.WarnContext(ctx, "slack: ignoring a notice event without its notice", "event", ev.EventID)
		return nil
	}
	channel, thread := b.noticePlace(ev)
	if channel == "" {
		b.log.InfoContext(ctx, "slack: notice not shown: the job has no Slack thread and there is no default channel",
			"tenant", ev.Tenant, "job", ev.JobID)
		return nil
	}
	key := onceKey("notice", ev.EventID)
	first, err := b.once(ctx, key)
	if err != nil || !first {
		return err
	}
	n := *ev.Notice
	n.Tenant, n.JobID = ev.Tenant, ev.JobID
	blocks, text := blockkit.DrawNotice(card.NewNotice(n))
	meta := slack.SlackMetadata{EventType: metaNotice, EventPayload: map[string]any{
		"tenant": ev.Tenant, "job_id": ev.JobID, "notice_id": n.NoticeID}}
	_, err = b.postMarked(ctx, false, channel, thread, meta, slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(text, false),
		slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl())
	var ae *apiError
	switch {
	case err == nil:
		return nil
	case ctx.Err() == nil && errors.As(err, &ae) && !ae.Transient:
		b.log.WarnContext(ctx, "slack: could not post a notice", "tenant", ev.Tenant, "job", ev.JobID,
			"channel", channel, "slack_error", ae.Code)
		return nil
	}
	b.release(ctx, key)
	return err
}

// noticePlace is where a notice goes: the job's thread in the default
// channel, else its thread in another channel (a route's), else the
// default channel itself; "" when there is none of these.
func (b *Bot) noticePlace(ev *bridge.Event) (channel, thread string) {
	p := platform{b}
	if ch := b.o.DefaultChannel; ch != "" {
		if ts := p.knownThread(ev, ch); ts != "" {
			return ch, ts
		}
	}
	for _, t := range ev.Threads {
		if t.Platform == bridge.PlatformSlack && t.Channel != "" && t.Thread != "" {
			return t.Channel, t.Thread
		}
	}
	return b.o.DefaultChannel, ""
}
