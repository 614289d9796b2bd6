package testenv

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
)

// LockedBuffer is a bytes.Buffer safe to write from several goroutines, such
// as the ones os/exec starts to copy a child process's output.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// FailureLogger is a logger at info level whose lines t prints if it
// fails, and drops if it passes.
func FailureLogger(t testing.TB) *slog.Logger {
	t.Helper()
	buf := &LockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the log:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(buf, nil))
}
