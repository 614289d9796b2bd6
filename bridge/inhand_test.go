package bridge

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/internal/testenv/poll"
)

// sentLog is the acknowledgements that went out for some messages, in
// their order.
type sentLog struct {
	mu   sync.Mutex
	sent []string
}

func (l *sentLog) record(s string) {
	l.mu.Lock()
	l.sent = append(l.sent, s)
	l.mu.Unlock()
}

func (l *sentLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.sent)
}

func (l *sentLog) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(slices.DeleteFunc(slices.Clone(l.sent), func(x string) bool { return x != s }))
}

// loggedMsg records its acknowledgements in a sentLog; its progress goes
// out only once release is closed, when release is set.
type loggedMsg struct {
	jetstream.Msg
	name        string
	log         *sentLog
	progressing chan struct{} // closed when a first progress begins, when set
	release     chan struct{}
}

func (m *loggedMsg) InProgress() error {
	if m.progressing != nil {
		close(m.progressing)
		m.progressing = nil
		<-m.release
	}
	m.log.record("progress " + m.name)
	return nil
}

func (m *loggedMsg) Ack() error                       { m.log.record("ack " + m.name); return nil }
func (m *loggedMsg) NakWithDelay(time.Duration) error { m.log.record("nak " + m.name); return nil }

// TestInHandKeepsWhatItHoldsInProgress: what is held is told in progress
// again and again, in the order it was read, until it is acknowledged or
// let go, and never after.
func TestInHandKeepsWhatItHoldsInProgress(t *testing.T) {
	t.Parallel()
	log := &sentLog{}
	hand := NewInHand()
	first := hand.Hold(&loggedMsg{name: "first", log: log})
	second := hand.Hold(&loggedMsg{name: "second", log: log})
	hand.Hold(&loggedMsg{name: "third", log: log})
	gone := hand.Hold(&loggedMsg{name: "gone", log: log})
	_ = gone.Ack()
	hand.Progress()
	if got, want := log.list(), []string{"ack gone", "progress first", "progress second", "progress third"}; !slices.Equal(got, want) {
		t.Fatalf("sent %v, want %v", got, want)
	}

	ctx, cancel := context.WithCancel(context.Background())
	kept := make(chan struct{})
	go func() { defer close(kept); hand.Keep(ctx, time.Millisecond) }()
	poll.CheckFor(t, poll.Patience, time.Millisecond, func() error {
		if n := log.count("progress second"); n < 4 {
			return fmt.Errorf("second told in progress %d times", n)
		}
		return nil
	})
	second.LetGo()
	_ = first.NakWithDelay(time.Second)
	// Third's progress after the hand back proves a round went by.
	after := log.count("progress third")
	poll.CheckFor(t, poll.Patience, time.Millisecond, func() error {
		if log.count("progress third") < after+2 {
			return fmt.Errorf("no round of progress since the hand back")
		}
		return nil
	})
	cancel()
	<-kept
	sent := log.list()
	nak := slices.Index(sent, "nak first")
	if slices.Contains(sent[nak:], "progress first") {
		t.Errorf("first told in progress after its Nak: %v", sent[nak:])
	}
	if n := hand.Len(); n != 1 {
		t.Errorf("%d messages in hand, want 1 (third)", n)
	}
	if n := log.count("progress gone"); n != 0 {
		t.Errorf("a message acknowledged was told in progress %d times", n)
	}
}

// TestNoProgressAfterAHandBack: a message handed back while a progress
// for it is on its way goes out after that progress, never before it: a
// progress after the Nak would restart its AckWait, and the next replica
// would get it only then.
func TestNoProgressAfterAHandBack(t *testing.T) {
	t.Parallel()
	log := &sentLog{}
	hand := NewInHand()
	m := &loggedMsg{name: "m", log: log, progressing: make(chan struct{}), release: make(chan struct{})}
	progressing := m.progressing
	h := hand.Hold(m)
	go hand.Progress()
	<-progressing
	naked := make(chan struct{})
	go func() {
		defer close(naked)
		_ = h.NakWithDelay(time.Second)
	}()
	close(m.release)
	select {
	case <-naked:
	case <-time.After(poll.Patience): // a hang detector
		t.Fatal("the hand back never went out")
	}
	if got := log.list(); !slices.Equal(got, []string{"progress m", "nak m"}) {
		t.Fatalf("sent %v, want progress then nak", got)
	}
	if n := hand.Len(); n != 0 {
		t.Fatalf("%d messages still in hand after the hand back", n)
	}
}

func TestProgressEvery(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ ackWait, want time.Duration }{
		{4 * time.Second, 4 * time.Second / 3},
		{0, 10 * time.Second}, // JetStream's default AckWait, 30 s
		{150 * time.Millisecond, 100 * time.Millisecond},
	} {
		if got := ProgressEvery(c.ackWait); got != c.want {
			t.Errorf("ProgressEvery(%v) = %v, want %v", c.ackWait, got, c.want)
		}
	}
}

// TestLongInHandIsToldOnce: a message held LongInHand is told of
// once, with how long it was held; one acknowledged before is never, nor
// is one held less long.
func TestLongInHandIsToldOnce(t *testing.T) {
	t.Parallel()
	log := &sentLog{}
	now := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	var told []string
	hand := NewInHand()
	hand.Now = func() time.Time { return now }
	hand.OnLong = func(m jetstream.Msg, held time.Duration) {
		told = append(told, fmt.Sprintf("%s %v", m.(*loggedMsg).name, held))
	}
	hand.Hold(&loggedMsg{name: "old", log: log})
	acked := hand.Hold(&loggedMsg{name: "acked", log: log})
	now = now.Add(time.Minute)
	hand.Hold(&loggedMsg{name: "young", log: log})
	_ = acked.Ack()
	now = now.Add(LongInHand - time.Minute)
	hand.Progress()
	hand.Progress()
	if want := []string{"old 5m0s"}; !slices.Equal(told, want) {
		t.Fatalf("told of %v, want %v", told, want)
	}
	now = now.Add(time.Minute)
	hand.Progress()
	if want := []string{"old 5m0s", "young 5m0s"}; !slices.Equal(told, want) {
		t.Fatalf("told of %v, want %v", told, want)
	}
}
