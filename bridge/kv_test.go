package bridge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/internal/testenv/poll"
)

func kvConfig(ttl time.Duration) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: "TEST_REFS", History: 1, TTL: ttl, Storage: jetstream.FileStorage}
}

// startKV starts NATS with a bucket made by EnsureKV.
func startKV(t *testing.T) (*NATS, *KV, context.Context) {
	t.Helper()
	n := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	kv, err := EnsureKV(ctx, n.JS, kvConfig(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return n, kv, ctx
}

// TestKVWriteTTL checks a key written with a TTL goes after it, and one
// written without stays, and that the stream keeps no trace of it.
func TestKVWriteTTL(t *testing.T) {
	t.Parallel()
	n, kv, ctx := startKV(t)
	if !kv.KeyTTLs() {
		t.Fatal("the embedded server does not allow key TTLs")
	}
	if _, err := kv.Write(ctx, "short", 0, []byte("1"), time.Second); err != nil {
		t.Fatalf("create with a TTL: %v", err)
	}
	if _, err := kv.Write(ctx, "kept", 0, []byte("1"), 0); err != nil {
		t.Fatalf("create: %v", err)
	}
	rev, err := kv.Write(ctx, "settled", 0, []byte("pending"), 0)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := kv.Write(ctx, "settled", rev, []byte("settled"), time.Second); err != nil {
		t.Fatalf("update with a TTL: %v", err)
	}
	// A released claim leaves a delete marker; writing the key again works.
	if _, err := kv.Write(ctx, "released", 0, []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "released"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Write(ctx, "released", 0, []byte("2"), time.Second); err != nil {
		t.Fatalf("create over a delete marker with a TTL: %v", err)
	}

	poll.CheckFor(t, poll.Patience, 100*time.Millisecond, func() error {
		for _, key := range []string{"short", "settled", "released"} {
			if e, err := kv.Get(ctx, key); !errors.Is(err, jetstream.ErrKeyNotFound) {
				return fmt.Errorf("%s: %v (%v), want it gone", key, e, err)
			}
		}
		return nil
	})
	if e, err := kv.Get(ctx, "kept"); err != nil || string(e.Value()) != "1" {
		t.Fatalf("kept: %v, %v", e, err)
	}
	st, err := n.JS.Stream(ctx, "KV_TEST_REFS")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.State.Subjects) != 1 || info.State.Subjects["$KV.TEST_REFS.kept"] != 1 {
		t.Fatalf("stream subjects %v, want only the kept key", info.State.Subjects)
	}
}

// TestKVWriteConflicts checks lost races read as Create's and Update's.
func TestKVWriteConflicts(t *testing.T) {
	t.Parallel()
	_, kv, ctx := startKV(t)
	rev, err := kv.Write(ctx, "k", 0, []byte("1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Write(ctx, "k", rev, []byte("2"), 0); err != nil {
		t.Fatal(err)
	}
	for _, ttl := range []time.Duration{0, time.Hour} {
		if _, err := kv.Write(ctx, "k", 0, []byte("x"), ttl); !errors.Is(err, jetstream.ErrKeyExists) {
			t.Errorf("create of an existing key, ttl %v: %v, want ErrKeyExists", ttl, err)
		}
		if _, err := kv.Write(ctx, "k", rev, []byte("x"), ttl); !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			t.Errorf("update at an old revision, ttl %v: %v, want ErrKeyRevisionMismatch", ttl, err)
		}
	}
	if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "2" {
		t.Fatalf("k: %v, %v; want 2", e, err)
	}
}

// TestEnsureKVUpgradesBucket checks a bucket made before key TTLs keeps
// its keys, allows key TTLs afterwards, and takes later settings.
func TestEnsureKVUpgradesBucket(t *testing.T) {
	t.Parallel()
	n := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	old, err := n.JS.CreateKeyValue(ctx, kvConfig(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Put(ctx, "k", []byte("old")); err != nil {
		t.Fatal(err)
	}
	for _, ttl := range []time.Duration{2 * time.Hour, 3 * time.Hour} {
		kv, err := EnsureKV(ctx, n.JS, kvConfig(ttl))
		if err != nil {
			t.Fatalf("EnsureKV, ttl %v: %v", ttl, err)
		}
		if !kv.KeyTTLs() {
			t.Fatalf("ttl %v: key TTLs not allowed", ttl)
		}
		if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "old" {
			t.Fatalf("ttl %v: k = %v, %v", ttl, e, err)
		}
		st, err := n.JS.Stream(ctx, "KV_TEST_REFS")
		if err != nil {
			t.Fatal(err)
		}
		if cfg := st.CachedInfo().Config; cfg.MaxAge != ttl || !cfg.AllowMsgTTL || cfg.MaxMsgsPerSubject != 1 || cfg.SubjectDeleteMarkerTTL != 0 {
			t.Fatalf("ttl %v: stream config max age %v, key TTLs %v, history %d, marker TTL %v",
				ttl, cfg.MaxAge, cfg.AllowMsgTTL, cfg.MaxMsgsPerSubject, cfg.SubjectDeleteMarkerTTL)
		}
	}
}

// TestEnsureKVMakesTheBucketAsJetStreamWould checks a bucket EnsureKV
// makes is the one JetStream's CreateKeyValue makes, with key TTLs allowed
// from its first moment: made in two steps, a write with a key TTL in
// between was refused ("per-message TTL is disabled"), as a click right
// after a deleted bucket was made again.
func TestEnsureKVMakesTheBucketAsJetStreamWould(t *testing.T) {
	t.Parallel()
	n := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), poll.Patience)
	defer cancel()
	for _, cfg := range []jetstream.KeyValueConfig{
		kvConfig(time.Hour),
		{Bucket: "TEST_SEEN", Description: "seen", History: 3, TTL: time.Minute, MaxBytes: 1 << 20, MaxValueSize: 4096, Storage: jetstream.MemoryStorage, Compression: true},
	} {
		if _, err := EnsureKV(ctx, n.JS, cfg); err != nil {
			t.Fatal(err)
		}
		ours, err := n.JS.Stream(ctx, "KV_"+cfg.Bucket)
		if err != nil {
			t.Fatal(err)
		}
		theirs := cfg
		theirs.Bucket += "_JS"
		kv, err := n.JS.CreateKeyValue(ctx, theirs)
		if err != nil {
			t.Fatal(err)
		}
		js, err := n.JS.Stream(ctx, "KV_"+theirs.Bucket)
		if err != nil {
			t.Fatal(err)
		}
		got, want := ours.CachedInfo().Config, js.CachedInfo().Config
		if !got.AllowMsgTTL || got.SubjectDeleteMarkerTTL != 0 {
			t.Errorf("%s: key TTLs allowed %v, subject delete markers %v; want allowed, none", cfg.Bucket, got.AllowMsgTTL, got.SubjectDeleteMarkerTTL)
		}
		got.Name, got.Subjects, got.AllowMsgTTL = want.Name, want.Subjects, want.AllowMsgTTL
		// The server's own metadata: the API level a setting needs (key TTLs: 1).
		got.Metadata, want.Metadata = nil, nil
		if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w {
			t.Errorf("%s: EnsureKV made\n%s\nCreateKeyValue makes\n%s", cfg.Bucket, g, w)
		}
		if _, err := kv.Status(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKVCallsGiveUpOnANodeThatNeverAnswers checks a read or write sent
// to a node as it died (here: a JetStream API whose gets and writes
// reach a subscriber that never answers) fails after AckWithin, rather
// than hold its caller for the caller's whole deadline.
func TestKVCallsGiveUpOnANodeThatNeverAnswers(t *testing.T) {
	t.Parallel()
	n, _, ctx := startKV(t)
	// The API under "hole.": bucket lookups go through to the server,
	// reads and writes of keys are swallowed.
	sub, err := n.Conn.Subscribe("hole.>", func(m *nats.Msg) {
		api := strings.TrimPrefix(m.Subject, "hole.")
		if strings.HasPrefix(api, "STREAM.INFO.") {
			reply, err := n.Conn.Request("$JS.API."+api, m.Data, 10*time.Second)
			if err == nil {
				_ = m.Respond(reply.Data)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	js, err := jetstream.NewWithAPIPrefix(n.Conn, "hole")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := js.KeyValue(ctx, "TEST_REFS")
	if err != nil {
		t.Fatal(err)
	}
	kv := &KV{kv: raw, js: js}
	// The deadline is a hang detector, far past AckWithin.
	long, cancel := context.WithTimeout(context.Background(), 10*AckWithin)
	defer cancel()
	if _, err := kv.Get(long, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("get: %v, want it to give up waiting", err)
	}
	if err := kv.Delete(long, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("delete: %v, want it to give up waiting", err)
	}
	if _, err := kv.Put(long, "k", []byte("v")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("put: %v, want it to give up waiting", err)
	}
	if _, err := kv.Write(long, "k", 0, []byte("v"), 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write: %v, want it to give up waiting", err)
	}
	if long.Err() != nil {
		t.Fatal("the caller's deadline passed: the reads waited it out")
	}
}

// TestThreadsBucketIsWrittenLikeTheEvents checks the chat adapters'
// threads bucket is written without a per-message fsync exactly when the
// events stream is (the embedded server with AsyncPersist), and any other
// bucket with one.
func TestThreadsBucketIsWrittenLikeTheEvents(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, async := range []bool{true, false} {
		n, err := ConnectNATS(ctx, NATSOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", SyncAlways: true, SyncInterval: time.Second, AsyncPersist: async})
		if err != nil {
			t.Fatal(err)
		}
		threads, err := n.EnsureThreads(ctx)
		if err != nil {
			t.Fatal(err)
		}
		other, err := EnsureKV(ctx, n.JS, jetstream.KeyValueConfig{Bucket: "TEST_RECORD", History: 1, Storage: jetstream.FileStorage})
		if err != nil {
			t.Fatal(err)
		}
		want := jetstream.DefaultPersistMode
		if async {
			want = jetstream.AsyncPersistMode
		}
		for kv, want := range map[*KV]jetstream.PersistModeType{threads: want, other: jetstream.DefaultPersistMode} {
			info, err := n.JS.Stream(ctx, "KV_"+kv.Bucket())
			if err != nil {
				t.Fatal(err)
			}
			if got := info.CachedInfo().Config.PersistMode; got != want {
				t.Errorf("AsyncPersist %v: bucket %s written in mode %v, want %v", async, kv.Bucket(), got, want)
			}
		}
		if err := threads.Hint("slack.t.acme.job-1.C1", []byte(`{"ts":"1.2"}`), time.Minute); err != nil {
			t.Fatalf("AsyncPersist %v: hint: %v", async, err)
		}
		poll.CheckFor(t, poll.Patience, 10*time.Millisecond, func() error {
			_, err := threads.Get(ctx, "slack.t.acme.job-1.C1")
			return err
		})
		n.Close()
	}
}
