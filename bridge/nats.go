package bridge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge/principal"
)

// NATSOptions says which NATS to use: an external one at URL, or an
// embedded server with JetStream under StoreDir listening on Listen.
type NATSOptions struct {
	URL   string
	Creds string
	// Listen is host:port for the embedded server; port 0 picks a free one.
	Listen   string
	StoreDir string
	// SyncAlways fsyncs every JetStream write before acknowledging it. With
	// it off the server fsyncs every two minutes: acknowledged messages can
	// be lost on power loss (not on a process crash).
	SyncAlways bool
	// SyncInterval is how often the embedded server fsyncs when SyncAlways
	// is off; 0 keeps the server's default (two minutes).
	SyncInterval time.Duration
	// Replicas is the stream replica count on a cluster (1 when embedded);
	// 0 makes new streams with one and leaves existing ones as they are.
	Replicas int
	// AsyncPersist, for the embedded server only, writes the streams whose
	// writers make up for a lost message without a per-message fsync, even
	// with SyncAlways: JetStream's async persist mode, synced every
	// SyncInterval. The runtime's outbox (events and resumes) keeps each
	// row until the server has surely synced it
	// (runtime.Options.MarkSentAfter) and publishes a lost one again; a
	// chat adapter acknowledges the asked event of a delivery report only
	// then (its ReportSync), so a lost report comes again. Streams created
	// before keep the mode they have.
	AsyncPersist bool
	Name         string
	// DataDir holds the embedded server's keys (principal.KeysFile) and
	// the register of credentials; "" keeps them in StoreDir.
	DataDir string
	// ConnOptions are added to the connection's options (credentials for
	// an external NATS, say).
	ConnOptions []nats.Option
	// Logger hears how existing streams were adopted, and when the
	// connection is lost and back; nil discards it.
	Logger *slog.Logger
}

// NATS is a connection with JetStream, and the embedded server when there is one.
type NATS struct {
	Conn   *nats.Conn
	JS     jetstream.JetStream
	Server *server.Server
	// storeDir is the embedded server's store, for Durable.
	storeDir string
	// streams are the options the streams were made with, to make them
	// again (EnsureStreams).
	streams StreamOptions
	// Keys are the embedded server's operator and account keys; admin is
	// a credential of the service account kept in memory, for tests and
	// tools in this process that connect over TCP.
	Keys  *principal.Keys
	admin *principal.Issued
}

