package discord

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// errPermanent marks an event that can never be handled; it is acked.
var errPermanent = errors.New("discord: event cannot be handled")

// classifyEventError reads an error of an event's handler for the event
// loop: what can never work is dropped, a rate limit waits as long as
// Discord asked, and the rest is tried again.
func classifyEventError(err error) engine.Verdict {
	switch {
	case errors.Is(err, errPermanent) || !isTransient(err):
		return engine.Verdict{Kind: engine.Permanent}
	case retryAfter(err) > 0:
		return engine.Verdict{Kind: engine.RateLimited, RetryAfter: retryAfter(err)}
	}
	return engine.Verdict{Kind: engine.Transient}
}

// handleEvent applies one runtime event (engine.Reactions.Route).
func (b *Bot) handleEvent(ctx context.Context, ev *bridge.Event, d engine.Delivery) error {
	return b.reactions.Route(ctx, ev, d)
}

// channelFor is the channel a question is posted in: its route's, else
// the default; "" when it is not for Discord. The runtime expects a report
// for any routed question: a blank channel id is kept, to be reported as
// unresolved, not skipped.
func (b *Bot) channelFor(q *bridge.Question) string {
	if q.Route == nil || q.Route.Discord == nil || q.Route.Discord.ChannelID == "" {
		return b.o.DefaultChannel
	}
	if channel := strings.TrimSpace(q.Route.Discord.ChannelID); channel != "" {
		return channel
	}
	return q.Route.Discord.ChannelID
}

// cardLookback widens the look for a card to before the first try: the
// try's time comes from a replica's clock, the message's id from
// Discord's.
const cardLookback = time.Minute

// maxListPages bounds how many pages of 100 messages a look for a card
// reads in one channel.
const maxListPages = 10

// mayHaveMade says a failed post may have left its message in Discord:
// no answer came (a timeout, a dropped connection), or one that does not
// say Discord made nothing (a 5xx, a reply without a message).
func mayHaveMade(err error) bool {
	var ae *apiError
	return !errors.As(err, &ae) || ae.Status < 400 || ae.Status >= 500
}

// listedMessage is what findCards reads of a listed message.
type listedMessage struct {
	ID         string `json:"id"`
	ChannelID  string `json:"channel_id"`
	GuildID    string `json:"guild_id"`
	Components []struct {
		Components []struct {
			CustomID string `json:"custom_id"`
		} `json:"components"`
	} `json:"components"`
}

// hasComponent says one of m's components has the custom id want.
func hasComponent(m *listedMessage, want string) bool {
	for _, row := range m.Components {
		for _, comp := range row.Components {
			if comp.CustomID == want {
				return true
			}
		}
	}
	return false
}

// laterID says snowflake a was made after snowflake b.
func laterID(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x > y
}

// threadGone reports whether Discord refused a post in a thread because
// the thread no longer takes messages: deleted, or archived and locked.
func threadGone(err error) bool {
	var ae *apiError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.Code {
	case codeUnknownChannel, codeArchivedThread, codeThreadLocked:
		return true
	}
	return ae.Status == http.StatusNotFound
}

// startThread starts the job's thread from the job's first card.
func (b *Bot) startThread(ctx context.Context, channel, messageID string, q *bridge.Question) (*discordgo.Channel, error) {
	name := "askbridge: " + q.JobID
	if q.Agent != "" {
		name = q.Agent + ": " + q.JobID
	}
	var th *discordgo.Channel
	err := b.call(ctx, "start thread", func(opts ...discordgo.RequestOption) error {
		var err error
		th, err = b.s.MessageThreadStartComplex(channel, messageID, &discordgo.ThreadStart{
			Name: bridge.Truncate(name, 100), AutoArchiveDuration: 10080,
		}, opts...)
		return err
	})
	if discordCode(err) == codeThreadExists {
		// A retry after a crash: a thread started from a message has the
		// message's id.
		return &discordgo.Channel{ID: messageID}, nil
	}
	if err != nil {
		return nil, err
	}
	if th == nil || th.ID == "" {
		return nil, &apiError{Op: "start thread", Status: 200, Network: "response without a thread id"}
	}
	return th, nil
}

