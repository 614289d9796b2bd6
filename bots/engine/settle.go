package engine

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// Ended settles the card of a question an event ended: the platform
// redraws it with the outcome and no controls. The event names the card
// (the runtime's record of the delivery report) and carries the question,
// so any replica settles any card, however long after it was posted. A
// card posted after the outcome was recorded is not named by the event:
// this adapter remembers what it posted, and otherwise asks the runtime.
// The first outcome shown wins; repeats change nothing.
func (cs *Cards) Ended(ctx context.Context, ev *bridge.Event, d Delivery) error {
	ref := bridge.RefOf(ev)
	prev, _ := cs.memo.Get(ref.String())
	if prev != nil && prev.Updated {
		return nil
	}
	c := &Card{Ref: ref, Question: ev.Question, AskedAt: ev.AskedAt, Deadline: ev.Deadline, Ended: ev, Message: bridge.MessageOn(ev, cs.Name),
		Proposal: ev.Proposal}
	if prev != nil {
		c.Question = cmp.Or(c.Question, prev.Question)
		c.Message = cmp.Or(c.Message, prev.Message)
		c.Proposal = cmp.Or(c.Proposal, prev.Proposal)
	}
	// Remembered before the platform shows it: a click meanwhile is told
	// the question ended, and an asked event that comes late shows nothing.
	cs.remember(c)
	var strayed *stray
	if c.Message == nil {
		var err error
		if strayed, err = cs.strayOf(ctx, ref); err != nil {
			return err
		}
	}
	// A failed question was shown nowhere: nothing to look up.
	if (c.Message == nil && strayed == nil && ev.Type != bridge.EventDeliveryFailed) || c.Question == nil {
		view, err := cs.show(ctx, ev, c.Question, d.Last)
		if err != nil {
			return err
		}
		n := *c
		cs.fill(&n, view)
		c = &n
		cs.remember(c)
	}
	switch {
	case strayed != nil:
		return cs.settleStrays(ctx, ev, c, strayed, d.Last)
	case c.Message == nil:
		return nil // never shown here
	}
	shown, err := cs.Platform.Update(ctx, c)
	if err != nil || !shown {
		return err
	}
	n := *c
	n.Updated = true
	cs.memo.Put(ref.String(), &n)
	return nil
}

// remember keeps c, its question at the card's task version.
func (cs *Cards) remember(c *Card) {
	if q := c.Question; q != nil && q.TaskVersion != c.Ref.Version {
		v := *q // shared with whoever read it from the memo
		v.TaskVersion = c.Ref.Version
		c.Question = &v
	}
	cs.memo.Put(c.Ref.String(), c)
}

// show asks the runtime for what an event lacks to settle a card: the
// message, when the card was posted after the outcome was recorded and
// by another run of the adapter, or the question. Only a question this
// platform shows is asked about. When the runtime does not answer, the
// event is tried again later, except on its last try.
func (cs *Cards) show(ctx context.Context, ev *bridge.Event, q *bridge.Question, last bool) (*bridge.QuestionView, error) {
	if q != nil {
		if channel, _ := cs.Platform.Place(q); channel == "" {
			return nil, nil
		}
	}
	v, err := bridge.ShowQuestion(ctx, cs.NATS.Conn, ev)
	switch {
	case err == nil:
		return v, nil
	case errors.Is(err, bridge.ErrNotShown) || last:
		cs.Logger.WarnContext(ctx, cs.Name+": the runtime does not show an ended question; its card, if any, is left as it is",
			"job", ev.JobID, "question", ev.QuestionID, "err", err)
		return nil, nil
	}
	return nil, &Later{After: 5 * time.Second, Why: "the runtime did not show an ended question: " + err.Error()}
}

// fill gives c what view has and c lacks: the question, its message here.
func (cs *Cards) fill(c *Card, view *bridge.QuestionView) {
	if view == nil {
		return
	}
	if c.Question == nil && view.Question != nil {
		q := *view.Question
		c.Question = &q
		c.AskedAt, c.Deadline = view.AskedAt, view.Deadline
	}
	for i, m := range view.Messages {
		if c.Message == nil && m.Platform == cs.Name && m.MessageID != "" {
			c.Message = &view.Messages[i]
		}
	}
}

// strayOf is the record of a post of the card of ref that failed in a way
// that may hide a success, nil when there is none.
func (cs *Cards) strayOf(ctx context.Context, ref bridge.Ref) (*stray, error) {
	var s stray
	_, _, found, err := bridge.GetJSON(ctx, cs.KV, strayKey(ref), &s)
	if err != nil || !found {
		return nil, err
	}
	return &s, nil
}

// settleStrays settles the cards the platform may hold for a question
// whose post failed in a way that may hide a success: otherwise their
// controls would stay live. A lookup that fails for now is tried again
// later, except on the event's last try.
func (cs *Cards) settleStrays(ctx context.Context, ev *bridge.Event, c *Card, s *stray, last bool) error {
	if err := cs.settleFound(ctx, ev, c, s.Channel, s.Since, last); err != nil {
		return err
	}
	if err := cs.KV.Delete(ctx, strayKey(c.Ref)); err != nil {
		cs.Logger.WarnContext(ctx, cs.Name+": could not forget a stray card", "job", ev.JobID, "question", ev.QuestionID, "err", err)
	}
	return nil
}

// settleFound settles every card of c's question the platform holds in
// channel since since, posted by tries whose answers were lost, and
// remembers the first as the question's card.
func (cs *Cards) settleFound(ctx context.Context, ev *bridge.Event, c *Card, channel string, since time.Time, last bool) error {
	found, err := cs.Platform.Find(ctx, ev, channel, since)
	if err != nil && !last {
		return err
	}
	if len(found) == 0 {
		return nil
	}
	cs.Logger.InfoContext(ctx, cs.Name+": settling the cards of an ended question whose posts went unanswered",
		"job", ev.JobID, "question", ev.QuestionID, "copies", len(found))
	for i := range found {
		n := *c
		n.Message = &found[i]
		if _, err := cs.Platform.Update(ctx, &n); err != nil {
			return err
		}
	}
	n := *c
	n.Message, n.Updated = &found[0], true
	cs.memo.Put(c.Ref.String(), &n)
	return nil
}
