package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/store/jsstore"
)

// migrate moves a single node's SQLite record into JetStream
// (docs/deploy.md, "Moving a single node into a cluster"): askbridge
// migrate --to jetstream, with the service stopped.
func (c *cli) migrate(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("askbridge migrate", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	to := fs.String("to", "", "the store to move the record into: jetstream")
	natsURL := fs.String("nats", "", "NATS server URL(s), comma-separated (default ASK_NATS_URL, else the embedded server in ASK_DATA_DIR)")
	if code, ok := c.parse(fs, args, false); !ok {
		return code
	}
	if *to != "jetstream" || fs.NArg() > 0 {
		return c.usageError("migrate", "the only store to move to is jetstream: give --to jetstream, and no arguments")
	}
	cfg, ok := loadConfig(c.stderr, "askbridge migrate: ")
	if !ok {
		return exitConfig
	}
	if *natsURL != "" {
		cfg.NATSURL = *natsURL
	}
	dbPath := filepath.Join(cfg.DataDir, "askbridge.db")
	if _, err := os.Stat(dbPath); err != nil {
		fmt.Fprintf(c.stderr, "askbridge migrate: no SQLite record at %s (ASK_DATA_DIR is %s): %v\n", dbPath, cfg.DataDir, err)
		return exitConfig
	}
	sq, err := store.Open(ctx, dbPath)
	if err != nil {
		fmt.Fprintf(c.stderr, "askbridge migrate: open %s: %v\n", dbPath, err)
		return exitError
	}
	defer sq.Close()
	n, err := bridge.ConnectNATS(ctx, bridge.NATSOptions{
		URL: cfg.NATSURL, Creds: cfg.NATSCreds, Listen: cfg.NATSListen, StoreDir: filepath.Join(cfg.DataDir, "nats"), DataDir: cfg.DataDir,
		SyncAlways: true, Replicas: cfg.NATSReplicas, Name: "askbridge-migrate",
	})
	if err != nil {
		fmt.Fprintf(c.stderr, "askbridge migrate: connect to NATS: %v\n", err)
		return exitError
	}
	defer n.Close()
	js, err := jsstore.Open(ctx, n.Conn, jsstore.Options{Replicas: cfg.NATSReplicas})
	if err != nil {
		fmt.Fprintf(c.stderr, "askbridge migrate: %v\n", err)
		return exitError
	}
	defer js.Close()
	imp, err := jsstore.NewImporter(ctx, js)
	if errors.Is(err, jsstore.ErrNotEmpty) {
		fmt.Fprintf(c.stderr, "askbridge migrate: %v: a record is moved only into an empty one; nothing was written\n", err)
		return exitError
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "askbridge migrate: %v\n", err)
		return exitError
	}
	if err := sq.Export(ctx, imp); err != nil {
		fmt.Fprintf(c.stderr, "askbridge migrate: %v\n", err)
		return exitError
	}
	got, err := imp.Finish(ctx)
	if err != nil {
		fmt.Fprintf(c.stderr, "askbridge migrate: %v\n", err)
		return exitError
	}
	fmt.Fprintf(c.stdout, "Moved %d questions (%d pending), %d jobs, %d proposals, %d job log entries and %d unpublished messages into JetStream.\n"+
		"Start askbridge with ASK_STORE=jetstream and ASK_NATS_URL set as here.\n",
		got.Questions, got.Pending, got.Jobs, got.Proposals, got.Log, got.Outbox)
	return exitOK
}