// ConnectNATS starts the embedded server (when no URL is given), connects,
// and makes sure askbridge's streams exist.
func ConnectNATS(ctx context.Context, o NATSOptions) (*NATS, error) {
	n := &NATS{}
	name := o.Name
	if name == "" {
		name = "askbridge"
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond),
		// An operator should see an outage begin and end; a clean close
		// (err nil) is no news.
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats: connection lost; reconnecting", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info("nats: reconnected", "server", c.ConnectedUrlRedacted())
		}),
	}
	url := o.URL
	if url == "" {
		keys, err := principal.LoadOrCreateKeys(cmp.Or(o.DataDir, o.StoreDir))
		if err != nil {
			return nil, fmt.Errorf("nats: %w", err)
		}
		ns, err := StartEmbedded(o, keys)
		if err != nil {
			return nil, err
		}
		n.Server, n.storeDir, n.Keys = ns, o.StoreDir, keys
		// The service's own parts connect in process, with a credential
		// that no TCP connection can use.
		self, err := keys.Mint(principal.Spec{Kind: principal.KindAdmin, Name: "askbridge", InProcessOnly: true}, time.Now())
		if err != nil {
			n.Close()
			return nil, fmt.Errorf("nats: %w", err)
		}
		if n.admin, err = keys.Mint(principal.Spec{Kind: principal.KindAdmin, Name: "askbridge-admin"}, time.Now()); err != nil {
			n.Close()
			return nil, fmt.Errorf("nats: %w", err)
		}
		// The server is in this process: its handshake's timeout only
		// detects a hang. nats.go's 2 s ran out on a loaded machine.
		opts = append(opts, nats.InProcessServer(ns), nats.UserJWTAndSeed(self.JWT, self.Seed), nats.Timeout(inProcessHandshake))
	} else if o.Creds != "" {
		opts = append(opts, nats.UserCredentials(o.Creds))
	} else if keys, err := principal.LoadKeys(cmp.Or(o.DataDir, o.StoreDir)); err == nil {
		// A cluster that trusts askbridge's accounts (docs/deploy.md): the
		// replica connects with a credential of the service account it
		// mints from the keys it was handed.
		self, err := keys.Mint(principal.Spec{Kind: principal.KindAdmin, Name: "askbridge"}, time.Now())
		if err != nil {
			return nil, fmt.Errorf("nats: %w", err)
		}
		n.Keys = keys
		opts = append(opts, nats.UserJWTAndSeed(self.JWT, self.Seed))
	} else if !errors.Is(err, principal.ErrNoKeys) {
		return nil, fmt.Errorf("nats: %w", err)
	}
	opts = append(opts, o.ConnOptions...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		n.Close()
		return nil, &ConnectError{Err: err}
	}
	n.Conn = nc
	// An asynchronous publish (the outbox relay's) whose acknowledgement
	// never comes fails after AckWithin, and is published again: without
	// the bound it would hold every later row back until a reconnect. One
	// that reached a subscriber where no stream took its subject (an agent
	// waiting, while a stream is made again) gets no acknowledgement, nor
	// JetStream's "no responders".
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(AckWithin))
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("nats: jetstream: %w", err)
	}
	n.JS = js
	so := StreamOptions{Replicas: o.Replicas, Logger: o.Logger}
	if n.Server != nil {
		so.Replicas = 1 // one embedded server holds one copy
		so.AsyncPersist = o.AsyncPersist
	}
	if err := EnsureStreams(ctx, js, so); err != nil {
		n.Close()
		return nil, err
	}
	n.streams = so
	return n, nil
}

// Close drains the connection and stops the embedded server.
func (n *NATS) Close() {
	if n.Conn != nil {
		n.Conn.Close()
	}
	if n.Server != nil {
		n.Server.Shutdown()
		n.Server.WaitForShutdown()
	}
}

// Durable fsyncs the stopped embedded server's files: a shutdown writes
// everything out but syncs nothing, and in sync interval mode the last
// second of acknowledged messages would otherwise rest on the page cache.
// It returns nil when every file is on disk; call it after Close.
func (n *NATS) Durable() error {
	if n.Server == nil || n.storeDir == "" {
		return errors.New("nats: no embedded server with a store directory")
	}
	return filepath.WalkDir(n.storeDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := f.Sync(); err != nil {
			return fmt.Errorf("nats: sync %s: %w", path, err)
		}
		return nil
	})
}

// Admin is the option that connects another client to the embedded
// server as an admin (the service account, everything allowed): for
// tests and tools in this process. Nil without an embedded server.
func (n *NATS) Admin() nats.Option {
	if n.admin == nil {
		return nil
	}
	return nats.UserJWTAndSeed(n.admin.JWT, n.admin.Seed)
}

// AdminCreds is Admin as the text of a .creds file.
func (n *NATS) AdminCreds() []byte {
	if n.admin == nil {
		return nil
	}
	return n.admin.Creds
}

// ClientURL is the URL other processes use to reach this NATS, when known.
func (n *NATS) ClientURL() string {
	if n.Server != nil {
		return n.Server.ClientURL()
	}
	if n.Conn != nil {
		return n.Conn.ConnectedUrl()
	}
	return ""
}

