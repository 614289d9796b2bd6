package engine

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge"
)

// calls records which reactions an event reached, in order.
type calls []string

func (c *calls) Asked(context.Context, *bridge.Event, Delivery) error {
	*c = append(*c, "asked")
	return nil
}

func (c *calls) Ended(context.Context, *bridge.Event, Delivery) error {
	*c = append(*c, "ended")
	return nil
}

func (c *calls) Changed(context.Context, *bridge.Event, Delivery) error {
	*c = append(*c, "changed")
	return nil
}

func (c *calls) reaction(name string) func(context.Context, *bridge.Event) error {
	return func(context.Context, *bridge.Event) error {
		*c = append(*c, name)
		return nil
	}
}

// TestRouteSendsEachEventWhereItBelongs checks every event type reaches
// the cards and the platform's reactions it should, in order, and that an
// event whose ids name no job or question reaches nothing.
func TestRouteSendsEachEventWhereItBelongs(t *testing.T) {
	ev := func(typ, question, state string) *bridge.Event {
		return &bridge.Event{Type: typ, Tenant: "acme", JobID: "job-1", QuestionID: question, State: state}
	}
	for _, c := range []struct {
		name string
		ev   *bridge.Event
		want []string
	}{
		{"asked", ev(bridge.EventAsked, "q-1", bridge.StatePending), []string{"asked", "restricted"}},
		{"answered", ev(bridge.EventAnswered, "q-1", bridge.StateAnswered), []string{"ended"}},
		{"declined", ev(bridge.EventDeclined, "q-1", bridge.StateDeclined), []string{"ended"}},
		{"timed out", ev(bridge.EventTimedOut, "q-1", bridge.StateTimedOut), []string{"ended"}},
		{"cancelled", ev(bridge.EventCancelled, "q-1", bridge.StateCancelled), []string{"ended"}},
		{"superseded", ev(bridge.EventSuperseded, "q-1", bridge.StateSuperseded), []string{"ended"}},
		{"delivery failed everywhere", ev(bridge.EventDeliveryFailed, "q-1", bridge.StateFailed), []string{"ended"}},
		{"delivery failed on one platform", ev(bridge.EventDeliveryFailed, "q-1", bridge.StatePending), nil},
		{"approval", ev(bridge.EventApproval, "q-1", bridge.StatePending), []string{"changed"}},
		{"executed", ev(bridge.EventExecuted, "q-1", bridge.StateAnswered), []string{"changed"}},
		{"refused", ev(bridge.EventRefused, "q-1", ""), []string{"refused"}},
		{"refused cancel of a whole job", ev(bridge.EventRefused, "", ""), []string{"refused"}},
		{"snoozed", ev(bridge.EventSnoozed, "q-1", bridge.StatePending), []string{"refused"}},
		{"delegated", ev(bridge.EventDelegated, "q-1", bridge.StatePending), []string{"changed", "reminder"}},
		{"reminded", ev(bridge.EventReminded, "q-1", bridge.StatePending), []string{"reminder"}},
		{"escalated", ev(bridge.EventEscalated, "q-1", bridge.StatePending), []string{"reminder"}},
		{"notice", ev(bridge.EventNotice, "", ""), []string{"notice"}},
		{"an unknown type", ev("frobnicated", "q-1", ""), nil},
		{"answered without a question", ev(bridge.EventAnswered, "", bridge.StateAnswered), nil},
		{"asked with a bad job", &bridge.Event{Type: bridge.EventAsked, Tenant: "acme", JobID: "job 1", QuestionID: "q-1"}, nil},
		{"notice without a tenant", &bridge.Event{Type: bridge.EventNotice, JobID: "job-1"}, nil},
	} {
		var got calls
		var logged strings.Builder
		r := &Reactions{Name: "test", Cards: &got, RestrictedAsked: got.reaction("restricted"),
			Refused: got.reaction("refused"), Reminder: got.reaction("reminder"), Notice: got.reaction("notice"),
			Logger: slog.New(slog.NewTextHandler(&logged, nil))}
		if err := r.Route(context.Background(), c.ev, Delivery{Attempt: 1}); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: reached %v, want %v", c.name, []string(got), c.want)
		}
		// Dropped for its ids: said so. An unknown type is new, not bad.
		dropped := c.want == nil && c.ev.Type != "frobnicated" && c.ev.Type != bridge.EventDeliveryFailed
		if said := strings.Contains(logged.String(), "ignoring an event with invalid ids"); said != dropped {
			t.Errorf("%s: logged %q", c.name, logged.String())
		}
	}
}
