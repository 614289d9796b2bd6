package engine

import (
	"context"
	"log/slog"

	"github.com/askbridge/askbridge/bridge"
)

// Reactions are what a platform does with the runtime's events beyond its
// cards; Route sends each event to them or to the cards, the same way on
// every platform.
type Reactions struct {
	Name  string // the adapter, first word of every log line ("slack")
	Cards CardLife
	// RestrictedAsked sends a restricted question's content to the people
	// it names, once its card (which shows only that it waits) is shown.
	RestrictedAsked func(ctx context.Context, ev *bridge.Event) error
	// Refused tells the person whose attempt was refused, or who snoozed,
	// and them alone.
	Refused func(ctx context.Context, ev *bridge.Event) error
	// Reminder sends the reminders, escalations and delegations to the
	// people in ev.Targets.
	Reminder func(ctx context.Context, ev *bridge.Event) error
	// Notice tells a job's thread what the runtime has to say about it.
	Notice func(ctx context.Context, ev *bridge.Event) error
	Logger *slog.Logger
}

// CardLife is what Route asks of a platform's cards (Cards).
type CardLife interface {
	Asked(ctx context.Context, ev *bridge.Event, d Delivery) error
	Ended(ctx context.Context, ev *bridge.Event, d Delivery) error
	Changed(ctx context.Context, ev *bridge.Event, d Delivery) error
}

// Route applies one runtime event. Every reaction is idempotent: the same
// event twice, or events redelivered after a restart, change nothing
// more. An event whose ids could not name a job or question is dropped.
func (r *Reactions) Route(ctx context.Context, ev *bridge.Event, d Delivery) error {
	// A notice is about a job, not a question, as is a refused cancel of a
	// whole job.
	jobWide := ev.Type == bridge.EventNotice || (ev.Type == bridge.EventRefused && ev.QuestionID == "")
	if !bridge.ValidToken(ev.Tenant) || !bridge.ValidToken(ev.JobID) || (!jobWide && !bridge.ValidToken(ev.QuestionID)) {
		r.Logger.WarnContext(ctx, r.Name+": ignoring an event with invalid ids", "type", ev.Type)
		return nil
	}
	switch ev.Type {
	case bridge.EventAsked:
		if err := r.Cards.Asked(ctx, ev, d); err != nil {
			return err
		}
		return r.RestrictedAsked(ctx, ev)
	case bridge.EventAnswered, bridge.EventDeclined, bridge.EventTimedOut, bridge.EventCancelled, bridge.EventSuperseded:
		return r.Cards.Ended(ctx, ev, d)
	case bridge.EventDeliveryFailed:
		if ev.State != bridge.StateFailed {
			return nil // one platform failed; the question still waits elsewhere
		}
		// No platform showed it and it has ended; a card a platform made
		// although the adapter gave up on it is settled like any other.
		return r.Cards.Ended(ctx, ev, d)
	case bridge.EventApproval, bridge.EventExecuted:
		return r.Cards.Changed(ctx, ev, d)
	case bridge.EventRefused, bridge.EventSnoozed:
		return r.Refused(ctx, ev)
	case bridge.EventDelegated:
		// The cards name the delegate; the delegate gets the question in
		// a direct message, by the reminders' path (ev.Targets).
		if err := r.Cards.Changed(ctx, ev, d); err != nil {
			return err
		}
		return r.Reminder(ctx, ev)
	case bridge.EventReminded, bridge.EventEscalated:
		return r.Reminder(ctx, ev)
	case bridge.EventNotice:
		return r.Notice(ctx, ev)
	}
	return nil
}
