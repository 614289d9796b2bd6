package bridge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// KV is an adapter's key-value bucket whose keys may each have their own
// time to live. A record an adapter still needs lives as long as the
// bucket keeps anything; a settled one is given a short life, because
// JetStream keeps an in-memory index entry for every key it holds.
//
// Every read and write waits AckWithin at most: one sent to a node as it
// died is never answered, and without a bound would wait out its
// caller's whole deadline (an adapter's handler has 90 s).
type KV struct {
	kv     jetstream.KeyValue
	js     jetstream.JetStream
	prefix string // "$KV.<bucket>."
	keyTTL bool
}

// EnsureKV creates or updates the bucket of cfg and lets its keys carry
// their own TTL where the server can (nats-server 2.11 and later; on an
// older server keys live the bucket's TTL). It does not use subject delete
// markers: an expired record simply goes. A cfg without Replicas is
// replicated like askbridge's events stream (ASK_NATS_REPLICAS).
func EnsureKV(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (*KV, error) {
	return ensureKV(ctx, js, cfg, false)
}

// ThreadsBucket holds the chat adapters' hints of a new job's thread (its
// id, by platform, job and channel) until the runtime knows the thread
// from the card's delivery report: each key lasts a few minutes.
const ThreadsBucket = "ASK_THREADS"

// EnsureThreads makes the threads bucket (ThreadsBucket), a hints bucket
// (EnsureHints): a hint saves a second thread when it is there. A run
// killed, or a power cut, before the server writes it down opens a second
// thread for the job; nothing else is lost (docs/contract.md, "Streams").
func (n *NATS) EnsureThreads(ctx context.Context) (*KV, error) {
	return n.EnsureHints(ctx, jetstream.KeyValueConfig{
		Bucket:      ThreadsBucket,
		Description: "askbridge chat adapters: a new job's thread until the runtime knows it",
		History:     1,
		TTL:         time.Hour,
		Storage:     jetstream.FileStorage,
	})
}

// EnsureHints makes a bucket of hints: short-lived keys whose loss in a
// crash costs a second try and nothing else, so writing one must not cost
// an fsync. On the embedded server in sync always (AsyncPersist) a new one
// is written in async persist mode, as the events stream is; elsewhere it
// is an ordinary bucket (EnsureKV).
func (n *NATS) EnsureHints(ctx context.Context, cfg jetstream.KeyValueConfig) (*KV, error) {
	return ensureKV(ctx, n.JS, cfg, n.streams.AsyncPersist)
}

func ensureKV(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, async bool) (*KV, error) {
	name := "KV_" + cfg.Bucket
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
		if ev, err := js.Stream(ctx, StreamEvents); err == nil {
			cfg.Replicas = max(ev.CachedInfo().Config.Replicas, 1)
		}
	}
	st, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) && cfg.Mirror == nil && len(cfg.Sources) == 0 {
		// Made in one request, key TTLs allowed from the start. Made in
		// two (the bucket, then key TTLs allowed), a write with a key TTL
		// in between was refused ("per-message TTL is disabled"): a click
		// right after a heal made the bucket again got HTTP 503.
		_, cerr := js.CreateStream(ctx, kvStreamConfig(cfg, async))
		if cerr != nil && !errors.Is(cerr, jetstream.ErrStreamNameAlreadyInUse) {
			return nil, fmt.Errorf("nats: key-value bucket %s: %w", cfg.Bucket, cerr)
		}
		st, err = js.Stream(ctx, name) // ours, or another's made meanwhile
	}
	if err == nil && st.CachedInfo().Config.Storage != jetstream.FileStorage && cfg.Storage == jetstream.FileStorage {
		// JetStream would refuse the update with "can not change storage
		// type", naming neither the bucket's problem nor the way out.
		return nil, fmt.Errorf("nats: key-value bucket %s exists with %s storage, and askbridge keeps its records on disk "+
			"(JetStream cannot change a bucket's storage): delete the bucket while askbridge is stopped to have it made anew",
			cfg.Bucket, st.CachedInfo().Config.Storage)
	}
	switch {
	case err == nil && st.CachedInfo().Config.AllowMsgTTL:
		// CreateOrUpdateKeyValue would try to switch key TTLs off again,
		// which JetStream refuses: apply the bucket's settings by hand.
		sc := st.CachedInfo().Config
		sc.Description, sc.MaxAge, sc.Replicas = cfg.Description, cfg.TTL, max(cfg.Replicas, 1)
		sc.MaxMsgsPerSubject = int64(max(cfg.History, 1))
		if _, err := js.UpdateStream(ctx, sc); err != nil {
			return nil, fmt.Errorf("nats: key-value bucket %s: %w", cfg.Bucket, err)
		}
	case err == nil || errors.Is(err, jetstream.ErrStreamNotFound):
		if _, err := js.CreateOrUpdateKeyValue(ctx, cfg); err != nil {
			return nil, fmt.Errorf("nats: key-value bucket %s: %w", cfg.Bucket, err)
		}
		if st, err = js.Stream(ctx, name); err != nil {
			return nil, fmt.Errorf("nats: key-value bucket %s: %w", cfg.Bucket, err)
		}
		sc := st.CachedInfo().Config
		sc.AllowMsgTTL = true
		// A server that predates key TTLs ignores the setting; the
		// stream's configuration then says it is off.
		if _, err := js.UpdateStream(ctx, sc); err != nil {
			return nil, fmt.Errorf("nats: key-value bucket %s: allow key TTLs: %w", cfg.Bucket, err)
		}
	default:
		return nil, fmt.Errorf("nats: key-value bucket %s: %w", cfg.Bucket, err)
	}
	if st, err = js.Stream(ctx, name); err != nil {
		return nil, fmt.Errorf("nats: key-value bucket %s: %w", cfg.Bucket, err)
	}
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("nats: key-value bucket %s: %w", cfg.Bucket, err)
	}
	return &KV{kv: kv, js: js, prefix: "$KV." + cfg.Bucket + ".", keyTTL: st.CachedInfo().Config.AllowMsgTTL}, nil
}

