package jsstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// One replica's relay publishes the outbox at a time (record.RelayLeaser),
// so each row is published once however many replicas share the record.
// The lease is the key lease.relay, holding its holder's name and written
// with a key TTL: JetStream removes it, on the server's clock, when its
// holder stops renewing it, and another replica's next claim takes it.
// Two relays publishing at once during a handover publish some rows twice
// under one message id, and JetStream keeps one.

// HoldRelay claims the relay for holder, or renews holder's claim, for
// ttl. It reports whether holder holds it now: false when another holds
// it. A claim that lost its compare-and-set (another claimed at the same
// moment, or the read came from a replica of the stream behind its
// leader) is ErrConflict: the caller keeps what it had until its next
// claim reads afresh.
func (s *Store) HoldRelay(ctx context.Context, holder string, ttl time.Duration) (bool, error) {
	data, rev, ok, err := s.get(ctx, keyRelayLease)
	if err != nil {
		return false, fmt.Errorf("jsstore: relay lease: %w", err)
	}
	if ok && string(data) != holder {
		return false, nil
	}
	t := &txn{}
	t.add(write{key: keyRelayLease, rev: rev, value: []byte(holder), ttl: ttl})
	if err := s.commit(ctx, t); err != nil {
		return false, fmt.Errorf("jsstore: relay lease: %w", err)
	}
	return true, nil
}

// ReleaseRelay gives holder's claim up, so that another replica's relay
// takes over at its next claim rather than when the key expires.
func (s *Store) ReleaseRelay(ctx context.Context, holder string) error {
	data, rev, ok, err := s.get(ctx, keyRelayLease)
	if err != nil || !ok || string(data) != holder {
		return err
	}
	t := &txn{}
	t.del(keyRelayLease, rev)
	if err := s.commit(ctx, t); err != nil && !errors.Is(err, ErrConflict) {
		return fmt.Errorf("jsstore: release the relay lease: %w", err)
	}
	return nil
}

// outWatch follows out.> for new rows, whichever replica wrote them, so
// that the relay holding the lease publishes them at once.
type outWatch struct {
	mu      sync.Mutex
	running bool
	changed chan struct{}
}

// OutboxChanged is signalled when rows were written to the outbox since
// the last signal. The watch behind it starts at the first call and again
// at a call after it ended (the signal is sent then too).
func (s *Store) OutboxChanged() <-chan struct{} {
	ow := &s.outWatch
	ow.mu.Lock()
	defer ow.mu.Unlock()
	if ow.changed == nil {
		ow.changed = make(chan struct{}, 1)
	}
	if ow.running || s.bg.Err() != nil {
		return ow.changed
	}
	w, err := s.kv.WatchFiltered(s.bg, []string{"out.>"}, jetstream.MetaOnly(), jetstream.UpdatesOnly(), jetstream.IgnoreDeletes())
	if err != nil {
		s.log.Warn("jsstore: watch the outbox", "err", err)
		return ow.changed
	}
	ow.running = true
	go s.followOutbox(w)
	return ow.changed
}

// followOutbox signals each new row until the watch ends.
func (s *Store) followOutbox(w jetstream.KeyWatcher) {
	ow := &s.outWatch
	defer func() {
		_ = w.Stop()
		ow.mu.Lock()
		ow.running = false
		ow.mu.Unlock()
		ow.signal()
	}()
	for e := range w.Updates() {
		if e != nil {
			ow.signal()
		}
	}
}

func (ow *outWatch) signal() {
	select {
	case ow.changed <- struct{}{}:
	default:
	}
}
