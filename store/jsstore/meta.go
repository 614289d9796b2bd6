package jsstore

import (
	"context"
	"fmt"
)

// Meta reads a value the runtime keeps about itself, under meta.<key>; ""
// when there is none.
func (s *Store) Meta(ctx context.Context, key string) (string, error) {
	v, _, ok, err := s.get(ctx, keyMeta(key))
	if err != nil {
		return "", fmt.Errorf("jsstore: meta %s: %w", key, err)
	}
	if !ok {
		return "", nil
	}
	return string(v), nil
}

// SetMeta writes a value the runtime keeps about itself. The last write
// wins, as SQLite's upsert: no value depends on the one before it.
func (s *Store) SetMeta(ctx context.Context, key, value string) error {
	t := &txn{}
	t.putBlind(keyMeta(key), []byte(value), 0)
	if err := s.commit(ctx, t); err != nil {
		return fmt.Errorf("jsstore: set meta %s: %w", key, err)
	}
	return nil
}
