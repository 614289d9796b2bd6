package slack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	neutral "github.com/askbridge/askbridge/card"
)

// onAsked posts the question's card once, in the job's thread, and
// reports the delivery; the runtime records the message and names it on
// every later event about the question (docs/design.md, "Card state").
//
// Once: the adapters' consumer hands an event to one replica at a time,
// so nobody else posts while this try runs. Slack has no idempotency key,
// so a try may have posted and not reported (it failed in a way that
// hides Slack's answer, or the adapter stopped or died): the card carries
// metadata naming the question, and every later try of the event first
// looks for it in the thread and adopts it (findPosted). A first try, the
// hot path, looks for nothing.
func (b *Bot) onAsked(ctx context.Context, ev *bridge.Event, d engine.Delivery) error {
	q := ev.Question
	if q == nil || q.Tenant != ev.Tenant || q.JobID != ev.JobID || q.QuestionID != ev.QuestionID {
		b.log.WarnContext(ctx, "slack: asked event without its question", "job", ev.JobID, "question", ev.QuestionID)
		return nil
	}
	q.TaskVersion = ev.TaskVersion
	ref := refOf(ev)
	channel, routeThread := b.channelFor(q)
	if channel == "" {
		// Not routed to Slack and no default channel: not ours to show.
		return nil
	}
	if !bridge.ValidSlackID(channel) {
		// Not sent: Slack would refuse it. Named in the failure, cut short.
		f := failure("chat.postMessage", "", &apiError{Op: "chat.postMessage", Code: "invalid_channel"})
		f.OperatorMessage = fmt.Sprintf("%q is not a Slack channel id (such as C0123); askbridge did not send the message.", neutral.Truncate(channel, 40))
		return b.report(ctx, ref, nil, f)
	}
	if !ev.Deadline.IsZero() && b.now().After(ev.Deadline) {
		return nil // an old event replayed to a new consumer; the question is over
	}
	if c, ok := b.cards.Get(cardKey(ref)); ok && c.TS != "" {
		return b.report(ctx, ref, c.message(), nil) // posted; the report was lost
	} else if ok && c.Outcome != "" {
		return nil // settled before it could be shown
	}
	if bridge.Replayed(ev, b.now()) && !b.stillWaits(ctx, ev) {
		return nil
	}
	// Waiting for the channel's turn before anything is sent.
	if err := b.pace.ready(ctx, channel); err != nil {
		return err
	}
	thread, err := routeThread, error(nil)
	if thread == "" {
		thread, err = b.jobThread(ctx, ev, channel, d)
	}
	var ts string
	if err == nil && d.Attempt > 1 {
		var lerr error
		ts, lerr = b.findPosted(ctx, channel, thread, ev.AskedAt, questionMeta(ref))
		if lerr != nil && !d.Last {
			err = lerr // look again later rather than show it twice
		}
	}
	c := &card{Question: q, AskedAt: ev.AskedAt, Deadline: ev.Deadline, Channel: channel, Thread: thread}
	posting := false // a post was sent, and Slack may have taken it
	if err == nil && ts == "" {
		blocks, text := blockkit.QuestionMessage(b.cardView(c, ref))
		posting = true
		ts, err = b.postMarked(ctx, d.Last, channel, thread, questionMeta(ref), slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(text, false))
	}
	if err != nil {
		return b.notPosted(ctx, ev, c, posting, d, err)
	}
	c.TS = ts
	b.cards.Put(cardKey(ref), c)
	return b.report(ctx, ref, c.message(), nil)
}

// stillWaits says whether a replayed asked event (a new consumer, or back
// after an outage) is about a question that still waits: one that ended
// long ago is not shown. When the runtime does not say, it is shown.
func (b *Bot) stillWaits(ctx context.Context, ev *bridge.Event) bool {
	state, err := bridge.QuestionState(ctx, b.o.NATS.Conn, ev)
	if err != nil {
		b.log.DebugContext(ctx, "slack: no state for a replayed question; showing it", "job", ev.JobID, "question", ev.QuestionID, "err", err)
		return true
	}
	if state != bridge.StatePending {
		b.log.InfoContext(ctx, "slack: not showing a replayed question that no longer waits", "tenant", ev.Tenant,
			"job", ev.JobID, "question", ev.QuestionID, "task_version", ev.TaskVersion, "state", state)
		return false
	}
	return true
}

// notPosted handles a card that could not be posted: a stop or a wait
// for the channel's turn hands the event back; a transient failure tries
// again later, looking first for what the try may have posted; on the
// last try, or for good, the failure is reported.
func (b *Bot) notPosted(ctx context.Context, ev *bridge.Event, c *card, posting bool, d engine.Delivery, err error) error {
	var hold *engine.Hold
	if ctx.Err() != nil || errors.As(err, &hold) {
		return err
	}
	var ae *apiError
	if !errors.As(err, &ae) {
		return err
	}
	if ae.Transient && !d.Last {
		return &engine.Later{After: ae.laterThan(10 * time.Second), Why: ae.Error()}
	}
	ref := refOf(ev)
	f := failure(ae.Op, c.Channel, ae)
	if posting && ae.Transient {
		// Slack may have taken a try whose answer was lost: when the
		// question ends, its cards are looked for and settled.
		s := stray{Channel: c.Channel, Thread: c.Thread, Since: ev.AskedAt}
		if err := putJSON(ctx, b.kv, strayKey(ref), s, bridge.EventRecordTTL); err != nil {
			return err
		}
	}
	b.log.ErrorContext(ctx, "slack: could not show a question", "job", ev.JobID, "question", ev.QuestionID, "code", f.Code, "slack_error", ae.Code)
	return b.report(ctx, ref, nil, f)
}

// jobThread returns the ts of the job's thread parent in channel, posting
// the parent the first time. One thread per job and channel: the thread
// is remembered here, and the runtime names the job's threads on each
// asked event (from the cards' delivery reports) for an adapter that
// restarted. Like a card, the parent carries metadata, and a later try of
// the event adopts the parent an earlier try left in the channel.
func (b *Bot) jobThread(ctx context.Context, ev *bridge.Event, channel string, d engine.Delivery) (string, error) {
	key := threadKey(ev.Tenant, ev.JobID, channel)
	if ts, ok := b.threads.Get(key); ok {
		return ts, nil
	}
	for _, t := range ev.Threads {
		if t.Platform == bridge.PlatformSlack && t.Channel == channel && t.Thread != "" {
			b.threads.Put(key, t.Thread)
			return t.Thread, nil
		}
	}
	meta := threadMeta(ev.Tenant, ev.JobID)
	var ts string
	if d.Attempt > 1 {
		var err error
		if ts, err = b.findPosted(ctx, channel, "", ev.AskedAt, meta); err != nil && !d.Last {
			return "", err // look again later rather than open a second thread
		}
	}
	if ts == "" {
		blocks, text := blockkit.ThreadParent(ev.Question, b.consoleOn())
		var err error
		if ts, err = b.postMarked(ctx, d.Last, channel, "", meta, slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(text, false)); err != nil {
			return "", err
		}
	}
	b.threads.Put(key, ts)
	return ts, nil
}

// report publishes the delivery report; its message id makes repeats free.
func (b *Bot) report(ctx context.Context, r blockkit.Ref, msg *bridge.MessageRef, f *bridge.Failure) error {
	return bridge.PublishDelivery(ctx, b.js, bridge.Delivery{Tenant: r.Tenant, JobID: r.JobID, QuestionID: r.QuestionID,
		TaskVersion: r.Version, Platform: bridge.PlatformSlack, OK: f == nil, Message: msg, Failure: f, At: b.now().UTC()})
}
