package runtime

import (
	"context"
	"time"
)

// pruneStore is the bookkeeping prune deletes when it is old.
type pruneStore interface {
	PruneSent(ctx context.Context, before time.Time) (int64, error)
	PruneAttempts(ctx context.Context, before time.Time) (int64, error)
	PruneGateLog(ctx context.Context, before time.Time) (int64, error)
}

// Retention of bookkeeping rows: sent outbox rows a day (the relay needs
// only those not yet sent; JetStream, not the store, holds what was
// published), attempt ids a day longer than the answers stream keeps
// attempts (after that no attempt can be redelivered).
const (
	keepSentOutbox = 24 * time.Hour
	keepAttemptIDs = 31 * 24 * time.Hour
	// keepGateLog is how long the gate's decisions stay in the job log
	// (and the trace): the gate writes one per request, so kept forever
	// they would outgrow everything else in the store. The trail's other
	// entries are kept like the questions (docs/contract.md).
	keepGateLog = 30 * 24 * time.Hour
)

// prune deletes old bookkeeping rows at start and then hourly.
func (r *Runtime) prune(ctx context.Context) {
	tick := time.NewTicker(time.Hour)
	defer tick.Stop()
	for {
		now := time.Now()
		if n, err := r.bookkeeping.PruneSent(ctx, now.Add(-keepSentOutbox)); err != nil && ctx.Err() == nil {
			r.log.Warn("prune outbox", "err", err)
		} else if n > 0 {
			r.log.Debug("pruned sent outbox rows", "rows", n)
		}
		if _, err := r.bookkeeping.PruneAttempts(ctx, now.Add(-keepAttemptIDs)); err != nil && ctx.Err() == nil {
			r.log.Warn("prune attempt ids", "err", err)
		}
		if n, err := r.bookkeeping.PruneGateLog(ctx, now.Add(-keepGateLog)); err != nil && ctx.Err() == nil {
			r.log.Warn("prune gate decisions", "err", err)
		} else if n > 0 {
			r.log.Debug("pruned gate decisions", "rows", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
