package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge/bots/discord"
	slackbot "github.com/askbridge/askbridge/bots/slack"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/principal"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/mcpfront"
	"github.com/askbridge/askbridge/policy"
	"github.com/askbridge/askbridge/runtime"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/store/jsstore"
	"github.com/askbridge/askbridge/store/record"
)

// embeddedSyncInterval is how often the embedded JetStream fsyncs with
// ASK_NATS_SYNC=interval.
const embeddedSyncInterval = time.Second

// frontend is a chat adapter: HTTP routes plus a loop consuming events.
type frontend interface {
	Routes(mux *http.ServeMux)
	Run(ctx context.Context) error
}

var (
	_ frontend = (*slackbot.Bot)(nil)
	_ frontend = (*discord.Bot)(nil)
)

// recordStore is the durable record as serve uses it: the runtime's store, and
// what /readyz and a stop need. Both stores are one.
type recordStore interface {
	record.Backend
	Ping(ctx context.Context) error
	Close() error
}

var (
	_ recordStore       = (*store.Store)(nil)
	_ recordStore       = (*jsstore.Store)(nil)
	_ record.Shareable  = (*jsstore.Store)(nil)
	_ record.DueWatcher = (*jsstore.Store)(nil)
)

// service is one running askbridge: NATS, store, runtime, adapters, HTTP.
type service struct {
	cfg  *config.Config
	log  *slog.Logger
	nats *bridge.NATS
	// record is the durable record (ASK_STORE); store is the same when it
	// is SQLite, nil otherwise (tests reach its extras through it).
	record recordStore
	store  *store.Store
	rt     *runtime.Runtime
	// guard checks the credentials of what agents and people publish.
	guard *principal.Guard
	// policy is the operator's policy in force (ASK_POLICY), read at
	// start and replaced whole on SIGHUP (reloadPolicy).
	policy *policy.Holder
	// mcp is the MCP front door when ASK_MCP_TOKEN serves it: its
	// auto-allow list is re-read with the policy.
	mcp  *mcpfront.Front
	http *http.Server
	ln   net.Listener
	// start is what /readyz says while the start waits (startwait.go).
	start startState

	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   chan error
	// stopped makes a second stop do nothing.
	stopped sync.Once
}

func (s *service) goRun(name string, run func(context.Context) error, ctx context.Context) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := run(ctx); err != nil && ctx.Err() == nil {
			if !strings.HasPrefix(err.Error(), name+":") { // the runtime names itself
				err = fmt.Errorf("%s: %w", name, err)
			}
			s.errs <- err
		}
	}()
}

// reloadPolicy re-reads ASK_POLICY (on SIGHUP): a good file replaces the
// policy in force whole, its mcp.auto_allow with it; a bad one is logged
// with its line and the policy in force is kept, so a typo never leaves
// actions ungated. Without ASK_POLICY it only says so: SIGHUP never stops
// the service.
func (s *service) reloadPolicy() {
	path := s.cfg.Policy
	if path == "" {
		s.log.Info("SIGHUP: ASK_POLICY is not set; no policy to re-read")
		return
	}
	p, err := loadPolicy(s.cfg)
	if err == nil && s.mcp != nil {
		err = s.mcp.SetAutoAllow(serviceAutoAllow(s.cfg, p))
	}
	if err != nil {
		line := 0
		var pe *policy.Error
		if errors.As(err, &pe) {
			line = pe.Line
		}
		s.log.Error("policy not reloaded; the policy in force is kept", "path", path, "line", line, "err", err.Error())
		return
	}
	s.policy.Store(p)
	tenants, actions := p.Count()
	s.log.Info("policy reloaded", "path", path, "tenants", tenants, "actions", actions)
}

// loadPolicy reads ASK_POLICY and checks its people: against ASK_PEOPLE:
// a person or an identity is linked in one place only.
func loadPolicy(cfg *config.Config) (*policy.Policy, error) {
	p, err := policy.Load(cfg.Policy)
	if err != nil {
		return nil, err
	}
	if _, err := bridge.MergePeople(cfg.People, p.People); err != nil {
		return nil, &policy.Error{File: cfg.Policy, Path: "people", Problem: err.Error()}
	}
	return p, nil
}

