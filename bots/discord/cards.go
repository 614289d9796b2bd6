package discord

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// platform is Discord's part of the card lifecycle (engine.Cards): a card
// is an embed with components, the job's first in the routed channel with
// the job's thread started from it, the later ones in that thread. Posts
// carry a nonce Discord enforces for a few minutes; a later try finds a
// card an earlier one made by its Decline button's custom id.
type platform struct{ b *Bot }

// Place is the question's Discord channel: its route's, else the default.
func (p platform) Place(q *bridge.Question) (string, *bridge.Failure) {
	channel := p.b.channelFor(q)
	if channel != "" && !bridge.ValidSnowflake(channel) {
		return "", &bridge.Failure{Code: bridge.CodeReferenceUnresolved, Dependency: "discord", Operation: "post question",
			RequiredCapability: "a Discord channel id in route.discord.channel_id or ASK_DISCORD_CHANNEL",
			SafeFallback:       "answer in the askbridge console or with /ask",
			OperatorMessage:    fmt.Sprintf("%q is not a Discord channel id (a number such as 1234567890123456789).", bridge.Truncate(channel, 40))}
	}
	return channel, nil
}

// Post posts the card in the job's thread in channel; the job's first
// card goes in the channel, and the job's thread is started from it. A
// thread someone deleted or locked is replaced the same way.
func (p platform) Post(ctx context.Context, ev *bridge.Event, c *engine.Card, channel string, last bool) (*bridge.MessageRef, error) {
	b := p.b
	view := b.viewOf(c)
	if keyedIDs(view.Tenant, view.JobID, view.QuestionID, view.TaskVersion) {
		// Only then: JetStream keeps every key in memory.
		if err := b.putIndex(ctx, view.Tenant, view.JobID, view.QuestionID); err != nil {
			return nil, err
		}
	}
	m := &messageCreate{
		Embeds:          []*discordgo.MessageEmbed{cardEmbed(view)},
		Components:      b.cardComponents(view),
		AllowedMentions: noMentions,
		Nonce:           nonceFor("card", view.Tenant, view.JobID, view.QuestionID, fmt.Sprint(view.TaskVersion)),
		EnforceNonce:    true,
	}
	thread := p.sharedThread(ev, channel)
	target := cmp.Or(thread, channel)
	msg, err := b.postMessage(ctx, "post question", target, m)
	if err != nil && thread != "" && threadGone(err) {
		b.log.Info("discord: the job's thread is gone; posting in the channel", "tenant", ev.Tenant, "job", ev.JobID,
			"thread", thread, "channel", channel, "err", err)
		b.forgetThread(ctx, ev, channel)
		thread, target = "", channel
		msg, err = b.postMessage(ctx, "post question", target, m)
	}
	if err != nil {
		return nil, err
	}
	ref := &bridge.MessageRef{Platform: bridge.PlatformDiscord, Channel: cmp.Or(msg.ChannelID, target), MessageID: msg.ID, Thread: thread}
	b.rememberGuild(ref.Channel, msg.GuildID)
	return p.withThread(ctx, ev, channel, ref, msg.GuildID), nil
}

// withThread starts the job's thread from its card when the card is in
// the channel and the job has no thread there yet.
func (p platform) withThread(ctx context.Context, ev *bridge.Event, channel string, ref *bridge.MessageRef, guild string) *bridge.MessageRef {
	b := p.b
	if ref.Thread != "" || ref.Channel != channel {
		return ref
	}
	th, err := b.startThread(ctx, channel, ref.MessageID, ev.Question)
	if err != nil {
		// The card is up; the job's next question tries the thread again.
		b.log.Warn("discord: could not start the job's thread", "tenant", ev.Tenant, "job", ev.JobID, "err", err)
		return ref
	}
	ref.Thread = th.ID
	b.rememberThread(ev, channel, th.ID)
	g := cmp.Or(th.GuildID, guild)
	b.rememberGuild(channel, g)
	b.rememberGuild(th.ID, g)
	return ref
}

// Adopt takes a card an earlier try made, starting the job's thread from
// it when that try could not.
func (p platform) Adopt(ctx context.Context, ev *bridge.Event, channel string, found bridge.MessageRef) (*bridge.MessageRef, error) {
	if found.Thread == "" && p.sharedThread(ev, channel) != "" {
		// In the channel though the job has a thread: made when that thread
		// took no messages. The job keeps its thread.
		return &found, nil
	}
	return p.withThread(ctx, ev, channel, &found, p.b.guildOf(found.Channel)), nil
}

// knownThread is the job's thread in channel as this adapter remembers
// it, or as the asked event names it.
func (p platform) knownThread(ev *bridge.Event, channel string) string {
	key := jobKey(ev.Tenant, ev.JobID, channel)
	if th, ok := p.b.threads.Get(key); ok {
		return th
	}
	for _, t := range ev.Threads {
		if t.Platform == bridge.PlatformDiscord && t.Channel == channel && t.Thread != "" && t.Thread != channel {
			p.b.threads.Put(key, t.Thread)
			return t.Thread
		}
	}
	return ""
}

