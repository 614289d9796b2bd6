package runtime

import (
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// TestFailoverBound computes, from the constants that set it, how long
// after a replica's death what it held is taken over, by the formula of
// docs/design.md "Failover" ("The bound"), and checks it stays under the
// 10 s a card may take across one death (docs/deploy.md); and that the
// orders the failover rests on hold.
func TestFailoverBound(t *testing.T) {
	t.Parallel()
	const cardWithin = 10 * time.Second
	relay := relayLeaseTTL + relayClaimEvery + relayClaimWithin
	bound := max(bridge.EventAckWait, consumerAckWait, bridge.EventPinnedTTL, relay)
	if bound >= cardWithin {
		t.Errorf("takeover after a death: max(EventAckWait %v, consumerAckWait %v, EventPinnedTTL %v, relay lease %v) = %v; want under %v",
			bridge.EventAckWait, consumerAckWait, bridge.EventPinnedTTL, relay, bound, cardWithin)
	}
	if bridge.EventAckWait <= bridge.EventPinnedTTL {
		t.Errorf("EventAckWait %v is not longer than EventPinnedTTL %v: a dead replica's events would come back before the pin moved, out of order",
			bridge.EventAckWait, bridge.EventPinnedTTL)
	}
	// A live holder keeps what it holds across one lost heartbeat.
	for _, c := range []struct {
		name       string
		wait, beat time.Duration
	}{
		{"events' AckWait", bridge.EventAckWait, bridge.ProgressEvery(bridge.EventAckWait)},
		{"runtime consumers' AckWait", consumerAckWait, bridge.ProgressEvery(consumerAckWait)},
		{"relay lease", relayLeaseTTL, relayRenewEvery},
	} {
		if 2*c.beat >= c.wait {
			t.Errorf("%s %v is renewed every %v: one lost renewal loses it", c.name, c.wait, c.beat)
		}
	}
}
