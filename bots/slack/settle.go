package slack

import (
	"context"
	"errors"
	"time"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// onSettled rewrites the question's card with how it ended: controls
// removed, one context line. The event names the card (the runtime's
// record of the delivery report) and carries the question, so any replica
// settles any card, however long after it was posted; chat.update is
// idempotent, so a redelivered event changes nothing more. A card posted
// after the outcome was recorded is not named by the event: this adapter
// remembers what it posted, and otherwise asks the runtime.
func (b *Bot) onSettled(ctx context.Context, ev *bridge.Event, d engine.Delivery) error {
	ref := refOf(ev)
	key := cardKey(ref)
	prev, _ := b.cards.Get(key)
	if prev != nil && prev.Updated {
		return nil // the first outcome is shown; repeats change nothing
	}
	c := &card{Question: ev.Question, AskedAt: ev.AskedAt, Deadline: ev.Deadline}
	if m := slackMessage(ev); m != nil {
		c.Channel, c.TS, c.Thread = m.Channel, m.MessageID, m.Thread
	} else if prev != nil && prev.TS != "" {
		c.Channel, c.TS, c.Thread = prev.Channel, prev.TS, prev.Thread
	}
	if c.Question == nil && prev != nil {
		c.Question = prev.Question
	}
	outcome := func() {
		if q := c.Question; q != nil && q.TaskVersion != ev.TaskVersion {
			v := *q // shared with whoever read it from the memo
			v.TaskVersion = ev.TaskVersion
			c.Question = &v
		}
		c.Outcome, c.Ended, c.Late, c.Attempt = blockkit.OutcomeLine(ev, c.Question), ev.At, lateText(ev), ev.AttemptID
		// Remembered before Slack shows it: a click meanwhile is told the
		// question ended, in the runtime's words, and an asked event that
		// comes late shows nothing.
		b.cards.Put(key, c)
	}
	outcome()
	strayed := false
	if c.TS == "" {
		var err error
		if strayed, err = b.hasStrays(ctx, ref); err != nil {
			return err
		}
	}
	// A failed question was shown nowhere: nothing to look up.
	if (c.TS == "" && !strayed && ev.Type != bridge.EventDeliveryFailed) || c.Question == nil {
		view, err := b.questionFor(ctx, ev, c, d.Last)
		if err != nil {
			return err
		}
		n := *c
		fill(&n, view)
		c = &n
		outcome()
	}
	switch {
	case strayed:
		return b.settleStrays(ctx, ref, c, d.Last)
	case c.TS == "":
		return nil // never shown in Slack
	}
	shown, err := b.showSettled(ctx, ref, c)
	if err != nil || !shown {
		return err
	}
	n := *c
	n.Updated = true
	b.cards.Put(key, &n)
	return nil
}

// questionFor asks the runtime for what an event lacks to settle a card:
// the message, when the card was posted after the outcome was recorded
// and by another run of the adapter, or the question. Only a question
// Slack shows is asked about. When the runtime does not answer, the event
// is tried again later, except on its last try.
func (b *Bot) questionFor(ctx context.Context, ev *bridge.Event, c *card, lastTry bool) (*bridge.QuestionView, error) {
	q := c.Question
	if q == nil {
		q = ev.Question
	}
	if q != nil {
		if channel, _ := b.channelFor(q); channel == "" {
			return nil, nil
		}
	}
	v, err := bridge.ShowQuestion(ctx, b.o.NATS.Conn, ev)
	switch {
	case err == nil:
		return v, nil
	case errors.Is(err, bridge.ErrNotShown) || lastTry:
		b.log.WarnContext(ctx, "slack: the runtime does not show a settled question; its card, if any, is left as it is",
			"job", ev.JobID, "question", ev.QuestionID, "err", err)
		return nil, nil
	}
	return nil, &engine.Later{After: 5 * time.Second, Why: "the runtime did not show a settled question: " + err.Error()}
}

// fill gives c what view has and c lacks: the question, its Slack message.
func fill(c *card, view *bridge.QuestionView) {
	if view == nil {
		return
	}
	if c.Question == nil && view.Question != nil {
		q := *view.Question
		c.Question = &q
		c.AskedAt, c.Deadline = view.AskedAt, view.Deadline
	}
	if c.TS == "" {
		for _, m := range view.Messages {
			if m.Platform == bridge.PlatformSlack && m.MessageID != "" {
				c.Channel, c.TS, c.Thread = m.Channel, m.MessageID, m.Thread
				break
			}
		}
	}
}

// lateText is what someone who answers the question of ev after ev ended
// it is told: the runtime's words for such an answer.
func lateText(ev *bridge.Event) string {
	return bridge.EndedText(ev.Type, ev.By, ev.ByName, ev.At, ev.TaskVersion)
}

// hasStrays says whether a post of the card of ref failed in a way that
// may hide a success (a stray record).
func (b *Bot) hasStrays(ctx context.Context, ref blockkit.Ref) (bool, error) {
	var s stray
	rev, err := getJSON(ctx, b.kv, strayKey(ref), &s)
	return rev != 0, err
}

// settleStrays settles the cards Slack may hold for a question whose post
// failed in a way that may hide a success (a stray record): otherwise
// their buttons would stay live. A lookup that fails for now is tried
// again later, except on the event's last try.
func (b *Bot) settleStrays(ctx context.Context, ref blockkit.Ref, c *card, lastTry bool) error {
	var s stray
	rev, err := getJSON(ctx, b.kv, strayKey(ref), &s)
	if err != nil || rev == 0 {
		return err
	}
	found, err := b.findMarked(ctx, s.Channel, s.Thread, s.Since, questionMeta(ref), true)
	if err != nil && !lastTry {
		return err
	}
	for _, ts := range found {
		n := *c
		n.Channel, n.TS, n.Thread = s.Channel, ts, s.Thread
		if _, err := b.showSettled(ctx, ref, &n); err != nil {
			return err
		}
	}
	if err := b.kv.Delete(ctx, strayKey(ref)); err != nil {
		b.log.WarnContext(ctx, "slack: could not forget a stray card", "job", ref.JobID, "question", ref.QuestionID, "err", err)
	}
	return nil
}

// slackMessage is the Slack message the event says shows its question.
func slackMessage(ev *bridge.Event) *bridge.MessageRef {
	for i, m := range ev.Messages {
		if m.Platform == bridge.PlatformSlack && m.MessageID != "" {
			return &ev.Messages[i]
		}
	}
	return nil
}

// showSettled rewrites the card of c in Slack with its outcome. It says
// whether the card shows it; an error means try again later, and a card
// Slack no longer has is left alone.
func (b *Bot) showSettled(ctx context.Context, ref blockkit.Ref, c *card) (bool, error) {
	blocks, text := blockkit.SettledMessage(b.cardView(c, ref), c.Outcome)
	err := b.call(ctx, "chat.update", c.Channel, func(ctx context.Context) error {
		_, _, _, err := b.api.UpdateMessageContext(ctx, c.Channel, c.TS, slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(text, false))
		return err
	})
	var ae *apiError
	if err != nil && errors.As(err, &ae) && !ae.Transient {
		// The card is gone or unreachable; nothing to retry.
		b.log.WarnContext(ctx, "slack: could not update a card", "job", ref.JobID, "question", ref.QuestionID, "slack_error", ae.Code)
		return false, nil
	}
	return err == nil, err
}