// Update rewrites the card as it stands: waiting with its components, or
// how the question ended, its components removed.
func (p platform) Update(ctx context.Context, c *engine.Card) (bool, error) {
	m, view := c.Message, p.b.viewOf(c)
	return p.b.editMessage(ctx, m.Channel, m.MessageID, cardEmbed(view), p.b.cardComponents(view))
}

// Fault reads a Discord error: what it means for the question, and
// whether a post may have reached Discord.
func (p platform) Fault(err error, channel string) engine.Fault {
	var ae *apiError
	if !errors.As(err, &ae) {
		return engine.Fault{Transient: true}
	}
	return engine.Fault{Transient: isTransient(err), RetryAfter: retryAfter(err), MayHavePosted: mayHaveMade(err),
		Failure: failureFor(err, channel)}
}

// Find looks for the cards of ev made since since, in the job's thread in
// channel (when it is known) and in channel: every card carries a Decline
// button naming its question and task version. The copies come oldest
// first, those in the thread first.
func (p platform) Find(ctx context.Context, ev *bridge.Event, channel string, since time.Time) ([]bridge.MessageRef, error) {
	thread := p.sharedThread(ev, channel)
	where := []string{channel}
	if bridge.ValidSnowflake(thread) {
		where = []string{thread, channel}
	}
	want := customID(actDecline, ev.Tenant, ev.JobID, ev.QuestionID, ev.TaskVersion, 0)
	var found []bridge.MessageRef
	for _, ch := range where {
		here, err := p.b.listCards(ctx, ch, want, since.Add(-cardLookback))
		if threadGone(err) && ch != channel {
			continue // the thread went; the card may be in the channel
		}
		if err != nil {
			return nil, err
		}
		for _, m := range here {
			ref := bridge.MessageRef{Platform: bridge.PlatformDiscord, Channel: cmp.Or(m.ChannelID, ch), MessageID: m.ID}
			if thread != "" && (ref.Channel == thread || m.ID == thread) {
				ref.Thread = thread // in the thread, or the message it was started from
			}
			p.b.rememberGuild(ref.Channel, m.GuildID)
			found = append(found, ref)
		}
	}
	return found, nil
}

// listCards lists the messages of channel after the snowflake of after
// that carry the component want, oldest first.
func (b *Bot) listCards(ctx context.Context, channel, want string, after time.Time) ([]*listedMessage, error) {
	from := snowflakeAt(after)
	var here []*listedMessage
	for range maxListPages {
		var msgs []listedMessage
		err := b.call(ctx, "find question", func(opts ...discordgo.RequestOption) error {
			ep := discordgo.EndpointChannelMessages(channel)
			body, err := b.s.RequestWithBucketID("GET", ep+"?after="+from+"&limit=100", nil, ep, opts...)
			if err != nil {
				return err
			}
			return json.Unmarshal(body, &msgs)
		})
		if err != nil {
			return nil, err
		}
		for i := range msgs {
			m := &msgs[i]
			if laterID(m.ID, from) {
				from = m.ID // the next page starts after the newest
			}
			if hasComponent(m, want) {
				here = append(here, m)
			}
		}
		if len(msgs) < 100 {
			break
		}
	}
	slices.SortFunc(here, func(a, b *listedMessage) int {
		switch {
		case laterID(b.ID, a.ID):
			return -1
		case laterID(a.ID, b.ID):
			return 1
		}
		return 0
	})
	return here, nil
}

// viewOf is the card as Discord draws it: the question, where it is, and
// how it ended.
func (b *Bot) viewOf(c *engine.Card) *card {
	v := &card{Tenant: c.Ref.Tenant, JobID: c.Ref.JobID, QuestionID: c.Ref.QuestionID, TaskVersion: c.Ref.Version,
		Question: c.Question, AskedAt: c.AskedAt, Deadline: c.Deadline}
	if m := c.Message; m != nil {
		v.Channel, v.MessageID, v.Thread = m.Channel, m.MessageID, m.Thread
		v.Guild = b.guildOf(m.Channel)
	}
	if ev := c.Ended; ev != nil {
		v.Outcome = outcomeOf(ev)
	}
	v.Proposal = c.Proposal
	return v
}

// outcomeOf is how the question of ev ended, as the card shows it.
func outcomeOf(ev *bridge.Event) *outcome {
	o := &outcome{Type: ev.Type, Text: ev.Text, By: ev.By, ByName: ev.ByName, Reason: ev.Comment, At: ev.At}
	if ev.Type == bridge.EventAnswered {
		o.Answer = cmp.Or(ev.AnswerText, strings.TrimPrefix(bridge.AnsweredText(ev.Answer), "The answer: "))
	}
	return o
}

// rememberGuild keeps the guild of a channel, for links to its messages.
func (b *Bot) rememberGuild(channel, guild string) {
	if channel != "" && guild != "" {
		b.guilds.Put(channel, guild)
	}
}

// guildOf is the guild of a channel, when known.
func (b *Bot) guildOf(channel string) string {
	g, _ := b.guilds.Get(channel)
	return cmp.Or(g, b.o.Guild)
}
