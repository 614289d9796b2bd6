// Package poll holds the one polling helper askbridge's tests use instead of
// sleeping. It imports nothing of askbridge, so the bridge package's own tests
// can use it; other tests reach it as testenv.CheckFor.
package poll

import (
	"testing"
	"time"
)

// Patience is how long a test waits for an asynchronous outcome before it
// calls it a hang: long enough for a 2-core machine under -race with
// other work running (docs/design.md, Testing). It is a hang detector,
// never a measure: a test that passes costs only the time its outcome
// takes, and how long that is belongs in a benchmark.
const Patience = time.Minute

// CheckFor calls f every interval until it returns nil, and fails the test
// with f's last error once timeout has passed. A condition that holds at once
// costs no wait.
func CheckFor(t testing.TB, timeout, interval time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %v: %v", timeout, err)
		}
		time.Sleep(interval)
	}
}