// StartEmbedded starts an in-process nats-server with JetStream that
// admits only credentials keys issued (docs/design.md, "Principals on the
// bus"); the register's revocations under o.DataDir apply from the start.
func StartEmbedded(o NATSOptions, keys *principal.Keys) (*server.Server, error) {
	if !keys.OwnOperator() {
		// Signing keys of an operator's own accounts: its NATS has the
		// accounts, and askbridge cannot be their operator.
		return nil, &SettingError{fmt.Errorf("nats: the embedded NATS needs askbridge's own operator key; %w: set ASK_NATS_URL to that NATS", principal.ErrNotOwnOperator)}
	}
	host, port := "127.0.0.1", 4222
	if o.Listen != "" {
		h, p, err := net.SplitHostPort(o.Listen)
		if err != nil {
			return nil, fmt.Errorf("nats: listen address %q: %w", o.Listen, err)
		}
		if port, err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("nats: listen port %q is not a number", p)
		}
		if port == 0 {
			port = server.RANDOM_PORT
		}
		host = h
	}
	if port != server.RANDOM_PORT {
		// nats-server keeps a listen error to its log, which is off: the
		// start would wait its ten seconds and say nothing of why.
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("nats: cannot listen on %s (ASK_NATS_LISTEN): %w", addr, err)
		}
		l.Close()
	}
	sopts := &server.Options{
		ServerName: "askbridge",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   o.StoreDir,
		SyncAlways: o.SyncAlways,
		NoSigs:     true,
		NoLog:      true,
	}
	if (!o.SyncAlways || o.AsyncPersist) && o.SyncInterval > 0 {
		sopts.SyncInterval = o.SyncInterval
	}
	reg, err := principal.OpenRegister(cmp.Or(o.DataDir, o.StoreDir))
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	if err := keys.Configure(sopts, reg.Revocations()); err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	ns, err := server.NewServer(sopts)
	if err != nil {
		return nil, fmt.Errorf("nats: embedded server, its store in %s (ASK_DATA_DIR): %w", o.StoreDir, err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("nats: the embedded server did not start within 10 s on %s (ASK_NATS_LISTEN), its store in %s (ASK_DATA_DIR)",
			cmp.Or(o.Listen, net.JoinHostPort(host, strconv.Itoa(port))), o.StoreDir)
	}
	return ns, nil
}

// streamSpecs are askbridge's durable subjects. Resumes are kept long
// enough for an agent that was down for days to re-attach.
//
// JetStream keeps an index entry in memory for every subject a stream
// holds, one per job here, so a stream that kept every message for its
// maxAge would cost memory for each job long after it ended. Hence the
// retentions:
//
//   - Work queues hold what only the runtime reads, and it keeps what it
//     reads in the store: a message waits until the runtime has
//     acknowledged it (however long it is away, up to maxAge) and goes.
//   - The events stream keeps an event until every consumer with interest
//     in it has acknowledged it (the chat adapters', see EventConsumer),
//     at most maxAge: a pending question whose cards are shown leaves
//     nothing in it. An event published while no consumer exists goes at
//     once; the runtime makes the adapters' consumers before it publishes
//     (docs/design.md).
//   - The answers stream is a limits stream: a message that goes writes a
//     tombstone, fsync'd in sync always, and on the answer path that one
//     more fsync cost a fifth of the throughput and the ability to keep up
//     with 1,000 answers a second (docs/benchmarks.md).
//
// async marks the streams written in async persist mode with
// AsyncPersist.
var streamSpecs = []streamSpec{
	{StreamQuestions, PrefixQuestion + ".>", 30 * 24 * time.Hour, jetstream.WorkQueuePolicy, false},
	{StreamCancels, PrefixCancel + ".>", 30 * 24 * time.Hour, jetstream.WorkQueuePolicy, false},
	{StreamAnswers, PrefixAnswer + ".>", 30 * 24 * time.Hour, jetstream.LimitsPolicy, false},
	{StreamEvents, PrefixEvent + ".>", EventRetention, jetstream.InterestPolicy, true},
	{StreamResumes, PrefixResume + ".>", 30 * 24 * time.Hour, jetstream.LimitsPolicy, true},
	{StreamDelivery, PrefixDelivery + ".>", 7 * 24 * time.Hour, jetstream.WorkQueuePolicy, true},
	{StreamExecuted, PrefixExecuted + ".>", 30 * 24 * time.Hour, jetstream.WorkQueuePolicy, false},
	{StreamNotices, PrefixNotice + ".>", 30 * 24 * time.Hour, jetstream.WorkQueuePolicy, false},
}

// StreamNames lists the streams EnsureStreams creates.
func StreamNames() []string {
	names := make([]string, len(streamSpecs))
	for i, s := range streamSpecs {
		names[i] = s.name
	}
	return names
}

