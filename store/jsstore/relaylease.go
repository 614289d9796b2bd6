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
// the last signal. The watch behind it starts at the first call and runs
// until the store closes, made again a second after it ends or cannot be
// made; each time it is made a signal covers the rows written before. The
// call never waits for it.
func (s *Store) OutboxChanged() <-chan struct{} {
	ow := &s.outWatch
	ow.mu.Lock()
	defer ow.mu.Unlock()
	if ow.changed == nil {
		ow.changed = make(chan struct{}, 1)
	}
	if !ow.running && s.bg.Err() == nil {
		ow.running = true
		go s.followOutbox()
	}
	return ow.changed
}

// followOutbox watches out.> and signals each new row until the store
// closes.
func (s *Store) followOutbox() {
	ow := &s.outWatch
	for {
		w, err := s.kv.WatchFiltered(s.bg, []string{"out.>"}, jetstream.MetaOnly(), jetstream.UpdatesOnly(), jetstream.IgnoreDeletes())
		if err != nil {
			s.log.Debug("jsstore: watch the outbox", "err", err)
		} else {
			// Rows written before the watch began are the relay's next
			// read's: one signal covers them.
			ow.signal()
			s.signalRows(w)
		}
		select {
		case <-s.bg.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// signalRows signals each row w sees until it ends or the store closes.
func (s *Store) signalRows(w jetstream.KeyWatcher) {
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-s.bg.Done():
			return
		case e, open := <-w.Updates():
			if !open {
				return
			}
			if e != nil {
				s.outWatch.signal()
			}
		}
	}
}

func (ow *outWatch) signal() {
	select {
	case ow.changed <- struct{}{}:
	default:
	}
}