// natsURL is where other processes reach this service's NATS.
// principals is the guard of what agents and people publish on the
// embedded NATS: it checks their credentials against the register's
// revocations, which it re-reads while the service runs.
func (s *service) principals() (*principal.Guard, error) {
	if s.nats.Keys == nil {
		return nil, nil
	}
	reg, err := principal.OpenRegister(s.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	s.guard = principal.NewGuard(s.nats.Keys.Verifier(), reg.Revocations())
	return s.guard, nil
}

func (s *service) natsURL() string { return s.nats.ClientURL() }

// Addr is the HTTP listener's address.
func (s *service) Addr() string { return s.ln.Addr().String() }

// baseURL is where console links point: ASK_PUBLIC_URL, or this
// listener on loopback (its real port when ASK_HTTP_ADDR asked for 0).
func (s *service) baseURL() string {
	c := *s.cfg
	if c.PublicURL == "" {
		c.HTTPAddr = s.ln.Addr().String()
	}
	return c.BaseURL()
}

// Errors reports a component that stopped by itself.
func (s *service) Errors() <-chan error { return s.errs }

// stop shuts down gracefully: HTTP first (finishing requests in flight),
// then the adapters and the runtime, then the store and NATS. Only the
// first call does anything.
func (s *service) stop(ctx context.Context) {
	s.stopped.Do(func() { s.stopOnce(ctx) })
}

func (s *service) stopOnce(ctx context.Context) {
	if s.mcp != nil {
		s.mcp.Stop(ctx) // the calls waiting for people end now, not at the grace's end
	}
	if s.http != nil {
		if err := s.http.Shutdown(ctx); err != nil {
			// The grace is over: requests still in flight (an MCP call
			// waiting for a person) end with their connections.
			s.log.Warn("http shutdown: closing the requests still in flight", "err", err)
			s.http.Close()
		}
	} else if s.ln != nil {
		s.ln.Close() // a start that failed before serving
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	if s.nats != nil && s.nats.Server != nil && s.rt != nil && s.store != nil {
		// The embedded server first: once it has stopped and its files
		// are synced, every acknowledged message is on disk, and the
		// outbox rows still waiting out the sync interval can be marked,
		// so the next start publishes none of them again. (A record in
		// JetStream is gone with the server: its rows are published again
		// at the next start, and JetStream keeps one copy of each.)
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		s.rt.CollectAcks(actx)
		cancel()
		s.nats.Close()
		if err := s.nats.Durable(); err != nil {
			s.log.Warn("stop: sync the NATS store; the next start publishes the last events again", "err", err)
		} else if err := s.rt.MarkPublished(context.Background()); err != nil {
			s.log.Warn("stop", "err", err)
		}
		s.store.Close()
		return
	}
	if s.record != nil {
		// Before NATS: the JetStream store's watchers use its connection.
		s.record.Close()
	}
	if s.nats != nil {
		s.nats.Close()
	}
}

// openRecord opens the durable record ASK_STORE names: SQLite in the data
// directory, or the bucket ASK_RECORD on the NATS every replica shares.
func (s *service) openRecord(ctx context.Context) error {
	if !s.cfg.Shared() {
		st, err := store.Open(ctx, filepath.Join(s.cfg.DataDir, "askbridge.db"))
		if err != nil {
			return fmt.Errorf("%w (the database in ASK_DATA_DIR)", err)
		}
		s.store, s.record = st, st
		return nil
	}
	replicas := 0 // the embedded server holds one copy (config.Warnings)
	if s.cfg.NATSURL != "" && s.cfg.NATSReplicasSet {
		replicas = s.cfg.NATSReplicas
	}
	st, err := jsstore.Open(ctx, s.nats.Conn, jsstore.Options{Replicas: replicas, Logger: s.log.With("component", "jsstore")})
	if err != nil {
		return fmt.Errorf("ASK_STORE=jetstream: %w", err)
	}
	s.record = st
	s.log.Info("record in JetStream", "bucket", jsstore.Bucket, "instance", st.Instance())
	return nil
}

// countRequests counts HTTP requests by route pattern and status, so that
// refused interactions (forged, stale, oversize) show on /metrics.
func countRequests(reg prometheus.Registerer, mux *http.ServeMux) http.Handler {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "askbridge_http_requests_total", Help: "HTTP requests, by route pattern and status code.",
	}, []string{"route", "code"})
	reg.MustRegister(requests)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		mux.ServeHTTP(rec, r)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		requests.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
	})
}

// statusRecorder remembers the status code a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
