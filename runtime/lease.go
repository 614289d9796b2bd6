package runtime

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// RuntimeBucket holds the lease of the runtime working on this NATS (key
// "lease": its database and host). The bucket keeps a record leaseTTL, so a
// runtime that stops renewing it (stopped, crashed, cut off) lets it go.
const RuntimeBucket = "ASK_RUNTIME"

// ErrOtherRuntime is a runtime that found another, with its own database,
// working on the same NATS, and kept renewing its lease.
var ErrOtherRuntime = errors.New("runtime: another askbridge runtime works on this NATS")

// Lease timing: renewed every leaseRenew (or Options.LeaseRenew), gone
// leaseTTL after the last renewal; a starting runtime waits at most
// leaseWait (or Options.LeaseWait) for another's.
var (
	leaseTTL   = 15 * time.Second
	leaseRenew = 5 * time.Second
	leaseWait  = 45 * time.Second
)

// lease is the record in RuntimeBucket.
type lease struct {
	Database string    `json:"database"`
	Host     string    `json:"host,omitempty"`
	At       time.Time `json:"at"`
}

// holdLease renews the lease taken until ctx ends; lost hears of a lease
// another runtime took meanwhile, and drop lets the lease go.
func (r *Runtime) holdLease(ctx context.Context, kv *bridge.KV, rev uint64) (lost <-chan error, drop func()) {
	leaseCtx, cancel := context.WithCancel(ctx)
	leaseLost := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.keepLease(leaseCtx, kv, rev, func(err error) { leaseLost <- err })
	}()
	return leaseLost, func() { cancel(); <-done }
}

// takeLease makes this runtime the one working on this NATS's askbridge
// streams. Two runtimes with their own databases at once would split the
// questions and answers between them (one refusing answers to the other's
// questions, both reminding). A runtime of the same database takes over at
// once (its own restart); one of another database waits for the other's
// lease to lapse, so a runtime that stopped or crashed is followed, and
// gives up with ErrOtherRuntime when it keeps being renewed.
func (r *Runtime) takeLease(ctx context.Context) (*bridge.KV, uint64, error) {
	kv, err := bridge.EnsureKV(ctx, r.js, leaseBucket)
	if err != nil {
		return nil, 0, fmt.Errorf("runtime: %w", err)
	}
	wait := r.o.LeaseWait
	if wait <= 0 {
		wait = leaseWait
	}
	giveUp := time.Now().Add(wait)
	for {
		rev, err := r.claimLease(ctx, kv)
		switch {
		case err == nil:
			return kv, rev, nil
		case bridge.IsConflict(err):
			continue // taken or renewed meanwhile: look again
		case !errors.Is(err, ErrOtherRuntime):
			return nil, 0, fmt.Errorf("runtime: take the lease: %w", err)
		case time.Now().After(giveUp):
			return nil, 0, fmt.Errorf("%w: askbridge runs one runtime per NATS; stop that one, or run this replica on its data dir", err)
		}
		r.log.Warn("another askbridge runtime works on this NATS; waiting for its lease to lapse", "err", err)
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// leaseBucket holds the runtime's lease.
var leaseBucket = jetstream.KeyValueConfig{
	Bucket: RuntimeBucket, Description: "askbridge: the lease of the runtime working on this NATS", History: 1,
	TTL: leaseTTL, Storage: jetstream.FileStorage,
}

// claimLease writes this runtime's lease, unless another database's
// runtime holds it (ErrOtherRuntime); a lost race is a key conflict.
func (r *Runtime) claimLease(ctx context.Context, kv *bridge.KV) (uint64, error) {
	var rev uint64
	e, err := kv.Get(ctx, "lease")
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return 0, err
	default:
		var held lease
		_ = json.Unmarshal(e.Value(), &held)
		if held.Database != r.instance {
			return 0, fmt.Errorf("%w (database %s on %s)", ErrOtherRuntime, held.Database, cmp.Or(held.Host, "an unknown host"))
		}
		rev = e.Revision()
	}
	return kv.Write(ctx, "lease", rev, r.leaseRecord(), 0)
}

// leaseRecord is this runtime's lease as of now.
func (r *Runtime) leaseRecord() []byte {
	host, _ := os.Hostname()
	data, _ := json.Marshal(lease{Database: r.instance, Host: host, At: time.Now().UTC()})
	return data
}

// keepLease renews the lease until ctx ends, then lets it go, so the next
// runtime need not wait for it to lapse. A lease taken by another runtime
// meanwhile (this one was cut off longer than leaseTTL) stops this one.
func (r *Runtime) keepLease(ctx context.Context, kv *bridge.KV, rev uint64, lost func(error)) {
	every := r.o.LeaseRenew
	if every <= 0 {
		every = leaseRenew
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			r.releaseLease(kv, rev)
			return
		case <-tick.C:
		}
		next, err := kv.Write(ctx, "lease", rev, r.leaseRecord(), 0)
		if bridge.Gone(err) && r.nc.Status() == nats.CONNECTED {
			// The bucket is gone (the NATS server lost its store): made
			// again, the lease is claimed anew.
			if _, err = bridge.EnsureKV(ctx, r.js, leaseBucket); err == nil {
				r.log.Warn("runtime: the lease bucket " + RuntimeBucket + " was gone (deleted, or the NATS server lost its store); made it again")
				err = jetstream.ErrKeyNotFound
			}
		}
		if bridge.IsConflict(err) || errors.Is(err, jetstream.ErrKeyNotFound) {
			// Lapsed (this process stalled past leaseTTL) or taken: take it
			// again, unless another database's runtime holds it now.
			next, err = r.claimLease(ctx, kv)
		}
		switch {
		case err == nil:
			rev = next
		case errors.Is(err, ErrOtherRuntime):
			if ctx.Err() == nil {
				lost(fmt.Errorf("%w: it took the lease while this runtime could not renew it", err))
			}
			return
		case ctx.Err() == nil:
			r.log.Warn("runtime: renew the lease", "err", err)
		}
	}
}

// releaseLease deletes this runtime's lease, last written at rev. A
// renewal cut short by the stop may have been stored all the same, at a
// revision this runtime never heard of: the lease is then read back and
// deleted at its revision when it is still this database's.
func (r *Runtime) releaseLease(kv *bridge.KV, rev uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), bridge.AckWithin)
	defer cancel()
	err := kv.Delete(ctx, "lease", jetstream.LastRevision(rev))
	if !bridge.IsConflict(err) {
		return
	}
	var held lease
	stored, _, found, err := bridge.GetJSON(ctx, kv, "lease", &held)
	if err == nil && found && held.Database == r.instance {
		_ = kv.Delete(ctx, "lease", jetstream.LastRevision(stored))
	}
}
