// Package testenv starts askbridge's core for tests: an embedded NATS
// server with JetStream, a store (SQLite, or the JetStream store) and the
// runtime, all in a temporary directory, stopped when the test ends; and
// more runtime replicas on the same NATS and record (StartReplica).
package testenv

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/bridge/principal"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv/poll"
	"github.com/askbridge/askbridge/internal/testenv/sqliterecord"
	"github.com/askbridge/askbridge/policy"
	"github.com/askbridge/askbridge/runtime"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/store/jsstore"
	"github.com/askbridge/askbridge/store/record"
)

// Options shape the environment.
type Options struct {
	// Dir is the data directory; empty means a new t.TempDir(). Pass an
	// earlier Env's Dir to restart on the same data.
	Dir   string
	Roles runtime.Roles
	// Platforms are the chat platforms switched on, by name, each with its
	// default channel; the rest of each is config.ChatPlatforms'.
	Platforms map[string]bridge.Platform
	// BeforePublish and AfterPublish are passed to the runtime (crash tests).
	BeforePublish func(record.OutboxRow) error
	AfterPublish  func(record.OutboxRow) error
	// Logger receives the runtime's logs; Start's default prints them when
	// the test fails.
	Logger *slog.Logger
	// SyncAlways makes JetStream fsync every write, as serve does by default.
	SyncAlways bool
	// Clock, when set, is the runtime's clock (see Clock).
	Clock runtime.Clock
	// TimeZone is the runtime's (ASK_TIME_ZONE); nil is UTC.
	TimeZone *time.Location
	// Policy, when set, holds the operator's policy the runtime applies.
	Policy *policy.Holder
	// People links identities into persons, as ASK_PEOPLE does.
	People bridge.People
	// Clarify shapes the clarification metrics (runtime.ClarifyMetrics).
	Clarify runtime.ClarifyMetrics
	// MarkSentAfter, HealEvery, AttemptWaits and LeaseRenew are passed to
	// the runtime.
	MarkSentAfter time.Duration
	HealEvery     time.Duration
	AttemptWaits  int
	LeaseRenew    time.Duration
	// NATSURL, when set, is an external NATS server to use instead of an
	// embedded one.
	NATSURL string
	// KeepEvents makes, before the runtime starts, a durable consumer on
	// the events stream that acknowledges nothing, so the stream keeps
	// every event (across restarts on the same Dir) for a test that reads
	// events published before it began to record. Without it, as in
	// production, an event goes once every consumer has it, and at once
	// when there is none (docs/contract.md "Streams").
	KeepEvents bool
	// Served sets up NATS and the relay as serve does for the embedded
	// server: with SyncAlways, events and resumes synced once a second
	// (bridge.NATSOptions.AsyncPersist); rows marked sent three seconds
	// after publishing. It overrides MarkSentAfter.
	Served bool
	// Store is the record: "sqlite" (or empty), a SQLite database in Dir,
	// or "jetstream", the JetStream store (ASK_STORE=jetstream) on the
	// env's NATS.
	Store string
	// Shared runs the runtime on the SQLite store as on a store shared by
	// replicas (record.Shareable): it takes no lease, and StartReplica
	// may start more runtimes on the same store. In one process the store's
	// transactions make those runtimes replicas of one record, as the
	// JetStream store's compare-and-set does across processes. The
	// JetStream store is always shared.
	Shared bool
	// WrapStore, when set, wraps the record the runtime is given (a test
	// that holds one call back to show what goes on meanwhile).
	WrapStore func(record.Backend) record.Backend
}

// The stores Options.Store names.
const (
	StoreSQLite    = "sqlite"
	StoreJetStream = "jetstream"
)

// KeepEventsConsumer names the consumer of Options.KeepEvents.
const KeepEventsConsumer = "testenv-keep"

