// Package sqliterecord gives tests an empty SQLite record, migrated once
// per test binary.
package sqliterecord

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/askbridge/askbridge/store"
)

// migrated is an empty SQLite record with every migration applied, made
// once per test binary by store.Open: a start copies it rather than
// migrate a new file, which under -race costs each start about 30 ms of
// CPU (the store package's own tests migrate every file they open).
var migrated = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "askbridge-record-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "askbridge.db")
	st, err := store.Open(context.Background(), path)
	if err != nil {
		return nil, err
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	// Closed, the record is the one file: SQLite folds its log in.
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil, errors.New("the migrated record kept a write-ahead log")
	}
	return os.ReadFile(path)
})

// Seed writes an empty, migrated SQLite record at path, unless a
// file is there already (a restart on the same data).
func Seed(path string) error {
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return err
	}
	b, err := migrated()
	if err != nil {
		return fmt.Errorf("sqliterecord: a migrated record: %w", err)
	}
	return os.WriteFile(path, b, 0o600)
}
