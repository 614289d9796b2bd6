package runtime

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nuid"

	"github.com/askbridge/askbridge/store/record"
)

// Replicas sharing a record take turns at the relay (record.RelayLeaser):
// the one holding the lease publishes, the others stand by and claim it
// once its holder stops renewing it. A clean stop gives the lease up.
const (
	// relayLeaseTTL is how long a claim lasts unrenewed: after a replica
	// dies, the outbox waits this long, and a claim's second at most,
	// before another publishes: about as long as the messages the dead
	// replica held wait for the runtime's consumers' AckWait.
	relayLeaseTTL = 3 * time.Second
	// relayRenewEvery is how often the holder renews its claim.
	relayRenewEvery = time.Second
	// relayClaimEvery is how often a standby tries to claim: a read, and
	// a write only when the lease is free.
	relayClaimEvery = 250 * time.Millisecond
	// relayClaimWithin bounds one claim, which waits while the record's
	// stream elects a leader.
	relayClaimWithin = time.Second
)

// relayTurn is one replica's claim on the relay of a shared record. Its
// state is the relay goroutine's alone.
type relayTurn struct {
	lease  record.RelayLeaser
	holder string
	log    *slog.Logger
	held   bool
	// nextClaim is when to claim or renew again.
	nextClaim time.Time
}

// newRelayTurn is st's turn at the relay, or nil when st is one
// runtime's alone (the relay is always its own).
func newRelayTurn(st record.Backend, log *slog.Logger) *relayTurn {
	l, ok := st.(record.RelayLeaser)
	if !ok || !shared(st) {
		return nil
	}
	return &relayTurn{lease: l, holder: "relay-" + nuid.Next(), log: log}
}

// mine reports whether this replica publishes the outbox now, claiming or
// renewing the lease when that is due.
func (rt *relayTurn) mine(ctx context.Context, now time.Time) bool {
	if rt == nil {
		return true
	}
	if now.Before(rt.nextClaim) {
		return rt.held
	}
	cctx, cancel := context.WithTimeout(ctx, relayClaimWithin)
	held, err := rt.lease.HoldRelay(cctx, rt.holder, relayLeaseTTL)
	cancel()
	switch {
	case err != nil:
		// The record cannot be reached: a holder goes on (it reads the
		// outbox from the same record, and were another to claim the
		// lease meanwhile, JetStream keeps one of each row both
		// publish), a standby stays one.
		if ctx.Err() == nil {
			rt.log.Debug("outbox relay: claim the relay", "err", err)
		}
		held = rt.held
	case held != rt.held:
		rt.log.Debug("outbox relay: turn changed", "publishing", held)
	}
	rt.held = held
	rt.nextClaim = now.Add(relayClaimEvery)
	if held {
		rt.nextClaim = now.Add(relayRenewEvery)
	}
	return held
}

// claimAt is when the lease is to be claimed or renewed again; false on a
// record of one runtime.
func (rt *relayTurn) claimAt() (time.Time, bool) {
	if rt == nil {
		return time.Time{}, false
	}
	return rt.nextClaim, true
}

// changed is signalled when rows were written by any replica; nil (never
// signalled) for a record of one runtime, which wakes its relay itself.
func (rt *relayTurn) changed() <-chan struct{} {
	if rt == nil || !rt.held {
		return nil
	}
	return rt.lease.OutboxChanged()
}

// release gives the lease up at a clean stop, so that another replica
// publishes at its next claim.
func (rt *relayTurn) release() {
	if rt == nil || !rt.held {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rt.lease.ReleaseRelay(ctx, rt.holder); err != nil {
		rt.log.Warn("outbox relay: give the relay up", "err", err)
	}
	rt.held = false
}