// Env is a running core.
type Env struct {
	// Metrics holds the runtime's metrics.
	Metrics *prometheus.Registry
	Dir     string
	NATS    *bridge.NATS
	// RecordStore is the runtime's store, whichever Options.Store named.
	RecordStore record.Backend
	// Store is RecordStore when it is SQLite (nil on the JetStream store), for
	// the tests that use the SQLite store's extras.
	Store   *store.Store
	Runtime *runtime.Runtime
	Agent   *agent.Client

	o       Options
	logger  *slog.Logger
	closeSt func() error
	first   *Replica
	once    sync.Once
	// mu guards replicas, which Stop stops.
	mu       sync.Mutex
	replicas []*Replica
}

// Replica is one runtime of an Env: its first, or one StartReplica added
// on the same NATS and record.
type Replica struct {
	Runtime *runtime.Runtime
	// Metrics holds this replica's metrics.
	Metrics *prometheus.Registry
	cancel  context.CancelFunc
	done    chan struct{}
	once    sync.Once
}

// Stop stops the replica's runtime, as a shutdown of its process would;
// the env's NATS and record stay. It is safe to call more than once.
func (r *Replica) Stop() {
	r.once.Do(func() {
		r.cancel()
		<-r.done
	})
}

// Start starts the core and stops it when the test ends.
//
// Without Options.Logger the runtime logs at info level into a buffer the
// test prints when it fails: what the runtime saw is then beside what the
// test waited for.
func Start(t testing.TB, o Options) *Env {
	t.Helper()
	if o.Logger == nil {
		o.Logger = FailureLogger(t)
	}
	env, err := start(o, t.TempDir)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(env.Stop)
	return env
}

