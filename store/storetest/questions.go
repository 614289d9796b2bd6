package storetest

import "testing"

// RunQuestions runs the questions tests.
func RunQuestions(t *testing.T, open Open) {
	run(t, open, map[string]func(t *testing.T, s Store){})
}
