package storetest

import "testing"

// RunOutbox runs the outbox tests.
func RunOutbox(t *testing.T, open Open) {
	run(t, open, map[string]func(t *testing.T, s Store){})
}