func start(o Options, tempDir func() string) (*Env, error) {
	dir := o.Dir
	if dir == "" {
		dir = tempDir()
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx := context.Background()
	nopts := bridge.NATSOptions{URL: o.NATSURL, Listen: "127.0.0.1:0", StoreDir: filepath.Join(dir, "nats"), SyncAlways: o.SyncAlways}
	if o.Served {
		nopts.SyncInterval, nopts.AsyncPersist = time.Second, o.SyncAlways
		o.MarkSentAfter = 3 * time.Second
	}
	n, err := bridge.ConnectNATS(ctx, nopts)
	if err != nil {
		return nil, err
	}
	if o.KeepEvents {
		if _, err := n.JS.CreateOrUpdateConsumer(ctx, bridge.StreamEvents, jetstream.ConsumerConfig{
			Durable: KeepEventsConsumer, Description: "testenv: keeps every event", AckPolicy: jetstream.AckExplicitPolicy,
			DeliverPolicy: jetstream.DeliverAllPolicy, FilterSubject: bridge.PrefixEvent + ".>",
		}); err != nil {
			n.Close()
			return nil, err
		}
	}
	env := &Env{Dir: dir, NATS: n, o: o, logger: logger}
	if err := env.openRecord(ctx); err != nil {
		n.Close()
		return nil, err
	}
	if env.Agent, err = agent.New(n.Conn); err != nil {
		env.closeSt()
		n.Close()
		return nil, err
	}
	first, err := env.startRuntime()
	if err != nil {
		env.closeSt()
		n.Close()
		return nil, err
	}
	env.first, env.Runtime, env.Metrics = first, first.Runtime, first.Metrics
	return env, nil
}

// openRecord opens the store Options.Store names.
func (e *Env) openRecord(ctx context.Context) error {
	switch e.o.Store {
	case "", StoreSQLite:
		path := filepath.Join(e.Dir, "askbridge.db")
		if err := sqliterecord.Seed(path); err != nil {
			return err
		}
		st, err := store.Open(ctx, path)
		if err != nil {
			return err
		}
		e.Store, e.RecordStore, e.closeSt = st, st, st.Close
		if e.o.Shared {
			e.RecordStore = sharedSQLite{st}
		}
	case StoreJetStream:
		st, err := jsstore.Open(ctx, e.NATS.Conn, jsstore.Options{Logger: e.logger})
		if err != nil {
			return err
		}
		e.RecordStore, e.closeSt = st, st.Close
	default:
		return fmt.Errorf("no store %q: sqlite or jetstream", e.o.Store)
	}
	return nil
}

// sharedSQLite is the SQLite store as Options.Shared makes it: shared by
// the runtimes of one process.
type sharedSQLite struct{ *store.Store }

func (sharedSQLite) Shared() bool { return true }

// startRuntime starts one more runtime on the env's NATS and record, and
// returns once it consumes.
func (e *Env) startRuntime() (*Replica, error) {
	o := e.o
	reg := prometheus.NewRegistry()
	st := e.RecordStore
	if o.WrapStore != nil {
		st = o.WrapStore(st)
	}
	rt, err := runtime.New(runtime.Options{
		NATS: e.NATS, Store: st, Roles: o.Roles, Platforms: platforms(o.Platforms), Logger: e.logger, Registerer: reg, BeforePublish: o.BeforePublish, AfterPublish: o.AfterPublish, MarkSentAfter: o.MarkSentAfter,
		Clock: o.Clock, TimeZone: o.TimeZone, Policy: o.Policy, People: o.People, Clarify: o.Clarify, HealEvery: o.HealEvery, AttemptWaits: o.AttemptWaits, LeaseRenew: o.LeaseRenew,
	})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	r := &Replica{Runtime: rt, Metrics: reg, cancel: cancel, done: make(chan struct{})}
	runErr := make(chan error, 1)
	go func() {
		defer close(r.done)
		runErr <- rt.Run(rctx)
	}()
	select {
	case <-rt.Ready():
	case err := <-runErr:
		cancel()
		return nil, fmt.Errorf("runtime did not start: %v", err)
	case <-time.After(30 * time.Second):
		r.Stop()
		return nil, fmt.Errorf("runtime did not start within 30s")
	}
	e.mu.Lock()
	e.replicas = append(e.replicas, r)
	e.mu.Unlock()
	return r, nil
}

// StartReplica starts another runtime on the env's NATS and record, with
// the env's options, as a second askbridge serve against one NATS would
// be: the replicas share the runtime's consumers, each message handled by
// one of them. The env must be on a shared store (Options.Store
// "jetstream", or Options.Shared). It stops with the env, or by Stop.
func (e *Env) StartReplica(t testing.TB) *Replica {
	t.Helper()
	if e.Store != nil && !e.o.Shared {
		t.Fatal("testenv: StartReplica needs a shared store: Options.Store jetstream, or Options.Shared")
	}
	r, err := e.startRuntime()
	if err != nil {
		t.Fatalf("testenv: replica: %v", err)
	}
	t.Cleanup(r.Stop)
	return r
}

// StopRuntime stops the env's first runtime, as a shutdown of its process
// would, leaving NATS, the record and any other replica running.
func (e *Env) StopRuntime() { e.first.Stop() }

// platforms are config.ChatPlatforms, those named in on switched on with
// their default channels.
func platforms(on map[string]bridge.Platform) []bridge.Platform {
	out := config.ChatPlatforms()
	for i := range out {
		if p, ok := on[out[i].Name]; ok {
			out[i].On, out[i].DefaultChannel = true, p.DefaultChannel
		}
	}
	return out
}

// Stop stops the runtime, the store and NATS, as a shutdown would. It is
// safe to call more than once.
func (e *Env) Stop() {
	e.once.Do(func() {
		e.mu.Lock()
		replicas := e.replicas
		e.mu.Unlock()
		for _, r := range replicas {
			r.Stop()
		}
		// The record before NATS: the JetStream store's watchers use it.
		e.closeSt()
		e.NATS.Close()
	})
}

// URL is the embedded NATS server's client URL, for a second connection.
func (e *Env) URL() string { return e.NATS.ClientURL() }

// CheckFor polls f until it returns nil; see poll.CheckFor.
var CheckFor = poll.CheckFor

// Patience is how long a test waits for an asynchronous outcome before it
// calls it a hang; see poll.Patience.
const Patience = poll.Patience

// AdminOf is the option that connects to the embedded NATS of a service
// whose data directory is dataDir as an admin, as the directory's owner
// may (its keys are there).
func AdminOf(t testing.TB, dataDir string) nats.Option {
	t.Helper()
	keys, err := principal.LoadKeys(dataDir)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	admin, err := keys.Mint(principal.Spec{Kind: principal.KindAdmin, Name: "test-admin"})
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return nats.UserJWTAndSeed(admin.JWT, admin.Seed)
}
