package slack

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// handleEvent applies one runtime event (engine.Reactions.Route).
func (b *Bot) handleEvent(ctx context.Context, ev *bridge.Event, d engine.Delivery) error {
	return b.reactions.Route(ctx, ev, d)
}

func refOf(ev *bridge.Event) blockkit.Ref {
	return blockkit.Ref{Tenant: ev.Tenant, JobID: ev.JobID, QuestionID: ev.QuestionID, Version: ev.TaskVersion}
}

// channelFor is the question's Slack channel: its route, else the
// default; and the thread its route names, if any (in the default channel
// when the route names a thread but no channel).
func (b *Bot) channelFor(q *bridge.Question) (channel, threadTS string) {
	if q.Route == nil || q.Route.Slack == nil {
		return b.o.DefaultChannel, ""
	}
	if q.Route.Slack.Channel != "" {
		return q.Route.Slack.Channel, q.Route.Slack.ThreadTS
	}
	return b.o.DefaultChannel, q.Route.Slack.ThreadTS
}

// consoleOn says the web console is configured (ASK_PUBLIC_URL and
// ASK_CONSOLE_SECRET): only then do cards and thread parents offer it.
func (b *Bot) consoleOn() bool {
	return b.o.Console.PublicURL != "" && len(b.o.Console.Secret) > 0
}

// questionURL is a signed console link to the question for identity, the
// one person who will see it ("" when the console is off). Links act as
// their identity, so they are minted only for a person, never for a
// channel: channel messages offer a button instead (see offerConsole).
func (b *Bot) questionURL(identity string, r blockkit.Ref) string {
	if !b.consoleOn() || identity == "" {
		return ""
	}
	return b.o.Console.QuestionURL(identity, r.Tenant, r.JobID, r.QuestionID, console.DefaultLinkTTL)
}

// jobURL is a signed console link to a job's page for identity, one person.
func (b *Bot) jobURL(identity, tenant, job string) string {
	if !b.consoleOn() || identity == "" {
		return ""
	}
	return b.o.Console.JobURL(identity, tenant, job, console.DefaultLinkTTL)
}

// cardView is what a question's card shows in the channel: no console
// link (everyone there reads it), an "Open in console" button when the
// console is configured.
func (b *Bot) cardView(c *engine.Card) blockkit.Card {
	v := blockkit.Card{Question: c.Question, AskedAt: c.AskedAt, Deadline: c.Deadline, Console: b.consoleOn(), Proposal: c.Proposal}
	if c.Ended != nil {
		v.Ended = c.Ended.At
	}
	return v
}

// Keys of an attempt's reply_to, echoed on refusals.
const (
	replyUser        = "slack_user"
	replyChannel     = "channel"
	replyThread      = "thread_ts"
	replyResponseURL = "response_url"
)

// onRefused tells the person who clicked, and only them, why their answer
// was refused, in the refusal's own words.
func (b *Bot) onRefused(ctx context.Context, ev *bridge.Event) error {
	user := ev.ReplyTo[replyUser]
	if user == "" || !bridge.ValidSlackID(user) || (ev.To != "" && ev.To != "slack:"+user) {
		return nil // not an attempt made in Slack
	}
	text := ev.Text
	if text == "" {
		text = "askbridge refused your answer."
	}
	key := onceKey("refused", ev.EventID, ev.AttemptID)
	ok, err := b.once(ctx, key)
	if err != nil || !ok {
		return err
	}
	if err := b.tell(ctx, ev.ReplyTo, text); err != nil {
		b.release(ctx, key)
		return err
	}
	return nil
}

// tell sends an ephemeral message to the person in reply_to: through the
// interaction's response_url when there is one, else chat.postEphemeral.
func (b *Bot) tell(ctx context.Context, to map[string]string, text string) error {
	noUnfurl := false // texts may hold a person's signed console link
	if u := to[replyResponseURL]; u != "" && b.responseURLOK(u) {
		err := slack.PostWebhookCustomHTTPContext(ctx, u, b.http, &slack.WebhookMessage{ResponseType: slack.ResponseTypeEphemeral, Text: text,
			UnfurlLinks: &noUnfurl, UnfurlMedia: &noUnfurl})
		if err == nil {
			return nil
		}
		// response_urls expire after 30 minutes or five uses: fall back.
		b.log.InfoContext(ctx, "slack: response_url failed, using chat.postEphemeral", "err", classify("response_url", err).Code)
	}
	channel, user := to[replyChannel], to[replyUser]
	if channel == "" || user == "" {
		return nil
	}
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl()}
	if ts := to[replyThread]; ts != "" {
		opts = append(opts, slack.MsgOptionTS(ts))
	}
	err := b.call(ctx, "chat.postEphemeral", channel, func(ctx context.Context) error {
		_, err := b.api.PostEphemeralContext(ctx, channel, user, opts...)
		return err
	})
	var ae *apiError
	if ctx.Err() == nil && errors.As(err, &ae) && !ae.Transient {
		b.log.WarnContext(ctx, "slack: could not tell a person", "slack_error", ae.Code)
		return nil
	}
	return err
}

// responseURLOK accepts only Slack's own response URLs (or the configured
// API host, for proxies and tests): reply_to crosses NATS, and askbridge
// must not POST wherever a message says.
func (b *Bot) responseURLOK(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil {
		return false
	}
	if u.Scheme == "https" && (u.Host == "hooks.slack.com" || u.Host == "hooks.slack-gov.com") {
		return true
	}
	api, err := url.Parse(b.o.APIURL)
	return err == nil && u.Scheme == api.Scheme && u.Host == api.Host
}

// quote escapes and shortens text for a one-paragraph mrkdwn quote.
func quote(s string, n int) string {
	s = bridge.Truncate(strings.Join(strings.Fields(s), " "), n)
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
