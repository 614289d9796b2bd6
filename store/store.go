// Package store keeps askbridge's durable state in SQLite: questions, jobs,
// answers, the audit trail, attempt dedupe keys, ladder due times and the
// outbox of messages still to publish. Every state change is one
// transaction that also writes the outbox rows announcing it.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is the SQLite store. One writer connection serialises writes; a
// small pool serves reads concurrently under WAL.
type Store struct {
	w  *sql.DB
	r  *sql.DB
	ws *stmtCache
	rs *stmtCache
	// ckpt checkpoints the WAL in the background, so that a commit on the
	// answer path rarely has to (an inline checkpoint fsyncs the database
	// file and was the slowest step of a commit).
	ckpt     *sql.DB
	stopCkpt context.CancelFunc
	ckptDone chan struct{}
	// instance is this database's random id (table meta).
	instance string
	// logPruned is the job log id up to which PruneGateLog has deleted
	// every old gate entry; logPruneMu keeps prunes one at a time.
	logPruneMu sync.Mutex
	logPruned  int64
	// pruneScan is how many old rows a prune reads at a time (pruneScan;
	// tests lower it to prune past one read without writing thousands).
	pruneScan int
	// clarify is the index the clarification measures read (clarify.go).
	clarify clarifyView
}

// checkpointEvery is how often the background checkpoint runs; the writer
// checkpoints inline only when the WAL outgrows walAutoCheckpoint pages.
const (
	checkpointEvery   = 250 * time.Millisecond
	walAutoCheckpoint = 20000
	// readers is how many connections read at once.
	readers = 4
)

// Open opens (creating when needed) the database at path and migrates it.
func Open(ctx context.Context, path string) (*Store, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("store: create %s: %w", dir, err)
		}
	}
	pragmas := "_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_pragma=temp_store(MEMORY)"
	u := url.URL{Scheme: "file", Opaque: url.PathEscape(path)}
	w, err := sql.Open("sqlite", u.String()+"?"+pragmas+"&_txlock=immediate&_pragma=wal_autocheckpoint("+strconv.Itoa(walAutoCheckpoint)+")")
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	r, err := sql.Open("sqlite", u.String()+"?"+pragmas+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// Every reader stays open: a connection database/sql closes as idle
	// costs its pragmas and every cached statement's parse again when the
	// next burst of reads opens it anew.
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	ckpt, err := sql.Open("sqlite", u.String()+"?"+pragmas)
	if err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	ckpt.SetMaxOpenConns(1)
	s := &Store{w: w, r: r, ws: newStmtCache(w), rs: newStmtCache(r), ckpt: ckpt, ckptDone: make(chan struct{}), pruneScan: pruneScan}
	if err := s.migrate(ctx); err != nil {
		close(s.ckptDone)
		s.Close()
		return nil, err
	}
	if err := s.w.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'instance'").Scan(&s.instance); err != nil {
		close(s.ckptDone)
		s.Close()
		return nil, fmt.Errorf("store: read instance id: %w", err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	s.stopCkpt = cancel
	go s.checkpoints(cctx)
	return s, nil
}

// checkpoints copies the WAL into the database file in the background.
// PASSIVE never waits for readers or the writer; what it cannot copy now
// it copies next time.
func (s *Store) checkpoints(ctx context.Context) {
	defer close(s.ckptDone)
	tick := time.NewTicker(checkpointEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			_, _ = s.ckpt.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
		}
	}
}

// Close stops the checkpoints and closes the connections.
func (s *Store) Close() error {
	if s.stopCkpt != nil {
		s.stopCkpt()
	}
	<-s.ckptDone
	s.rs.close()
	s.ws.close()
	return errors.Join(s.r.Close(), s.w.Close(), s.ckpt.Close())
}

// SchemaVersion is the number of migrations applied.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

func (s *Store) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	slices.Sort(names)
	current, err := s.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("store: read schema version: %w", err)
	}
	if current > len(names) {
		return fmt.Errorf("store: database schema version %d is newer than this binary's %d", current, len(names))
	}
	if current == len(names) {
		return nil
	}
	// Every pending migration in one transaction: a new database is made
	// in one commit, and a failed migration leaves the schema as it was.
	return s.tx(ctx, func(tx *txn) error {
		for i := current; i < len(names); i++ {
			body, err := migrations.ReadFile(names[i])
			if err != nil {
				return fmt.Errorf("store: migration %s: %w", names[i], err)
			}
			// Migrations hold several statements: run them unprepared.
			if _, err := tx.tx.ExecContext(ctx, string(body)); err != nil {
				return fmt.Errorf("store: migration %s: %w", names[i], err)
			}
		}
		_, err := tx.tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(len(names)))
		return err
	})
}

// tx runs f in one write transaction (BEGIN IMMEDIATE through the DSN).
func (s *Store) tx(ctx context.Context, f func(*txn) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	t := &txn{tx: tx, cache: s.ws}
	defer t.prepareMisses(ctx)
	if err := f(t); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Ping proves the store takes writes, for readiness.
func (s *Store) Ping(ctx context.Context) error {
	_, err := s.ws.exec(ctx, "INSERT INTO heartbeat (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at", ms(time.Now()))
	if err != nil {
		return fmt.Errorf("store: write heartbeat: %w", err)
	}
	return nil
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// Instance is this database's random id, made when it was created.
func (s *Store) Instance() string { return s.instance }
