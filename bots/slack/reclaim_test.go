package slack

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestRestartTakesItsOwnClaimBackAtOnce checks a replica restarted after
// a crash between post and record takes its own fresh claim back at once
// (adopting the card it posted), while a live claim of another replica
// still holds: the question is not posted, and the event is put off.
func TestRestartTakesItsOwnClaimBackAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name, claimBy string
		adopts        bool
	}{
		{name: "its own claim", claimBy: "replica-a", adopts: true},
		{name: "another replica's", claimBy: "replica-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := plainNATS(t)
			fake := newFakeSlack(t)
			logs := &testenv.LockedBuffer{}
			h := startBot(t, n, fake, func(o *Options) {
				o.Replica = "replica-a"
				o.Logger = slog.New(slog.NewTextHandler(logs, nil))
			})
			deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
			q := question("job-rs", "q-rs")
			ev := askedEvent(q)
			// Ten seconds ago, well within claimTTL: the claimant may be alive.
			claimed := time.Now().Add(-10 * time.Second).UTC()
			parent := tsAt(claimed.Add(-time.Hour), 1)
			cardTS := tsAt(claimed.Add(time.Second), 2)
			fake.hold(fakeMsg{Channel: "C0123", TS: parent, Text: "thread", Metadata: threadMetaJSON("job-rs")})
			fake.hold(fakeMsg{Channel: "C0123", Thread: parent, TS: cardTS, Text: "the card", Metadata: questionMetaJSON("job-rs", "q-rs", 1)})
			leave(t, h, threadKey("acme", "job-rs", "C0123"), thread{TS: parent})
			leave(t, h, cardKey(refOf(&ev)), card{Question: q, AskedAt: ev.AskedAt, Deadline: ev.Deadline,
				ClaimBy: tc.claimBy, ClaimSince: claimed})
			publishEvent(t, n, ev)
			if !tc.adopts {
				testenv.CheckFor(t, wait, tick, func() error {
					if !strings.Contains(logs.String(), "another replica is posting this question") {
						return fmt.Errorf("the event was not put off for the other replica's claim")
					}
					return nil
				})
				if got := len(fake.Calls("chat.postMessage")) + len(deliveries.All()); got != 0 {
					t.Fatalf("%d posts and deliveries while another replica holds a live claim", got)
				}
				return
			}
			d := deliveredTS(t, n, deliveries, q.QuestionID)
			if !d.OK || d.Message == nil || d.Message.MessageID != cardTS || d.Message.Thread != parent {
				t.Fatalf("delivery %+v (message %+v), want the card posted before the crash", d, d.Message)
			}
			if got := len(fake.Calls("chat.postMessage")); got != 0 {
				t.Fatalf("%d posts, want none: the card is in Slack", got)
			}
			if strings.Contains(logs.String(), "event deferred") {
				t.Fatalf("the replica put off its own claim:\n%s", logs)
			}
		})
	}
}
