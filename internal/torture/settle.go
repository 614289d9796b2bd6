package torture

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// settle waits, with the server no longer killed, until the outbox is
// empty, every acknowledged question is stored, every short question has
// timed out or been settled, every card still to come is due, and every
// durable consumer has nothing pending. The bound only detects a hang:
// a message a killed replica held comes back within seconds (its
// consumer's AckWait, docs/design.md "Failover").
func (r *run) settle(ctx context.Context, rep *Report) error {
	bound := r.o.ShortMax + 90*time.Second
	sctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	r.logf("settling: waiting for outbox backlog 0 and every short question to end")
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	why := "not checked yet"
	for {
		done, reason, err := r.settled(sctx)
		if err == nil && done {
			r.logf("settled")
			return nil
		}
		switch {
		case err == nil:
			why = reason
		case sctx.Err() == nil:
			why = err.Error()
		}
		// Once a minute, what it waits for.
		if n := time.Since(r.start); n%time.Minute < 500*time.Millisecond {
			r.logf("settling: %s", why)
		}
		select {
		case <-sctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// Not an error of the run: the checks will name what is stuck.
			rep.violate("the service did not settle within %v after the load: %s", bound, why)
			r.unsettled = true
			return nil
		case <-tick.C:
		}
	}
}

func (r *run) settled(ctx context.Context) (bool, string, error) {
	st, err := r.stats(ctx)
	if err != nil {
		return false, "", err
	}
	if st.OutboxBacklog > 0 {
		return false, fmt.Sprintf("outbox backlog %d", st.OutboxBacklog), nil
	}
	all, err := r.list(ctx, "all")
	if err != nil {
		return false, "", err
	}
	down := r.live.down()
	r.mu.Lock()
	defer r.mu.Unlock()
	missing, waiting, cards := 0, 0, 0
	for _, q := range r.questions {
		if !q.acked {
			continue
		}
		v, ok := all[q.key()]
		switch {
		case !ok:
			missing++
		case q.short && v.State == bridge.StatePending:
			waiting++
		}
		// A card not posted yet, of a question still waiting, may come
		// until it is late; the check counts it missing after that.
		if ok && q.card == nil && v.State == bridge.StatePending && time.Now().Before(due(down, q.ackedAt, r.o.CardWithin)) {
			cards++
		}
	}
	if missing > 0 || waiting > 0 || cards > 0 {
		return false, fmt.Sprintf("%d acknowledged questions not stored, %d short questions still pending, %d cards not posted yet and not yet late",
			missing, waiting, cards), nil
	}
	// A message handed to a server that was then killed comes back only
	// after its ack wait: wait for every durable consumer to drain.
	for _, name := range bridge.StreamNames() {
		s, err := r.js.Stream(ctx, name)
		if err != nil {
			return false, "", fmt.Errorf("stream %s: %w", name, err)
		}
		for c := range s.ListConsumers(ctx).Info() {
			if c.Config.Durable == "" || c.Name == r.eventsConsumer() {
				continue // the run's own reads the events only at the check
			}
			if c.NumAckPending > 0 || c.NumPending > 0 {
				return false, fmt.Sprintf("consumer %s on %s: %d unacknowledged, %d not yet delivered (%s)",
					c.Name, name, c.NumAckPending, c.NumPending, consumerState(c)), nil
			}
		}
	}
	return true, "", nil
}

// consumerState is what a consumer that does not drain shows of where its
// messages are: redelivered ones, pulls waiting, floors and its pin.
func consumerState(c *jetstream.ConsumerInfo) string {
	st := fmt.Sprintf("%d redelivered, %d pulls waiting, delivered up to stream sequence %d, acknowledged up to %d",
		c.NumRedelivered, c.NumWaiting, c.Delivered.Stream, c.AckFloor.Stream)
	for _, g := range c.PriorityGroups {
		st += fmt.Sprintf(", group %s pinned to %q since %s", g.Group, g.PinnedClientID, clock(g.PinnedTS))
	}
	return st
}
