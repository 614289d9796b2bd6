package slack

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestReplicaKilledWhilePostingACardHandsItOver kills a replica (its NATS
// connection gone: no stop, nothing handed back, the pin kept) while it
// holds a question's asked event, its card's post unanswered by Slack. The
// other replica posts the card: one card in Slack, reported delivered.
// The deadline only detects a hang: the takeover takes the consumer's
// AckWait (docs/design.md, "Failover").
func TestReplicaKilledWhilePostingACardHandsItOver(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	own := func(name string) *bridge.NATS {
		c, err := bridge.ConnectNATS(context.Background(), bridge.NATSOptions{URL: n.Server.ClientURL(), Name: name, ConnOptions: []nats.Option{n.Admin()}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	fake := newFakeSlack(t)
	dying := own("a")
	startBot(t, dying, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	first := question("job-kill", "q-first")
	publishEvent(t, n, askedEvent(first))
	deliveredTS(t, n, deliveries, "q-first") // the job's thread is open
	fake.hangNext("chat.postMessage")
	q := question("job-kill", "q-kill")
	publishEvent(t, n, askedEvent(q))
	testenv.CheckFor(t, wait, tick, func() error {
		if got := len(fake.Calls("chat.postMessage")); got != 3 {
			return fmt.Errorf("%d posts, want the thread's, the first card's and the one cut short", got)
		}
		return nil
	})
	startBot(t, own("b"), fake)
	dying.Conn.Close()

	var d bridge.Delivery
	testenv.CheckFor(t, time.Minute, tick, func() error {
		for _, x := range deliveries.All() {
			if x.QuestionID == "q-kill" && x.OK {
				d = x
				return nil
			}
		}
		return fmt.Errorf("no delivery report for the card the dead replica held")
	})
	if got := fake.marked(questionMetaJSON("job-kill", "q-kill", 1)); len(got) != 1 || got[0].TS != d.Message.MessageID {
		t.Fatalf("%d cards of the question in Slack (%+v), want the one reported (%s)", len(got), got, d.Message.MessageID)
	}
	if got := fake.marked(threadMetaJSON("job-kill")); len(got) != 1 {
		t.Fatalf("%d thread parents of the job in Slack, want 1", len(got))
	}
}
