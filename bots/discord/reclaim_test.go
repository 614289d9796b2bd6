package discord

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/testenv"
)

// TestRestartAdoptsTheCardACrashedTryMade checks a bot restarted after
// a try whose post Discord made and whose answer was lost adopts the card
// at once when the event comes again: the event's later try looks for
// the card before posting (Discord has forgotten the nonce by then), and
// nothing holds the question for a claim.
func TestRestartAdoptsTheCardACrashedTryMade(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{
		// The event comes again two seconds after the lost post, when the
		// first bot has stopped: to the restarted one.
		tweak: func(b *Bot) { b.backoff = func(uint64) time.Duration { return 2 * time.Second } },
	})
	q := colorQuestion()
	h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/" + channelA + "/messages", Lost: true, Times: 1})
	h.publishEvent(asked(q))
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if !strings.Contains(h.logs.String(), "event failed; will retry") {
			return fmt.Errorf("the post's lost answer was not handled yet")
		}
		return nil
	})
	h.stopBot()
	if cards := h.fake.cardsOf(channelA, q); len(cards) != 1 {
		t.Fatalf("%d cards before the restart, want the one whose answer was lost", len(cards))
	}
	h.fake.forgetNonces() // the restart comes after Discord's nonce memory
	h.secondBot(t)
	d := h.waitDelivery()
	cards := h.fake.cardsOf(channelA, q)
	if !d.OK || d.Message == nil || len(cards) != 1 || d.Message.MessageID != cards[0] {
		t.Fatalf("delivery %+v (message %+v), cards %v: want the card made before the crash", d, d.Message, cards)
	}
	if strings.Contains(h.logs.String(), "event deferred") {
		t.Fatalf("the restarted bot put the question off:\n%s", h.logs)
	}
}
