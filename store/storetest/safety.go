package storetest

import "testing"

// RunSafety runs the safety tests.
func RunSafety(t *testing.T, open Open) {
	run(t, open, map[string]func(t *testing.T, s Store){})
}