// StreamOf names the stream that holds subject; "" for a subject none of
// askbridge's streams holds.
func StreamOf(subject string) string {
	for _, s := range streamSpecs {
		prefix := strings.TrimSuffix(s.subjects, ">")
		if strings.HasPrefix(subject, prefix) && len(subject) > len(prefix) {
			return s.name
		}
	}
	return ""
}

// EventRetention is how long the events stream keeps an event at most:
// one an adapter's consumer has not acknowledged (its adapter is away, or
// its platform switched off) waits that long for it, so an adapter's
// record of what it did for an event must live at least as long.
const EventRetention = 7 * 24 * time.Hour

// EventRecordTTL is how long a front-end keeps its record of what it did
// for an event (a card settled, a DM sent): a day longer than the events
// stream keeps the event, so a consumer reading the stream again finds
// the record and does nothing twice.
const EventRecordTTL = EventRetention + 24*time.Hour

// DuplicateWindow is how long JetStream remembers a Nats-Msg-Id.
const DuplicateWindow = 10 * time.Minute

// StreamOptions shape the streams EnsureStreams makes.
type StreamOptions struct {
	Replicas int
	// AsyncPersist: see NATSOptions.AsyncPersist. It applies to a new
	// stream with one replica only.
	AsyncPersist bool
	// Logger hears what EnsureStreams changed in, or left of, a stream
	// that existed with other settings; nil discards it.
	Logger *slog.Logger
}

// EnsureStreams creates askbridge's streams, or adopts them when they
// exist; safe to call from every replica at every start.
//
// An existing stream keeps what an operator may have tuned (limits on
// bytes or messages, compression, placement, description) and its persist
// mode, which JetStream does not let an update change. askbridge sets only
// what it relies on: its subjects, a duplicate window and a max age at
// least its own, acknowledged publishes, and the replica count asked for.
// Each change is logged; a stream in memory, or one of the work queues
// made with another retention, is refused. The events stream made with
// limits retention is turned into an interest stream (JetStream allows
// that change, not one to or from a work queue).
//
// A stream refused does not keep the others from being made: the error
// names each stream refused. Only JetStream not answering stops the
// round at once.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, o StreamOptions) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var errs []error
	for _, s := range streamSpecs {
		err := ensureStream(ctx, js, s, o)
		if err == nil {
			continue
		}
		errs = append(errs, err)
		if unreachable(ctx, err) {
			// JetStream does not answer now: the other streams would
			// wait out the same silence, one after the other.
			break
		}
	}
	return errors.Join(errs...)
}

// streamSpec is what askbridge wants of one of its streams.
type streamSpec struct {
	name, subjects string
	maxAge         time.Duration
	retention      jetstream.RetentionPolicy
	async          bool
}

// ensureStream creates the stream s, or adopts it as it exists. A stream
// that already has what askbridge relies on is not updated: an update is
// a proposal to the cluster's meta leader, and every replica's heal would
// make one for each stream.
func ensureStream(ctx context.Context, js jetstream.JetStream, s streamSpec, o StreamOptions) error {
	replicas := max(o.Replicas, 1)
	cfg := jetstream.StreamConfig{
		Name:       s.name,
		Subjects:   []string{s.subjects},
		Storage:    jetstream.FileStorage,
		Retention:  s.retention,
		MaxAge:     s.maxAge,
		Duplicates: DuplicateWindow,
		Replicas:   replicas,
	}
	if s.async && o.AsyncPersist && replicas == 1 {
		cfg.PersistMode = jetstream.AsyncPersistMode
	}
	existing, err := js.Stream(ctx, s.name)
	switch {
	case err == nil:
		if o.Replicas == 0 {
			cfg.Replicas = 0 // not asked for: the stream keeps its count
		}
		adopted, changes, err := adoptStream(existing.CachedInfo().Config, cfg)
		if err != nil {
			return err
		}
		if len(changes) == 0 {
			return nil
		}
		o.Logger.Warn("nats: stream "+s.name+" existed with other settings; askbridge changed what it relies on", "changes", strings.Join(changes, "; "))
		if kept := operatorLimits(adopted); len(kept) > 0 {
			o.Logger.Info("nats: stream "+s.name+" keeps the limits it was given", "limits", strings.Join(kept, "; "))
		}
		cfg = adopted
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("nats: stream %s: %w", s.name, err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("nats: stream %s: %w", s.name, replicasRefused(err, replicas))
	}
	return nil
}

// unreachable reports whether err is JetStream not answering at all (or
// ctx ended), rather than a refusal of one stream.
func unreachable(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrConnectionClosed)
}

