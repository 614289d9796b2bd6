package storetest

import "testing"

// RunTrace runs the trace tests.
func RunTrace(t *testing.T, open Open) {
	run(t, open, map[string]func(t *testing.T, s Store){})
}
