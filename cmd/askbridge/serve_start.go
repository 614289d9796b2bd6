package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bots/discord"
	slackbot "github.com/askbridge/askbridge/bots/slack"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/policy"
	"github.com/askbridge/askbridge/runtime"
)

// startService starts everything and returns once the HTTP server listens
// and the runtime consumes. Stop it with stop. Each step is a method
// below, in the order they run.
func startService(ctx context.Context, cfg *config.Config, log *slog.Logger) (s *service, err error) {
	// Not s: every failed return sets s to nil before this runs.
	started := &service{cfg: cfg, log: log, errs: make(chan error, 8), policy: &policy.Holder{}}
	s = started
	defer func() {
		if err != nil {
			started.stop(context.Background())
		}
	}()
	if err := s.loadStartPolicy(); err != nil {
		return nil, err
	}
	if err := s.listen(); err != nil {
		return nil, err
	}
	nats, err := s.connectNATS(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.await(ctx, "open the record", s.openRecord); err != nil {
		return nil, err
	}
	var secret []byte
	if err := s.await(ctx, "share the console secret", func(ctx context.Context) (err error) {
		secret, err = s.consoleSecret(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := s.newRuntime(reg, nats.synced); err != nil {
		return nil, err
	}
	runCtx, err := s.runRuntime(ctx)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	signer := console.Signer{PublicURL: s.baseURL(), Secret: secret}
	con, err := console.New(console.Options{NATS: s.nats, Signer: signer, Logger: log.With("component", "console")})
	if err != nil {
		return nil, err
	}
	con.Routes(mux)
	if err := s.runFrontends(ctx, runCtx, mux, frontendOptions{signer: signer, reg: reg, nats: nats}); err != nil {
		return nil, err
	}
	if err := s.routeService(mux, reg, signer); err != nil {
		return nil, err
	}
	s.http.RegisterOnShutdown(con.Close) // live pages' event streams
	s.start.started(countRequests(reg, mux))
	log.Info("askbridge serving", "http", s.ln.Addr().String(), "slack", cfg.SlackEnabled(), "discord", cfg.DiscordEnabled(),
		"mcp", cfg.MCPToken != "", "data", cfg.DataDir)
	return s, nil
}

// loadStartPolicy reads the policy before anything else: a bad file stops
// the start with nothing begun (serve exits 2 naming the file and the
// line).
func (s *service) loadStartPolicy() error {
	if s.cfg.Policy == "" {
		return nil
	}
	p, err := loadPolicy(s.cfg)
	if err != nil {
		return err
	}
	s.policy.Store(p)
	tenants, actions := p.Count()
	s.log.Info("policy loaded", "path", s.cfg.Policy, "tenants", tenants, "actions", actions)
	return nil
}

// listen makes the data directory, says what the configuration leaves
// out, and listens on HTTP, serving /healthz and /readyz at once.
// Listening comes first: an address that cannot be had stops the start
// before anything else runs, and with port 0 the console's links name
// the port the listener got.
func (s *service) listen() (err error) {
	cfg := s.cfg
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("data dir %s (ASK_DATA_DIR): %w", cfg.DataDir, err)
	}
	for _, why := range cfg.Warnings() {
		s.log.Warn(why)
	}
	s.ln, err = net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("http: listen on %s (ASK_HTTP_ADDR): %w", cfg.HTTPAddr, err)
	}
	s.serveHTTP()
	if (cfg.SlackEnabled() || cfg.DiscordEnabled()) && cfg.PublicURL == "" {
		// The default suits one machine; people in chat elsewhere would
		// get console links they cannot open.
		s.log.Warn("ASK_PUBLIC_URL is not set: console links in chat point at " + s.baseURL() +
			", which people on other machines cannot open; set it to the address they reach askbridge at")
	}
	return nil
}

// natsDurability is how the service's NATS syncs, for the runtime and
// the adapters.
type natsDurability struct {
	// lazy: the embedded JetStream fsyncs once a second
	// (ASK_NATS_SYNC=interval), and adapters acknowledge clicks after
	// their decision is committed.
	lazy bool
	// synced is how long after a write the embedded server surely has it
	// on disk; 0 for an external server.
	synced time.Duration
}

// connectNATS starts the embedded NATS, or connects to ASK_NATS_URL and
// makes the streams there (waiting for it, as /readyz says).
//
// With ASK_NATS_SYNC=interval the embedded JetStream fsyncs once a
// second, and durability moves to the store: clicks are acknowledged
// after their decision is committed (see README). In both modes outcomes
// stay in the outbox, and asked events unacknowledged after their
// delivery report, until the embedded JetStream has surely synced them,
// so with ASK_NATS_SYNC=always those streams (events, resumes, delivery
// reports) need no fsync per message: they are synced once a second. (In
// interval mode every stream already is.)
func (s *service) connectNATS(ctx context.Context) (natsDurability, error) {
	cfg := s.cfg
	embedded := cfg.NATSURL == ""
	no := bridge.NATSOptions{
		URL:          cfg.NATSURL,
		Creds:        cfg.NATSCreds,
		Listen:       cfg.NATSListen,
		StoreDir:     filepath.Join(cfg.DataDir, "nats"),
		DataDir:      cfg.DataDir,
		SyncAlways:   cfg.NATSSync == "always",
		SyncInterval: embeddedSyncInterval,
		AsyncPersist: embedded && cfg.NATSSync == "always",
		Replicas:     cfg.NATSReplicas,
		Logger:       s.log,
	}
	connect := func(ctx context.Context) (err error) {
		s.nats, err = bridge.ConnectNATS(ctx, no)
		return err
	}
	var err error
	if embedded {
		err = connect(ctx)
	} else {
		err = s.await(ctx, "connect and make its streams", connect)
	}
	if err != nil {
		return natsDurability{}, natsStartError(cfg, err)
	}
	if s.nats.Server != nil {
		s.log.Info("embedded NATS listening", "url", s.nats.Server.ClientURL(), "sync", cfg.NATSSync)
	} else {
		warnIfOpen(cfg.NATSURL, s.log)
	}
	d := natsDurability{lazy: cfg.NATSSync == "interval" && embedded}
	if embedded {
		// What the embedded server writes without an fsync of its own is
		// surely on disk this long after: the outbox marks a row sent, and
		// an adapter acknowledges the asked event of a report, only then.
		d.synced = 3 * embeddedSyncInterval
	}
	return d, nil
}

// newRuntime makes the runtime on the open NATS and record.
func (s *service) newRuntime(reg *prometheus.Registry, synced time.Duration) (err error) {
	cfg := s.cfg
	rtOpts := runtime.Options{
		NATS:  s.nats,
		Store: s.record,
		Roles: runtime.Roles{
			Owners: cfg.Owners, Admins: cfg.Admins, Operators: cfg.Operators, Readers: cfg.Readers,
		},
		Policy:        s.policy,
		People:        cfg.People,
		Platforms:     cfg.Platforms(),
		Logger:        s.log,
		Registerer:    reg,
		Clarify:       runtime.ClarifyMetrics{Tenants: cfg.MetricsTenants, Agents: cfg.MetricsAgents, Window: cfg.MetricsWindow},
		MarkSentAfter: synced,
	}
	if guard, err := s.principals(); err != nil {
		return err
	} else if guard != nil {
		rtOpts.Principals = guard
	}
	// Validated at start (config.Validate).
	rtOpts.TimeZone, _ = cfg.Location()
	s.rt, err = runtime.New(rtOpts)
	return err
}

// runRuntime starts the credentials' watch and the runtime, and waits
// until the runtime consumes; runCtx is what the service runs under until
// stop. The runtime goes first: before it publishes, it makes the
// adapters' consumers on the events stream (cfg.Platforms), which drops
// an event no consumer is there for; the adapters started after it find
// theirs (docs/design.md, "The events stream and the adapters'
// consumers").
func (s *service) runRuntime(ctx context.Context) (context.Context, error) {
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	if s.guard != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.guard.Watch(runCtx, s.cfg.DataDir, s.nats.Keys, s.nats.Server, time.Second, s.log.With("component", "credentials"))
		}()
	}
	err := s.await(ctx, "start the runtime's consumers", func(context.Context) error {
		s.goRun("runtime", s.rt.Run, runCtx)
		select { // not bounded by a try's time: one Run at a time
		case <-s.rt.Ready():
			return nil
		case err := <-s.errs:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	return runCtx, err
}

// frontendOptions are what the chat adapters share.
type frontendOptions struct {
	signer console.Signer
	reg    *prometheus.Registry
	nats   natsDurability
}

// runFrontends makes the chat adapters the configuration switches on,
// routes their HTTP and runs them under runCtx.
func (s *service) runFrontends(ctx, runCtx context.Context, mux *http.ServeMux, o frontendOptions) error {
	var fronts []frontend
	if s.cfg.SlackEnabled() {
		b, err := s.slackFrontend(ctx, o)
		if err != nil {
			return err
		}
		fronts = append(fronts, b)
	}
	if s.cfg.DiscordEnabled() {
		b, err := s.discordFrontend(ctx, o)
		if err != nil {
			return err
		}
		fronts = append(fronts, b)
	}
	for _, f := range fronts {
		f.Routes(mux)
		s.goRun("frontend", f.Run, runCtx)
	}
	return nil
}

func (s *service) slackFrontend(ctx context.Context, o frontendOptions) (b *slackbot.Bot, err error) {
	cfg := s.cfg
	err = s.await(ctx, "make the Slack adapter's bucket", func(ctx context.Context) (err error) {
		b, err = slackbot.New(ctx, slackbot.Options{
			NATS: s.nats, BotToken: cfg.SlackBotToken, SigningSecret: cfg.SlackSigningSecret, AppToken: cfg.SlackAppToken,
			APIURL: cfg.SlackAPIURL, DefaultChannel: cfg.SlackChannel, Console: o.signer, Logger: s.log.With("component", "slack"),
			AckAfterDecision: o.nats.lazy, Registerer: o.reg, ReportSync: o.nats.synced,
		})
		return err
	})
	return b, err
}

func (s *service) discordFrontend(ctx context.Context, o frontendOptions) (b *discord.Bot, err error) {
	cfg := s.cfg
	err = s.await(ctx, "make the Discord adapter's buckets", func(ctx context.Context) (err error) {
		b, err = discord.New(ctx, discord.Options{
			NATS: s.nats, BotToken: cfg.DiscordBotToken, PublicKey: cfg.DiscordPublicKey, AppID: cfg.DiscordAppID,
			APIURL: cfg.DiscordAPIURL, DefaultChannel: cfg.DiscordChannel, Guild: cfg.DiscordGuild,
			AdminRoles: cfg.DiscordAdminRoles, OperatorRoles: cfg.DiscordOperatorRoles,
			Console: o.signer, Logger: s.log.With("component", "discord"), AckAfterDecision: o.nats.lazy, Registerer: o.reg,
			ReportSync: o.nats.synced,
		})
		return err
	})
	return b, err
}

// routeService routes the rest: MCP when ASK_MCP_TOKEN serves it, the
// probes, the metrics, and the way from the site's root to the console.
func (s *service) routeService(mux *http.ServeMux, reg *prometheus.Registry, signer console.Signer) error {
	if s.cfg.MCPToken != "" {
		front, err := routeMCP(mux, s.nats.Conn, s.cfg, serviceAutoAllow(s.cfg, s.policy.Load()), s.log.With("component", "mcp"))
		if err != nil {
			return err
		}
		s.mcp = front
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", s.ready)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	// Under ASK_PUBLIC_URL's path, as a proxy that strips it serves us.
	consoleHome := signer.BasePath() + "/console/"
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, consoleHome, http.StatusSeeOther)
	})
	// ServeMux would add the slash itself (307), at the site's root.
	mux.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) {
		to := consoleHome
		if r.URL.RawQuery != "" {
			to += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, to, http.StatusTemporaryRedirect)
	})
	return nil
}
