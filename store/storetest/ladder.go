package storetest

import "testing"

// RunLadder runs the ladder tests.
func RunLadder(t *testing.T, open Open) {
	run(t, open, map[string]func(t *testing.T, s Store){})
}
