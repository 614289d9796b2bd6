package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// callsIn returns the calls of method made to channel, in order.
func callsIn(fake *fakeSlack, method, channel string) []apiCall {
	var out []apiCall
	for _, c := range fake.Calls(method) {
		if c.Str("channel") == channel {
			out = append(out, c)
		}
	}
	return out
}

// TestAWaitingChannelLeavesItsWorkerToOthers checks a channel Slack holds
// with 429s (Retry-After 2, three times) does not hold the worker its
// job shares with another channel's job: the other channel's cards are
// posted meanwhile, before the held channel's card, and the held channel
// is called again no sooner than each 429 named. Order, not time: the
// six seconds of 429s only make room for the other cards on a busy machine.
func TestAWaitingChannelLeavesItsWorkerToOthers(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	const refusals, retryAfter = 3, 2 * time.Second
	for range refusals {
		fake.failIn("chat.postMessage", "C0123", 429, map[string]string{"Retry-After": "2"}, `{"ok":false,"error":"ratelimited"}`)
	}
	heldJob, otherJob := sameQueue(t, h.bot, "job-held", "job-other")
	publishEvent(t, n, askedEvent(question(heldJob, "q-held")))
	others := []string{"q-o1", "q-o2", "q-o3"}
	for _, id := range others {
		q := question(otherJob, id)
		q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0999"}}
		publishEvent(t, n, askedEvent(q))
	}
	testenv.CheckFor(t, wait, tick, func() error {
		for _, id := range others {
			if _, ok := cardIn(fake, "C0999", id); !ok {
				return fmt.Errorf("no card for %s in C0999", id)
			}
		}
		return nil
	})
	if _, ok := cardIn(fake, "C0123", "q-held"); ok {
		t.Errorf("the card in C0123 was posted before the cards in C0999: they waited behind %d 429s there", refusals)
	}
	testenv.CheckFor(t, 3*wait, tick, func() error {
		if _, ok := cardIn(fake, "C0123", "q-held"); !ok {
			return fmt.Errorf("no card in C0123")
		}
		return nil
	})
	held := callsIn(fake, "chat.postMessage", "C0123")
	if len(held) < refusals+2 {
		t.Fatalf("%d posts in C0123, want %d refused, the thread's parent and the card", len(held), refusals)
	}
	for i := range refusals {
		if gap := held[i+1].At.Sub(held[i].At); gap < retryAfter {
			t.Errorf("post %d in C0123 came %v after a 429 that asked for %v", i+2, gap, retryAfter)
		}
	}
}

// TestNoCallBeforeA429sInstant checks the pacer lets no call go to a
// channel before the instant its last 429 named, a slot reserved before
// the 429 came included: for an event's job (its try comes back at the
// slot) and for a caller outside the event loop (it sleeps for its slot).
func TestNoCallBeforeA429sInstant(t *testing.T) {
	t.Parallel()
	t.Run("event", func(t *testing.T) {
		t.Parallel()
		now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
		p := newPacer(time.Second, 1)
		p.now = func() time.Time { return now }
		ctx := engine.WithReserved(context.Background(), &engine.Reserved{})
		if err := p.take(ctx, "C1", time.Minute); err != nil {
			t.Fatalf("first call: %v, want it to go at once", err)
		}
		var hold *engine.Hold
		if err := p.take(ctx, "C1", time.Minute); !errors.As(err, &hold) || !hold.Until.Equal(now.Add(time.Second)) {
			t.Fatalf("second call: %v, want it held until the next slot, 1 s on", err)
		}
		p.block("C1", 5*time.Second) // a 429 after the slot was reserved
		blocked := now.Add(5 * time.Second)
		now = hold.Until
		if err := p.take(ctx, "C1", time.Minute); !errors.As(err, &hold) || hold.Until.Before(blocked) {
			t.Fatalf("at its reserved slot: %v, want it held until the 429's instant %v", err, blocked)
		}
		now = hold.Until
		if err := p.take(ctx, "C1", time.Minute); err != nil {
			t.Fatalf("after the 429's instant: %v, want it to go", err)
		}
		if err := p.ready(ctx, "C2"); err != nil {
			t.Errorf("another channel: %v, want it free", err)
		}
	})
	t.Run("caller", func(t *testing.T) {
		t.Parallel()
		p := newPacer(100*time.Millisecond, 1)
		ctx := context.Background()
		if err := p.take(ctx, "C1", time.Minute); err != nil {
			t.Fatal(err)
		}
		done := make(chan time.Time)
		go func() {
			if err := p.take(ctx, "C1", time.Minute); err != nil {
				t.Error(err)
			}
			done <- time.Now()
		}()
		time.Sleep(20 * time.Millisecond)                 // the call sleeps for its slot, 100 ms on
		blocked := time.Now().Add(400 * time.Millisecond) // no later than the instant block sets
		p.block("C1", 400*time.Millisecond)
		if went := <-done; went.Before(blocked) {
			t.Errorf("the call went at %v, %v before the 429's instant", went.Format(time.StampMilli), blocked.Sub(went))
		}
	})
}

// TestCardUpdatesWhileWaitingAreCoalesced checks that when several events
// would update one card while its channel waits for a 429's instant, the
// card is updated once, with its last state, when the channel's turn
// comes, not once per event.
func TestCardUpdatesWhileWaitingAreCoalesced(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	q := question("job-co", "q-co")
	publishEvent(t, n, askedEvent(q))
	d := deliveredTS(t, n, deliveries, "q-co")
	if !d.OK {
		t.Fatalf("delivery %+v", d.Failure)
	}
	fake.failIn("chat.update", "C0123", 429, map[string]string{"Retry-After": "1"}, `{"ok":false,"error":"ratelimited"}`)
	settle := func(ev bridge.Event) {
		ev.Tenant, ev.JobID, ev.QuestionID, ev.TaskVersion = "acme", "job-co", "q-co", 1
		publishEvent(t, n, ev)
	}
	settle(bridge.Event{Type: bridge.EventAnswered, By: "slack:U0KEV", ByName: "kevin", AnswerText: "blue", Answer: json.RawMessage(`"blue"`)})
	settle(bridge.Event{Type: bridge.EventCancelled})
	settle(bridge.Event{Type: bridge.EventTimedOut})
	settle(bridge.Event{Type: bridge.EventDeliveryFailed, State: bridge.StateFailed})
	// The job's next event, shown in another channel: handled after them.
	next := question("job-co", "q-next")
	next.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0999"}}
	publishEvent(t, n, askedEvent(next))
	testenv.CheckFor(t, 3*wait, tick, func() error {
		if _, ok := cardIn(fake, "C0999", "q-next"); !ok {
			return fmt.Errorf("the job's next card is not posted yet")
		}
		return nil
	})
	updates := fake.Calls("chat.update")
	if len(updates) != 2 {
		t.Fatalf("%d chat.update calls, want the refused one and one with the card's last state", len(updates))
	}
	if gap := updates[1].At.Sub(updates[0].At); gap < time.Second {
		t.Errorf("the card was updated %v after a 429 that asked for 1 s", gap)
	}
	if text := updates[1].Str("text"); !strings.Contains(text, "Answered by @kevin: blue") {
		t.Errorf("the update does not show the card's state (answered; the first outcome stays): %s", text)
	}
}
