// Package storetest is the store conformance suite: behaviour tests that
// run unchanged against every implementation of record.Backend (the SQLite
// store and the JetStream one), so that both keep the same semantics:
// every operation's outcome, its ordering and its idempotency.
//
// The tests see a store only through the record.Backend interface and assert
// what a caller sees (returned values, errors by errors.Is, the outbox),
// never how a store keeps it. Every time in them is explicit (T0 and
// offsets from it, whole milliseconds), and nothing sleeps. The callbacks
// they pass (DecideEach's decide, GateExecute.Decide, Reask's build) only
// read and build, for a store may call them again on a conflict. The
// Race tests run writers at once on one store, as replicas sharing a
// record do.
package storetest

import (
	"testing"

	"github.com/askbridge/askbridge/store/record"
)

// Store is the seam under test.
type Store = record.Backend

// Open returns a new, empty store for one test; it closes the store itself
// when the test ends (t.Cleanup).
type Open func(t *testing.T) Store

// Run runs every area of the suite against the stores open makes.
func Run(t *testing.T, open Open) {
	t.Run("Questions", func(t *testing.T) { RunQuestions(t, open) })
	t.Run("Decide", func(t *testing.T) { RunDecide(t, open) })
	t.Run("Ladder", func(t *testing.T) { RunLadder(t, open) })
	t.Run("Outbox", func(t *testing.T) { RunOutbox(t, open) })
	t.Run("Safety", func(t *testing.T) { RunSafety(t, open) })
	t.Run("Queue", func(t *testing.T) { RunQueue(t, open) })
	t.Run("Trace", func(t *testing.T) { RunTrace(t, open) })
}

// run runs each named test as a parallel subtest, with a store of its own.
func run(t *testing.T, open Open, tests map[string]func(t *testing.T, s Store)) {
	t.Helper()
	for _, name := range sortedKeys(tests) {
		f := tests[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, open(t))
		})
	}
}
