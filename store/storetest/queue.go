package storetest

import "testing"

// RunQueue runs the queue tests.
func RunQueue(t *testing.T, open Open) {
	run(t, open, map[string]func(t *testing.T, s Store){})
}
