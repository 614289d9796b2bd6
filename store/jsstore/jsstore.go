// Package jsstore keeps askbridge's durable record in JetStream, so that
// any number of replicas can share it through a NATS cluster
// (ASK_STORE=jetstream). It implements the same operations as the SQLite
// store, with the same outcomes; store/storetest holds the suite both pass.
//
// The record is one key-value bucket, ASK_RECORD. Every transition is a
// compare-and-set on the revisions of the keys it reads and writes, made as
// one atomic batch publish, so two replicas deciding one question at once
// yield exactly one outcome. The key layout and why it is so are in
// docs/design.md, "The JetStream store".
package jsstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/askbridge/askbridge/bridge"
)

// Bucket is the key-value bucket holding the record.
const Bucket = "ASK_RECORD"

// streamName is the bucket's stream.
const streamName = "KV_" + Bucket

// subjectPrefix is what a key is prefixed with to make its subject.
const subjectPrefix = "$KV." + Bucket + "."

// Options configure a Store.
type Options struct {
	// Replicas is the bucket's replica count (ASK_NATS_REPLICAS; 3 in a
	// cluster). 0 makes a new bucket with as many as the events stream has
	// (else one) and leaves an existing bucket's count as it is, as
	// askbridge does with its streams.
	Replicas int
	// Memory keeps the bucket in memory: for tests only.
	Memory bool
	Logger *slog.Logger
}

// Store is the record in JetStream. It is safe for concurrent use by any
// number of goroutines and processes.
type Store struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	kv       jetstream.KeyValue
	stream   jetstream.Stream
	log      *slog.Logger
	instance string
	// stop ends the store's watchers (Close).
	stop context.CancelFunc
	// bg is the context of the store's watchers.
	bg context.Context
	// due is the replica's view of the due steps (duewatch.go).
	due dueWatch
	// index is the replica's view of the state index (stateview.go).
	index stateView
	// refusals is the replica's view of the gate's refusals
	// (refusalview.go).
	refusals refusalView
	// outWatch wakes the relay for rows other replicas wrote (relaylease.go).
	outWatch outWatch
	// reask is the last walk of Reask, for its next page (reask.go).
	reask reaskMemo
	// replicated is a bucket with more than one replica, whose readings
	// the gate fences (fence.go).
	replicated bool
}

// Open makes the bucket if it is missing and returns the store on it.
func Open(ctx context.Context, nc *nats.Conn, o Options) (*Store, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jsstore: %w", err)
	}
	storage := jetstream.FileStorage
	if o.Memory {
		storage = jetstream.MemoryStorage
	}
	// A replica finding the bucket made binds to it: updating it from a
	// key-value config would try to turn its key TTLs off, which the
	// server refuses.
	kv, err := js.KeyValue(ctx, Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		var replicas int
		if replicas, err = bucketReplicas(ctx, js, o.Replicas); err != nil {
			return nil, err
		}
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      Bucket,
			Description: "askbridge's record: questions, jobs, proposals, the job log and the outbox",
			History:     1,
			Storage:     storage,
			Replicas:    replicas,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, Bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("jsstore: bucket %s: %w", Bucket, err)
	}
	stream, err := js.Stream(ctx, streamName)
	if err != nil {
		return nil, fmt.Errorf("jsstore: bucket %s: %w", Bucket, err)
	}
	if sc := stream.CachedInfo().Config; !sc.AllowAtomicPublish || !sc.AllowMsgTTL || o.Replicas > 0 && sc.Replicas != o.Replicas {
		// A transition writes several keys at once (an atomic batch), and
		// delete markers and attempt keys expire on their own (key TTLs).
		// ASK_NATS_REPLICAS, when set, is every stream's count, the
		// record's too.
		sc.AllowAtomicPublish, sc.AllowMsgTTL = true, true
		if o.Replicas > 0 {
			sc.Replicas = o.Replicas
		}
		if _, err := js.UpdateStream(ctx, sc); err != nil {
			return nil, fmt.Errorf("jsstore: bucket %s: allow atomic publish and key TTLs "+
				"(JetStream 2.12 or later is needed), %d replicas: %w", Bucket, sc.Replicas, err)
		}
		if stream, err = js.Stream(ctx, streamName); err != nil {
			return nil, fmt.Errorf("jsstore: bucket %s: %w", Bucket, err)
		}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bg, stop := context.WithCancel(context.Background())
	s := &Store{nc: nc, js: js, kv: kv, stream: stream, log: log, bg: bg, stop: stop,
		replicated: stream.CachedInfo().Config.Replicas > 1}
	s.due.init(log.Warn)
	s.index.init(log.Warn)
	s.refusals.init(log.Warn)
	if s.instance, err = s.ensureInstance(ctx); err != nil {
		stop()
		return nil, err
	}
	if err := s.dropDayMarks(ctx); err != nil {
		log.Warn("the next start tries again", "err", err)
	}
	return s, nil
}

// bucketReplicas is the replica count to make the bucket with: the one
// asked for, else that of askbridge's events stream (as bridge.EnsureKV
// gives the adapters' buckets), else 1.
func bucketReplicas(ctx context.Context, js jetstream.JetStream, asked int) (int, error) {
	if asked > 0 {
		return asked, nil
	}
	st, err := js.Stream(ctx, bridge.StreamEvents)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return 1, nil
	case err != nil:
		return 0, fmt.Errorf("jsstore: bucket %s: replicas as %s's: %w", Bucket, bridge.StreamEvents, err)
	}
	return max(st.CachedInfo().Config.Replicas, 1), nil
}

// ensureInstance reads the record's name, made once by whichever replica
// comes first.
func (s *Store) ensureInstance(ctx context.Context) (string, error) {
	for {
		e, err := s.kv.Get(ctx, keyMetaInstance)
		if err == nil {
			return string(e.Value()), nil
		}
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return "", fmt.Errorf("jsstore: read the record's instance: %w", err)
		}
		name := "js-" + nuid.Next()
		if _, err := s.kv.Create(ctx, keyMetaInstance, []byte(name)); err == nil {
			return name, nil
		} else if !errors.Is(err, jetstream.ErrKeyExists) {
			return "", fmt.Errorf("jsstore: name the record: %w", err)
		}
	}
}

// Instance names the record. Replicas sharing it share the name.
func (s *Store) Instance() string { return s.instance }

// Shared reports that any number of runtimes may share the record: the
// runtime takes no lease on it (record.Shareable).
func (s *Store) Shared() bool { return true }

// Close stops the store's watchers. The connection is the caller's.
func (s *Store) Close() error {
	s.stop()
	return nil
}

// Ping checks that the bucket answers.
func (s *Store) Ping(ctx context.Context) error {
	if _, err := s.stream.Info(ctx); err != nil {
		return fmt.Errorf("jsstore: bucket %s: %w", Bucket, err)
	}
	return nil
}

// now is the wall clock for bookkeeping times the caller does not give.
var now = time.Now
