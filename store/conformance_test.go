package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/askbridge/askbridge/internal/testenv/sqliterecord"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/store/storetest"
)

// TestConformance runs the store conformance suite against SQLite.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Store {
		t.Helper()
		path := filepath.Join(t.TempDir(), "askbridge.db")
		if err := sqliterecord.Seed(path); err != nil {
			t.Fatal(err)
		}
		s, err := store.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
