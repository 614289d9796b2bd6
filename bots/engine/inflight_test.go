package engine

import (
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/internal/testenv"
)

// slowProgressMsg records the acknowledgements sent for it, in the order
// they go out; its progress goes out only once the test lets it.
type slowProgressMsg struct {
	jetstream.Msg
	progressing chan struct{} // closed when a progress begins
	release     chan struct{} // the progress goes out once this is closed
	mu          sync.Mutex
	sent        []string
}

func (m *slowProgressMsg) InProgress() error {
	close(m.progressing)
	<-m.release
	m.record("progress")
	return nil
}

func (m *slowProgressMsg) NakWithDelay(time.Duration) error {
	m.record("nak")
	return nil
}

func (m *slowProgressMsg) record(s string) {
	m.mu.Lock()
	m.sent = append(m.sent, s)
	m.mu.Unlock()
}

func (m *slowProgressMsg) order() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.sent...)
}

// TestNoProgressAfterAHandBack: an event handed back while a progress
// for it is on its way goes out after that progress, never before it (a
// progress after the Nak would restart the event's AckWait, and the next
// replica would get it only then).
func TestNoProgressAfterAHandBack(t *testing.T) {
	t.Parallel()
	f := newInFlight()
	m := &slowProgressMsg{progressing: make(chan struct{}), release: make(chan struct{})}
	h := f.hold(m)
	go f.progress()
	<-m.progressing
	naked := make(chan struct{})
	go func() {
		defer close(naked)
		_ = h.NakWithDelay(time.Second)
	}()
	close(m.release)
	select {
	case <-naked:
	case <-time.After(testenv.Patience):
		t.Fatal("the hand back never went out")
	}
	if got := m.order(); len(got) != 2 || got[0] != "progress" || got[1] != "nak" {
		t.Fatalf("sent %v, want progress then nak", got)
	}
	if f.len() != 0 {
		t.Fatalf("%d events still in hand after the hand back", f.len())
	}
}