// editMessage draws embed and components over a card (none: its
// components removed). It says
// whether the card shows it: false when Discord no longer has the card.
func (b *Bot) editMessage(ctx context.Context, channel, messageID string, embed *discordgo.MessageEmbed,
	components []discordgo.MessageComponent) (bool, error) {
	embeds := []*discordgo.MessageEmbed{embed}
	if components == nil {
		components = []discordgo.MessageComponent{} // sent empty: removes them
	}
	edit := func() error {
		return b.call(ctx, "edit question", func(opts ...discordgo.RequestOption) error {
			_, err := b.s.ChannelMessageEditComplex(&discordgo.MessageEdit{
				ID: messageID, Channel: channel, Embeds: &embeds, Components: &components, AllowedMentions: noMentions,
			}, opts...)
			return err
		})
	}
	err := edit()
	if discordCode(err) == codeArchivedThread {
		// The card is in the job's thread, archived after a week without
		// a message: reopen it, or the settled card keeps its buttons.
		unarchived := false
		err = b.call(ctx, "reopen thread", func(opts ...discordgo.RequestOption) error {
			_, err := b.s.ChannelEditComplex(channel, &discordgo.ChannelEdit{Archived: &unarchived}, opts...)
			return err
		})
		if err == nil {
			err = edit()
		}
	}
	if code := discordCode(err); code == codeUnknownMessage || code == codeUnknownChannel {
		b.log.Warn("discord: the card to update is gone", "channel", channel, "message", messageID)
		return false, nil
	}
	return err == nil, err
}

// onRefused tells the person who clicked, and only them, why their answer
// was refused: an ephemeral follow-up on their interaction.
func (b *Bot) onRefused(ctx context.Context, ev *bridge.Event) error {
	if ev.ReplyTo[replyPlatform] != bridge.PlatformDiscord {
		return nil // another front-end's attempt
	}
	if ev.AttemptID == "" && ev.ReplyTo[replyKind] == replyKindCancel {
		return b.onCancelRefused(ctx, ev)
	}
	appID, token := ev.ReplyTo[replyAppID], ev.ReplyTo[replyToken]
	if appID == "" || token == "" || ev.AttemptID == "" {
		return fmt.Errorf("%w: refusal without a Discord reply address", errPermanent)
	}
	// One refusal told per attempt, whatever redelivers it.
	key := seenKey("refused", ev.AttemptID)
	if done, err := b.wasSeen(ctx, key); err != nil || done {
		return err
	}
	// The attempt id names the interaction, whose snowflake says when it
	// was made: whether the bot's own response to it can still be on its
	// way to Discord. It never skips the try: the id's time is Discord's
	// clock read against this host's, and a host running ahead (or ids
	// that are not Discord's) would drop every refusal untold. A dead
	// token costs one request, which Discord answers "unknown webhook".
	racing := b.now().Sub(ev.At) < followupRace
	if made, ok := snowflakeTime(strings.TrimPrefix(ev.AttemptID, bridge.PlatformDiscord+"-")); ok {
		racing = b.now().Sub(made) < followupRace
	}
	text := refusalText(ev)
	// A follow-up takes no nonce: after a 5xx or no answer, which may
	// come after Discord stored it, it is tried again all the same (here
	// by discordgo on a 502, and with the event), since a second private
	// notice is better than a refusal never told.
	err := b.call(ctx, "tell refusal", func(opts ...discordgo.RequestOption) error {
		_, err := b.s.FollowupMessageCreate(&discordgo.Interaction{AppID: appID, Token: token}, true, &discordgo.WebhookParams{
			Content: text, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions,
		}, opts...)
		return err
	})
	switch code := discordCode(err); {
	case (code == codeUnknownWebhook || code == codeUnknownInteract) && racing:
		// The refusal overtook the bot's own response to the interaction
		// (a response that waits for the decision): Discord knows no
		// follow-up before it. Again in a moment.
		// Not wrapped: Discord's 404 would read as permanent.
		return fmt.Errorf("discord: refusal before the interaction's response (Discord error %d)", code)
	case code == codeUnknownWebhook || code == codeInvalidWebhookTok || code == codeUnknownInteract:
		// The interaction token expired (15 minutes): nobody to tell.
		b.log.Info("discord: refusal not shown: the interaction expired", "to", ev.To, "reason", ev.Reason)
	case err != nil:
		return err
	}
	_, err = b.markSeen(ctx, key, 0)
	return err
}

// followupRace is how soon after an interaction (or, for one whose time
// is unknown, after its refusal) an unknown interaction token is taken for
// the bot's response not having reached Discord yet, rather than for a
// token that expired: Discord takes that response within 3 seconds of the
// interaction or never.
const followupRace = 10 * time.Second