// JetStream's refusals of a replica count (nats-server's error codes).
const (
	jsErrReplicasNotSupported  = 10074 // replicas > 1 not supported in non-clustered mode
	jsErrInsufficientResources = 10023
)

// replicasRefused explains JetStream's refusal of a replica count in the
// terms of ASK_NATS_REPLICAS; other errors are returned as they are.
func replicasRefused(err error, replicas int) error {
	var apiErr *jetstream.APIError
	if replicas <= 1 || !errors.As(err, &apiErr) {
		return err
	}
	switch apiErr.ErrorCode {
	case jsErrReplicasNotSupported:
		return &SettingError{fmt.Errorf("ASK_NATS_REPLICAS is %d, but the NATS server at ASK_NATS_URL is not part of a JetStream cluster and keeps one copy of a stream: "+
			"set ASK_NATS_REPLICAS=1, or point ASK_NATS_URL at a cluster of at least %d servers (%w)", replicas, replicas, err)}
	case jsErrInsufficientResources:
		return &SettingError{fmt.Errorf("ASK_NATS_REPLICAS is %d, and the NATS cluster at ASK_NATS_URL has not that many JetStream servers with room for a copy: "+
			"lower ASK_NATS_REPLICAS, or add servers or storage (%w)", replicas, err)}
	}
	return err
}

// ConnectError is a NATS that could not be connected to at all: nothing
// answered at the URL, or the server refused the credentials. Callers name
// the setting the URL came from (serve: ASK_NATS_URL).
type ConnectError struct{ Err error }

// inProcessHandshake bounds the connection handshake with the embedded
// server.
const inProcessHandshake = 30 * time.Second

func (e *ConnectError) Error() string { return "nats: connect: " + e.Err.Error() }
func (e *ConnectError) Unwrap() error { return e.Err }

// SettingError is a setting that only the NATS server can judge, refused
// by it (ASK_NATS_REPLICAS above what it has): the service stops as for
// any bad setting, naming it.
type SettingError struct{ Err error }

