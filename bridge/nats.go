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
	"strconv"
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
	cred, err := n.credential(o)
	if err != nil {
		n.Close()
		return nil, err
	}
	opts = append(opts, cred...)
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

// credential is how the service connects: in process to the embedded
// server it starts (when o names no URL), with o.Creds, with a credential
// it mints from the keys in its data directory (a cluster that trusts
// askbridge's accounts, docs/deploy.md), or with none. It keeps the
// embedded server and the keys in n.
func (n *NATS) credential(o NATSOptions) ([]nats.Option, error) {
	if o.URL == "" {
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
		self, err := keys.Mint(principal.Spec{Kind: principal.KindAdmin, Name: "askbridge", InProcessOnly: true})
		if err != nil {
			return nil, fmt.Errorf("nats: %w", err)
		}
		if n.admin, err = keys.Mint(principal.Spec{Kind: principal.KindAdmin, Name: "askbridge-admin"}); err != nil {
			return nil, fmt.Errorf("nats: %w", err)
		}
		// The server is in this process: its handshake's timeout only
		// detects a hang. nats.go's 2 s ran out on a loaded machine.
		return []nats.Option{nats.InProcessServer(ns), nats.UserJWTAndSeed(self.JWT, self.Seed), nats.Timeout(inProcessHandshake)}, nil
	}
	if o.Creds != "" {
		return []nats.Option{nats.UserCredentials(o.Creds)}, nil
	}
	keys, err := principal.LoadKeys(cmp.Or(o.DataDir, o.StoreDir))
	if errors.Is(err, principal.ErrNoKeys) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	self, err := keys.Mint(principal.Spec{Kind: principal.KindAdmin, Name: "askbridge"})
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	n.Keys = keys
	return []nats.Option{nats.UserJWTAndSeed(self.JWT, self.Seed)}, nil
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
