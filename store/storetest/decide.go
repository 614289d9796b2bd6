package storetest

import "testing"

// RunDecide runs the decide tests.
func RunDecide(t *testing.T, open Open) {
	run(t, open, map[string]func(t *testing.T, s Store){})
}