// followupTTL is how long after an interaction the bot still answers with
// a follow-up on its token (Discord keeps it 15 minutes); later, by DM.
const followupTTL = 14 * time.Minute

// onCancelRefused tells the person whose /ask cancel the runtime refused,
// and only them: an ephemeral follow-up on their command while its token
// is valid, else a direct message. The refused event carries no attempt
// id; it is matched on its To (the person) and the cancel's reply_to.
func (b *Bot) onCancelRefused(ctx context.Context, ev *bridge.Event) error {
	user, interaction := ev.ReplyTo[replyUser], ev.ReplyTo[replyInteraction]
	if !bridge.ValidSnowflake(user) || ev.To != bridge.PlatformDiscord+":"+user || !bridge.ValidSnowflake(interaction) {
		return fmt.Errorf("%w: cancel refusal not addressed to the Discord user who asked", errPermanent)
	}
	// One refusal told per /ask cancel, whatever redelivers it.
	key := seenKey("cancel-refused", interaction)
	if done, err := b.wasSeen(ctx, key); err != nil || done {
		return err
	}
	text := cancelRefusalText(ev)
	appID, token := ev.ReplyTo[replyAppID], ev.ReplyTo[replyToken]
	fresh, racing := false, false
	if sent, err := strconv.ParseInt(ev.ReplyTo[replySentAt], 10, 64); err == nil {
		age := b.now().Sub(time.Unix(sent, 0))
		fresh, racing = age < followupTTL, age < followupRace
	}
	told := false
	if fresh && appID != "" && token != "" {
		err := b.call(ctx, "tell cancel refusal", func(opts ...discordgo.RequestOption) error {
			_, err := b.s.FollowupMessageCreate(&discordgo.Interaction{AppID: appID, Token: token}, true, &discordgo.WebhookParams{
				Content: text, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions,
			}, opts...)
			return err
		})
		switch code := discordCode(err); {
		case err == nil:
			told = true
		case (code == codeUnknownWebhook || code == codeUnknownInteract) && racing:
			// As in onRefused: the refusal overtook the command's response.
			return fmt.Errorf("discord: cancel refusal before the command's response (Discord error %d)", code)
		case code == codeUnknownWebhook || code == codeInvalidWebhookTok || code == codeUnknownInteract:
			b.log.Info("discord: cancel refusal: the interaction expired; sending a DM", "to", ev.To)
		case isTransient(err):
			return err
		default:
			b.log.Warn("discord: cancel refusal follow-up refused; sending a DM", "to", ev.To, "err", err)
		}
	}
	if !told {
		err := b.sendDM(ctx, user, &messageCreate{Content: text, AllowedMentions: noMentions,
			Nonce: nonceFor("cancel-refused", interaction), EnforceNonce: true})
		switch {
		case discordCode(err) == codeCannotDM:
			b.log.Warn("discord: cancel refusal not shown: the user does not accept direct messages from this app", "to", ev.To)
		case err != nil && isTransient(err):
			return err
		case err != nil:
			b.log.Warn("discord: cancel refusal DM refused", "to", ev.To, "err", err)
		}
	}
	_, err := b.markSeen(ctx, key, 0)
	return err
}

// cancelRefusalText is a refused cancel as its requester reads it.
func cancelRefusalText(ev *bridge.Event) string {
	what := "job " + ev.JobID
	if ev.QuestionID != "" {
		what = "question " + ev.QuestionID + " of " + what
	}
	text := ev.Text
	if text == "" {
		text = "askbridge refused the cancel (" + ev.Reason + ")."
	}
	return bridge.Truncate(fmt.Sprintf("askbridge did not cancel %s (tenant %s). %s", what, ev.Tenant, text), maxContent)
}

// refusalText is the refusal as the clicker reads it.
func refusalText(ev *bridge.Event) string {
	text := ev.Text
	if text == "" {
		text = "askbridge refused your answer (" + ev.Reason + ")."
	}
	if len(ev.FieldErrors) > 0 && !strings.Contains(text, "\n") {
		var lines []string
		for _, name := range slices.Sorted(maps.Keys(ev.FieldErrors)) {
			p := ev.FieldErrors[name]
			if !strings.Contains(text, name+": "+p) {
				lines = append(lines, "• "+name+": "+p)
			}
		}
		if len(lines) > 0 {
			text += "\n" + strings.Join(lines, "\n")
		}
	}
	return bridge.Truncate(text, maxContent)
}