// kvStreamConfig is the stream JetStream's CreateKeyValue makes for cfg
// (nats.go's prepareKeyValueConfig, for the settings askbridge's buckets
// use), with key TTLs allowed and no subject delete markers. A server
// that predates key TTLs ignores AllowMsgTTL; EnsureKV reads it back.
func kvStreamConfig(cfg jetstream.KeyValueConfig, async bool) jetstream.StreamConfig {
	duplicates := 2 * time.Minute
	if cfg.TTL > 0 && cfg.TTL < duplicates {
		duplicates = cfg.TTL
	}
	maxBytes, maxMsgSize := cfg.MaxBytes, int32(cfg.MaxValueSize)
	if maxBytes == 0 {
		maxBytes = -1
	}
	if maxMsgSize == 0 {
		maxMsgSize = -1
	}
	sc := jetstream.StreamConfig{
		Name: "KV_" + cfg.Bucket, Description: cfg.Description, Subjects: []string{"$KV." + cfg.Bucket + ".>"},
		MaxMsgsPerSubject: int64(max(cfg.History, 1)), MaxBytes: maxBytes, MaxAge: cfg.TTL, MaxMsgSize: maxMsgSize,
		Storage: cfg.Storage, Replicas: max(cfg.Replicas, 1), Placement: cfg.Placement,
		AllowRollup: true, DenyDelete: true, Duplicates: duplicates, MaxMsgs: -1, MaxConsumers: -1,
		AllowDirect: true, RePublish: cfg.RePublish, Discard: jetstream.DiscardNew, AllowMsgTTL: true, Metadata: cfg.Metadata,
	}
	if cfg.Compression {
		sc.Compression = jetstream.S2Compression
	}
	if async && sc.Replicas == 1 {
		sc.PersistMode = jetstream.AsyncPersistMode
	}
	return sc
}

// KeyTTLs says keys may carry their own TTL.
func (kv *KV) KeyTTLs() bool { return kv.keyTTL }

// Write stores value at key if the key is still at revision rev (0: absent),
// like Create and Update. With ttl > 0 the key goes ttl after this write,
// where the bucket allows key TTLs. A lost race is jetstream.ErrKeyExists
// or jetstream.ErrKeyRevisionMismatch, as from Create and Update. It waits
// for the acknowledgement AckWithin at most.
func (kv *KV) Write(ctx context.Context, key string, rev uint64, value []byte, ttl time.Duration) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, AckWithin)
	defer cancel()
	if ttl <= 0 || !kv.keyTTL {
		if rev == 0 {
			return kv.kv.Create(ctx, key, value)
		}
		return kv.kv.Update(ctx, key, value, rev)
	}
	if rev == 0 {
		// Create also takes over a key whose last entry is a delete marker.
		return kv.kv.Create(ctx, key, value, jetstream.KeyTTL(ttl))
	}
	ack, err := kv.js.PublishMsg(ctx, &nats.Msg{Subject: kv.prefix + key, Data: value},
		jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(ttl))
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return 0, fmt.Errorf("%w: %w", err, jetstream.ErrKeyRevisionMismatch)
	}
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// Bucket is the bucket's name.
func (kv *KV) Bucket() string { return kv.kv.Bucket() }

// Get reads key's latest entry, waiting AckWithin at most.
func (kv *KV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, AckWithin)
	defer cancel()
	return kv.kv.Get(ctx, key)
}

// Delete deletes key, waiting AckWithin at most.
func (kv *KV) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	ctx, cancel := context.WithTimeout(ctx, AckWithin)
	defer cancel()
	return kv.kv.Delete(ctx, key, opts...)
}

// Hint stores value at key without waiting for JetStream's
// acknowledgement, for a record that saves work when it is there and
// costs nothing when it is not: the writer goes on at once, and with
// sync always the fsync is the server's alone. With ttl > 0 the key goes
// ttl later, where the bucket allows key TTLs. An error says the write
// could not even be sent.
func (kv *KV) Hint(key string, value []byte, ttl time.Duration) error {
	var opts []jetstream.PublishOpt
	if ttl > 0 && kv.keyTTL {
		opts = append(opts, jetstream.WithMsgTTL(ttl))
	}
	_, err := kv.js.PublishMsgAsync(&nats.Msg{Subject: kv.prefix + key, Data: value}, opts...)
	return err
}

// Put stores value at key whatever it holds, waiting AckWithin at most.
func (kv *KV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, AckWithin)
	defer cancel()
	return kv.kv.Put(ctx, key, value)
}

// Watch follows the keys matching keys until ctx ends or the watcher is
// stopped: it lives as long as its caller wants, so it has no bound.
func (kv *KV) Watch(ctx context.Context, keys string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return kv.kv.Watch(ctx, keys, opts...)
}
