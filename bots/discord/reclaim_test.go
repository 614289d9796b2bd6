package discord

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/testenv"
)

// TestRestartTakesItsOwnClaimBackAtOnce checks a replica restarted after
// a crash between post and record (the post's answer lost, its claim
// left) takes its own claim back at once and adopts the card it made,
// while a live claim of another replica still holds.
func TestRestartTakesItsOwnClaimBackAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, restartAs string
		adopts          bool
	}{
		{name: "the same replica", restartAs: "replica-a", adopts: true},
		{name: "another replica", restartAs: "replica-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := start(t, harnessOptions{
				mutate: func(o *Options) { o.Replica = "replica-a" },
				// The crashed bot never retries: the restarted one must.
				tweak: func(b *Bot) { b.backoff = func(uint64) time.Duration { return time.Hour } },
			})
			q := colorQuestion()
			h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/" + channelA + "/messages", Lost: true, Times: 1})
			h.publishEvent(asked(q))
			testenv.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
				if !strings.Contains(h.logs.String(), "event failed; will retry") {
					return fmt.Errorf("the post's lost answer was not handled yet")
				}
				return nil
			})
			if cards := h.fake.cardsOf(channelA, q); len(cards) != 1 {
				t.Fatalf("%d cards before the restart, want the one whose answer was lost", len(cards))
			}
			h.stopBot()
			h.fake.forgetNonces() // the restart comes after Discord's nonce memory
			again := asked(q)
			again.EventID = "ob-asked-again" // the runtime relays it again
			h.publishEvent(again)
			h.secondBot(t, func(o *Options) { o.Replica = tc.restartAs })
			if !tc.adopts {
				testenv.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
					if !strings.Contains(h.logs.String(), "another replica is posting this question") {
						return fmt.Errorf("the event was not put off for the other replica's claim")
					}
					return nil
				})
				if ds := h.deliveriesNow(); len(ds) != 0 {
					t.Fatalf("deliveries %+v while another replica holds a live claim", ds)
				}
			} else {
				d := h.waitDelivery()
				cards := h.fake.cardsOf(channelA, q)
				if !d.OK || d.Message == nil || len(cards) != 1 || d.Message.MessageID != cards[0] {
					t.Fatalf("delivery %+v (message %+v), cards %v: want the card made before the crash", d, d.Message, cards)
				}
				if strings.Contains(h.logs.String(), "another replica is posting") {
					t.Fatalf("the replica put off its own claim:\n%s", h.logs)
				}
			}
			if cards := h.fake.cardsOf(channelA, q); len(cards) != 1 {
				t.Fatalf("%d cards, want 1", len(cards))
			}
		})
	}
}
