package runtime

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// progressMsg counts the progress acknowledgements of one message.
type progressMsg struct {
	jetstream.Msg
	mu sync.Mutex
	n  int
}

func (m *progressMsg) InProgress() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	return nil
}

func (m *progressMsg) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

// TestInHandKeepsWhatItHoldsInProgress checks that a live runtime keeps
// the messages it holds past the consumers' short AckWait: each is told
// in progress a third of the AckWait apart until it is done, and no more
// after, so a dead runtime's messages come to another within the AckWait
// and a live one's never do.
func TestInHandKeepsWhatItHoldsInProgress(t *testing.T) {
	t.Parallel()
	h := newInHand()
	held, done := &progressMsg{}, &progressMsg{}
	h.hold(held)
	h.hold(done)
	h.done(done)
	if n := h.len(); n != 1 {
		t.Fatalf("%d messages in hand, want 1", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); h.keep(ctx) }()
	// More than one AckWait's worth of progress: held is kept past it.
	deadline := time.Now().Add(time.Minute) // a hang detector
	for held.count() < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("%d progress acknowledgements in a minute", held.count())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-stopped
	if n := done.count(); n != 0 {
		t.Errorf("a message done was told in progress %d times", n)
	}
	if progressEvery > consumerAckWait/3 {
		t.Errorf("progress every %v for an AckWait of %v, want a third of it", progressEvery, consumerAckWait)
	}
}

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

// TestNoProgressAfterAHandBack: a message handed back (let go, then
// Nak'd, as the consumers do) while a progress for it is on its way goes
// out after that progress, never before it: a progress after the Nak
// would restart its AckWait.
func TestNoProgressAfterAHandBack(t *testing.T) {
	t.Parallel()
	h := newInHand()
	m := &slowProgressMsg{progressing: make(chan struct{}), release: make(chan struct{})}
	h.hold(m)
	go h.progress()
	<-m.progressing
	naked := make(chan struct{})
	go func() {
		defer close(naked)
		h.done(m)
		_ = m.NakWithDelay(time.Second)
	}()
	close(m.release)
	select {
	case <-naked:
	case <-time.After(time.Minute): // a hang detector
		t.Fatal("the hand back never went out")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.sent) != 2 || m.sent[0] != "progress" || m.sent[1] != "nak" {
		t.Fatalf("sent %v, want progress then nak", m.sent)
	}
}
