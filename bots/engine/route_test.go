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
		name    string
		ev      *bridge.Event
		want    []string
		dropped bool // for its ids, and said so
	}{
		{"asked", ev(bridge.EventAsked, "q-1", bridge.StatePending), []string{"asked", "restricted"}, false},
		{"answered", ev(bridge.EventAnswered, "q-1", bridge.StateAnswered), []string{"ended"}, false},
		{"declined", ev(bridge.EventDeclined, "q-1", bridge.StateDeclined), []string{"ended"}, false},
		{"timed out", ev(bridge.EventTimedOut, "q-1", bridge.StateTimedOut), []string{"ended"}, false},
		{"cancelled", ev(bridge.EventCancelled, "q-1", bridge.StateCancelled), []string{"ended"}, false},
		{"superseded", ev(bridge.EventSuperseded, "q-1", bridge.StateSuperseded), []string{"ended"}, false},
		{"delivery failed everywhere", ev(bridge.EventDeliveryFailed, "q-1", bridge.StateFailed), []string{"ended"}, false},
		{"delivery failed on one platform", ev(bridge.EventDeliveryFailed, "q-1", bridge.StatePending), nil, false},
		{"approval", ev(bridge.EventApproval, "q-1", bridge.StatePending), []string{"changed"}, false},
		{"executed", ev(bridge.EventExecuted, "q-1", bridge.StateAnswered), []string{"changed"}, false},
		{"refused", ev(bridge.EventRefused, "q-1", ""), []string{"refused"}, false},
		{"refused cancel of a whole job", ev(bridge.EventRefused, "", ""), []string{"refused"}, false},
		{"snoozed", ev(bridge.EventSnoozed, "q-1", bridge.StatePending), []string{"refused"}, false},
		{"delegated", ev(bridge.EventDelegated, "q-1", bridge.StatePending), []string{"changed", "reminder"}, false},
		{"reminded", ev(bridge.EventReminded, "q-1", bridge.StatePending), []string{"reminder"}, false},
		{"escalated", ev(bridge.EventEscalated, "q-1", bridge.StatePending), []string{"reminder"}, false},
		{"notice", ev(bridge.EventNotice, "", ""), []string{"notice"}, false},
		{"an unknown type", ev("frobnicated", "q-1", ""), nil, false},
		{"answered without a question", ev(bridge.EventAnswered, "", bridge.StateAnswered), nil, true},
		{"asked with a bad job", &bridge.Event{Type: bridge.EventAsked, Tenant: "acme", JobID: "job 1", QuestionID: "q-1"}, nil, true},
		{"notice without a tenant", &bridge.Event{Type: bridge.EventNotice, JobID: "job-1"}, nil, true},
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
		if said := strings.Contains(logged.String(), "ignoring an event with invalid ids"); said != c.dropped {
			t.Errorf("%s: logged %q", c.name, logged.String())
		}
	}
}