func (e *SettingError) Error() string { return e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// adoptStream is the configuration an existing stream (have) is updated
// to: have, with what askbridge relies on taken from want, and each
// change said in words. A stream askbridge cannot use is refused.
func adoptStream(have, want jetstream.StreamConfig) (jetstream.StreamConfig, []string, error) {
	if have.Storage != jetstream.FileStorage {
		return have, nil, fmt.Errorf("nats: stream %s exists with %s storage, and askbridge keeps questions and answers on disk "+
			"(JetStream cannot change a stream's storage): delete the stream while askbridge is stopped and idle to have it made anew", have.Name, have.Storage)
	}
	if want.Retention == jetstream.WorkQueuePolicy && have.Retention != jetstream.WorkQueuePolicy {
		return have, nil, fmt.Errorf("nats: stream %s exists with %s retention, and askbridge keeps what only its runtime reads in a work queue "+
			"(JetStream cannot change a stream's retention): delete the stream while askbridge is stopped and idle to have it made anew", have.Name, have.Retention)
	}
	if want.Retention == jetstream.InterestPolicy && have.Retention == jetstream.WorkQueuePolicy {
		return have, nil, fmt.Errorf("nats: stream %s exists with %s retention, and askbridge keeps it until every adapter has read it (interest retention) "+
			"(JetStream cannot change a work queue's retention): delete the stream while askbridge is stopped and idle to have it made anew", have.Name, have.Retention)
	}
	out := have
	var changes []string
	if want.Retention == jetstream.InterestPolicy && have.Retention == jetstream.LimitsPolicy {
		// Messages every consumer has acknowledged go at once; those one
		// has not stay for it.
		out.Retention = want.Retention
		changes = append(changes, fmt.Sprintf("retention %s -> %s (an event goes once every consumer has acknowledged it)", have.Retention, want.Retention))
	}
	if !slices.Equal(have.Subjects, want.Subjects) {
		out.Subjects = want.Subjects
		changes = append(changes, fmt.Sprintf("subjects %v -> %v", have.Subjects, want.Subjects))
	}
	if have.Duplicates < want.Duplicates {
		out.Duplicates = want.Duplicates
		changes = append(changes, fmt.Sprintf("duplicate window %v -> %v", have.Duplicates, want.Duplicates))
	}
	// A longer max age only keeps more; none at all would keep every
	// message (and its subject's index entry) for ever.
	if have.MaxAge == 0 || have.MaxAge < want.MaxAge {
		out.MaxAge = want.MaxAge
		changes = append(changes, fmt.Sprintf("max age %v -> %v", ageWords(have.MaxAge), want.MaxAge))
	}
	if have.NoAck {
		out.NoAck = false
		changes = append(changes, "publishes acknowledged again (no_ack was set)")
	}
	if want.Replicas != 0 && have.Replicas != want.Replicas {
		out.Replicas = want.Replicas
		changes = append(changes, fmt.Sprintf("replicas %d -> %d (ASK_NATS_REPLICAS)", have.Replicas, want.Replicas))
	}
	return out, changes, nil
}

func ageWords(d time.Duration) string {
	if d == 0 {
		return "unlimited"
	}
	return d.String()
}

// operatorLimits says which limits beyond askbridge's a stream carries:
// when reached, JetStream drops or refuses messages askbridge keeps.
func operatorLimits(c jetstream.StreamConfig) []string {
	var out []string
	if c.MaxBytes > 0 {
		out = append(out, fmt.Sprintf("max bytes %d", c.MaxBytes))
	}
	if c.MaxMsgs > 0 {
		out = append(out, fmt.Sprintf("max messages %d", c.MaxMsgs))
	}
	if c.MaxMsgsPerSubject > 0 {
		out = append(out, fmt.Sprintf("max messages per subject %d", c.MaxMsgsPerSubject))
	}
	if c.MaxMsgSize > 0 {
		out = append(out, fmt.Sprintf("max message size %d", c.MaxMsgSize))
	}
	return out
}

// CheckStreams reports the first missing stream, for readiness.
func CheckStreams(ctx context.Context, js jetstream.JetStream) error {
	checks := make([]func() error, len(streamSpecs))
	for i, s := range streamSpecs {
		checks[i] = func() error {
			if _, err := js.Stream(ctx, s.name); err != nil {
				return fmt.Errorf("nats: stream %s: %w", s.name, err)
			}
			return nil
		}
	}
	return CheckAll(checks...)
}

// CheckAll runs the checks at once and returns the first error in their
// order, or nil: a readiness probe waits about one round trip to NATS,
// not one for each stream and consumer (a probe's timeout is often a
// second).
func CheckAll(checks ...func() error) error {
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, check := range checks {
		wg.Go(func() { errs[i] = check() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Publish publishes v as JSON on a durable subject with Nats-Msg-Id set,
// and waits for JetStream's acknowledgement.
func Publish(ctx context.Context, js jetstream.JetStream, subject, msgID string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("nats: encode %s: %w", subject, err)
	}
	return PublishRaw(ctx, js, subject, msgID, data)
}

// AckWithin bounds how long a durable publish waits for JetStream's
// acknowledgement. One comes in milliseconds; a publish that reached a
// stream's leader as it died never gets one, and without a bound would
// wait out its caller's whole deadline (an adapter's handler has 90 s),
// holding the job's later events back long after a new leader took
// over. Its caller tries again, under the same message id.
const AckWithin = 5 * time.Second

// PublishRaw is Publish for an already encoded body.
func PublishRaw(ctx context.Context, js jetstream.JetStream, subject, msgID string, data []byte) error {
	if msgID == "" {
		return errors.New("nats: durable publish without a message id")
	}
	ctx, cancel := context.WithTimeout(ctx, AckWithin)
	defer cancel()
	if _, err := js.Publish(ctx, subject, data, jetstream.WithMsgID(msgID)); err != nil {
		return fmt.Errorf("nats: publish %s: %w", subject, err)
	}
	return nil
}
