package engine

import (
	"cmp"
	"context"

	"github.com/askbridge/askbridge/bridge"
)

// Changed redraws a card in place for an event that changes what it shows
// without ending its question anew (docs/design.md, "Card state"): an
// approval recorded while the proposal needs more (the card keeps its
// controls and counts the approvals), or the agent's report of the
// approved proposal's execution (the settled card says executed or
// execution failed, with the agent's detail), or a delegation (the card
// names the new answerer and who asked them). Like Ended, the event names
// the card and carries the question, so any replica updates it after any
// restart; what the event lacks is asked of the runtime. An event that
// carries no proposal changes nothing.
func (cs *Cards) Changed(ctx context.Context, ev *bridge.Event, d Delivery) error {
	delegated := ev.Type == bridge.EventDelegated && ev.Question != nil
	if !delegated && (ev.Proposal == nil || (ev.Type != bridge.EventApproval && ev.Type != bridge.EventExecuted)) {
		return nil
	}
	ref := bridge.RefOf(ev)
	c := &Card{Ref: ref, Question: ev.Question, AskedAt: ev.AskedAt, Deadline: ev.Deadline, Message: bridge.MessageOn(ev, cs.Name),
		Proposal: ev.Proposal}
	if prev, ok := cs.memo.Get(ref.String()); ok {
		c.Proposal = cmp.Or(c.Proposal, prev.Proposal) // a delegation carries none
		c.Question = cmp.Or(c.Question, prev.Question)
		c.Message = cmp.Or(c.Message, prev.Message)
		c.AskedAt, c.Deadline = cmp.Or(c.AskedAt, prev.AskedAt), cmp.Or(c.Deadline, prev.Deadline)
		c.Ended, c.Updated = prev.Ended, prev.Updated
	}
	if (ev.Type == bridge.EventApproval || delegated) && c.Ended != nil {
		return nil // the card says how the question ended: it keeps that
	}
	if c.Message == nil || c.Question == nil || (ev.Type == bridge.EventExecuted && c.Ended == nil) {
		view, err := cs.show(ctx, ev, c.Question, d.Last)
		if err != nil {
			return err
		}
		n := *c
		cs.fill(&n, view)
		if view != nil && n.Ended == nil {
			n.Ended = view.EndedEvent()
		}
		c = &n
	}
	if ev.Type == bridge.EventExecuted && c.Ended == nil {
		c.Ended = approvedBy(ev)
	}
	if (ev.Type == bridge.EventApproval || delegated) && c.Ended != nil {
		return nil // the runtime says it ended since; its own event settles it
	}
	cs.remember(c)
	if c.Message == nil {
		return nil // never shown here
	}
	shown, err := cs.Platform.Update(ctx, c)
	if err != nil || !shown {
		return err
	}
	if c.Ended != nil {
		n := *c
		n.Updated = true
		cs.memo.Put(ref.String(), &n)
	}
	return nil
}

// approvedBy stands for the answered event of an executed proposal's
// question when neither this adapter nor the runtime gave it: the
// executed event says who answered (approved) and how, else the last
// approval does. A late click is told the question ended.
func approvedBy(ev *bridge.Event) *bridge.Event {
	e := *ev
	e.Type, e.EventID = bridge.EventAnswered, ""
	if e.AnswerText == "" && len(e.Answer) == 0 {
		e.AnswerText = bridge.Approved
	}
	if as := ev.Proposal.Approvals; len(as) > 0 {
		last := as[len(as)-1]
		e.At = cmp.Or(last.At, e.At)
		if e.By == "" {
			e.By, e.ByName, e.Via = last.By, last.ByName, last.Via
		}
	}
	return &e
}
