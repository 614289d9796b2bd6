package slack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
)

// platform is Slack's part of the card lifecycle (engine.Cards): a card
// is a Block Kit message in the job's thread, which is a thread parent
// the adapter posts in the channel the first time. Slack has no
// idempotency key, so cards and parents carry metadata naming what they
// show, by which a later try finds them (docs/slack.md).
type platform struct{ b *Bot }

// Place is the question's Slack channel: its route's, else the default.
func (p platform) Place(q *bridge.Question) (string, *bridge.Failure) {
	channel, _ := p.b.channelFor(q)
	if channel != "" && !bridge.ValidSlackID(channel) {
		// Not sent: Slack would refuse it. Named in the failure, cut short.
		f := failure("chat.postMessage", "", &apiError{Op: "chat.postMessage", Code: "invalid_channel"})
		f.OperatorMessage = fmt.Sprintf("%q is not a Slack channel id (such as C0123); askbridge did not send the message.", bridge.Truncate(channel, 40))
		return "", f
	}
	return channel, nil
}

// Find returns the cards of ev in its thread of channel posted since
// since. With no thread known (a restart), it first looks for the job's
// thread parent in the channel, and adopts it.
func (p platform) Find(ctx context.Context, ev *bridge.Event, channel string, since time.Time) ([]bridge.MessageRef, error) {
	b := p.b
	thread := cmp.Or(p.routeThread(ev), p.knownThread(ev, channel))
	if thread == "" {
		var err error
		if thread, err = p.sharedThread(ctx, ev, channel, since); err != nil || thread == "" {
			return nil, err
		}
	}
	found, err := b.findMarked(ctx, channel, thread, since, questionMeta(bridge.RefOf(ev)), true)
	var out []bridge.MessageRef
	for _, ts := range found {
		out = append(out, bridge.MessageRef{Platform: bridge.PlatformSlack, Channel: channel, MessageID: ts, Thread: thread})
	}
	return out, err
}

// Post posts the card in the job's thread, opening it the first time.
func (p platform) Post(ctx context.Context, ev *bridge.Event, c *engine.Card, channel string, last bool) (*bridge.MessageRef, error) {
	b := p.b
	// Waiting for the channel's turn before anything is sent: for two
	// turns in a row when the job's thread is to be opened too.
	thread := p.routeThread(ev)
	if thread == "" {
		thread = p.knownThread(ev, channel)
	}
	if thread != "" {
		if err := b.pace.ready(ctx, channel); err != nil {
			return nil, err
		}
	} else {
		if err := b.pace.readyPair(ctx, channel); err != nil {
			return nil, err
		}
		var err error
		if thread, err = p.jobThread(ctx, ev, channel, last); err != nil {
			return nil, err
		}
		b.pace.handOn(ctx, channel)
	}
	blocks, text := blockkit.QuestionMessage(b.cardView(c))
	ts, err := b.postMarked(ctx, last, channel, thread, questionMeta(c.Ref), slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(text, false))
	if err != nil {
		return nil, err
	}
	return &bridge.MessageRef{Platform: bridge.PlatformSlack, Channel: channel, MessageID: ts, Thread: thread}, nil
}

// Adopt takes a card an earlier try posted: it is complete as it is.
func (p platform) Adopt(_ context.Context, _ *bridge.Event, _ string, found bridge.MessageRef) (*bridge.MessageRef, error) {
	return &found, nil
}

// Update rewrites the card as it stands: waiting with its controls, or
// how the question ended.
func (p platform) Update(ctx context.Context, c *engine.Card) (bool, error) {
	b, m := p.b, c.Message
	var end *card.Ending
	if ev := c.Ended; ev != nil {
		if end = card.EndingOf(ev); end == nil {
			end = &card.Ending{Event: ev.Type, At: ev.At}
		}
	}
	blocks, text := blockkit.Draw(b.cardView(c).Neutral(end))
	err := b.call(ctx, "chat.update", m.Channel, func(ctx context.Context) error {
		_, _, _, err := b.api.UpdateMessageContext(ctx, m.Channel, m.MessageID, slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(text, false))
		return err
	})
	var ae *apiError
	if err != nil && errors.As(err, &ae) && !ae.Transient {
		// The card is gone or unreachable; nothing to retry.
		b.log.WarnContext(ctx, "slack: could not update a card", "job", c.Ref.JobID, "question", c.Ref.QuestionID, "slack_error", ae.Code)
		return false, nil
	}
	return err == nil, err
}

// Fault reads a Slack error: what it means for the question, and whether
// a post may have reached Slack (an answer to trust did not come).
func (p platform) Fault(err error, channel string) engine.Fault {
	var ae *apiError
	if !errors.As(err, &ae) {
		return engine.Fault{Transient: true}
	}
	return engine.Fault{Transient: ae.Transient, RetryAfter: ae.RetryAfter, MayHavePosted: ae.Transient && ae.Code != "ratelimited",
		Failure: failure(ae.Op, channel, ae)}
}

// routeThread is the thread the question's route names, if any.
func (p platform) routeThread(ev *bridge.Event) string {
	if ev.Question == nil {
		return ""
	}
	_, thread := p.b.channelFor(ev.Question)
	return thread
}

// knownThread is the job's thread in channel as this adapter remembers
// it, or as the asked event names it.
func (p platform) knownThread(ev *bridge.Event, channel string) string {
	key := threadKey(ev.Tenant, ev.JobID, channel)
	if ts, ok := p.b.threads.Get(key); ok {
		return ts
	}
	for _, t := range ev.Threads {
		if t.Platform == bridge.PlatformSlack && t.Channel == channel && t.Thread != "" {
			p.b.threads.Put(key, t.Thread)
			return t.Thread
		}
	}
	return ""
}
