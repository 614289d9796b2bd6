package store

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache keeps prepared statements: parsing SQL is a quarter of the
// work of a small query in modernc's SQLite, and the store runs few
// distinct statements many times.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func newStmtCache(db *sql.DB) *stmtCache { return &stmtCache{db: db, m: map[string]*sql.Stmt{}} }

// cached returns the prepared statement for query, if there is one.
func (c *stmtCache) cached(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[query]
}

// get returns a prepared statement, preparing it when needed. Preparing
// takes a connection, so it must not run inside a transaction on the
// one-connection writer pool (the transaction holds that connection), and
// it never runs under the mutex.
func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	if st := c.cached(query); st != nil {
		return st, nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[query]; ok {
		st.Close()
		return old, nil
	}
	c.m[query] = st
	return st, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.m {
		st.Close()
		delete(c.m, q)
	}
}

// exec, query and queryRow run a cached statement outside a transaction.
func (c *stmtCache) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (c *stmtCache) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (c *stmtCache) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := c.get(ctx, query)
	if err != nil {
		// A Row with the preparation error: run the query unprepared, which
		// reports the same error through Scan.
		return c.db.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// txn is a write transaction that runs cached statements. A statement not
// yet cached runs unprepared and is noted, to be prepared after the
// transaction ends (see stmt.get for why not during it).
type txn struct {
	tx     *sql.Tx
	cache  *stmtCache
	misses []string
}

func (t *txn) stmt(ctx context.Context, query string) *sql.Stmt {
	st := t.cache.cached(query)
	if st == nil {
		t.misses = append(t.misses, query)
		return nil
	}
	return t.tx.StmtContext(ctx, st)
}

func (t *txn) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

func (t *txn) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

func (t *txn) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}

// prepareMisses prepares, outside any transaction, what a transaction ran
// unprepared.
func (t *txn) prepareMisses(ctx context.Context) {
	for _, q := range t.misses {
		_, _ = t.cache.get(ctx, q)
	}
	t.misses = nil
}
