package bridge

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// InHand is the messages a reader of a consumer holds and has not
// acknowledged yet: queued, being handled, waiting for a commit or for
// their turn. askbridge's consumers have a short AckWait, so that what a
// dead replica held comes to another within seconds; a live one keeps
// what it holds however long it takes, telling JetStream each message is
// in progress every third of the AckWait (docs/design.md, "Failover").
// The runtime's consumers and the chat adapters' events share it.
type InHand struct {
	mu   sync.Mutex
	msgs map[*Held]struct{}
	next uint64

	// OnLong, when set, hears once of each message held LongInHand: while
	// this reader lives JetStream hands it to no one else, so a handler
	// stuck on it, or its job put aside that long, would be silent.
	OnLong func(m jetstream.Msg, held time.Duration)
	// Now is the clock messages are held by (time.Now when nil).
	Now func() time.Time
}

// LongInHand is how long a message is held before InHand.OnLong hears of
// it: past any handler's timeout, and a chat channel's queue of cards
// that long is worth a word too.
const LongInHand = 5 * time.Minute

// Held is a message in hand. Acknowledging it, negatively or not, lets
// it go first, so no progress goes out for it after its acknowledgement;
// and only its first acknowledgement is sent: a message handed back
// (NakWithDelay) stays handed back when the batch it came in is
// acknowledged, even if sending the hand-back failed.
type Held struct {
	jetstream.Msg
	hand *InHand
	n    uint64 // the order it was read in
	// since is when it was taken in hand; told says OnLong heard of it.
	since time.Time
	told  bool
	// answered is set by its first acknowledgement.
	answered atomic.Bool
}

// NewInHand returns an empty InHand.
func NewInHand() *InHand { return &InHand{msgs: map[*Held]struct{}{}} }

// Hold keeps m in progress until it is acknowledged or let go.
func (f *InHand) Hold(m jetstream.Msg) *Held {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	h := &Held{Msg: m, hand: f, n: f.next, since: f.now()}
	f.msgs[h] = struct{}{}
	return h
}

// Len is how many messages are in hand.
func (f *InHand) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.msgs)
}

// Keep tells JetStream every message in hand is still being worked on,
// every interval, until ctx ends.
func (f *InHand) Keep(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.Progress()
	}
}

// Progress tells JetStream every message in hand is still being worked
// on, in the order read: each one's AckWait then runs out after the one
// before it, and were this replica to die, JetStream would hand them on
// in their order. It holds the lock throughout, so an acknowledgement
// (which lets its message go first) never goes out before a progress
// sent for it: a progress after a Nak would restart the message's
// AckWait, and the message handed back would come again only then.
func (f *InHand) Progress() {
	f.mu.Lock()
	defer f.mu.Unlock()
	msgs := make([]*Held, 0, len(f.msgs))
	for h := range f.msgs {
		msgs = append(msgs, h)
	}
	slices.SortFunc(msgs, func(a, b *Held) int { return cmp.Compare(a.n, b.n) })
	now := f.now()
	for _, h := range msgs {
		_ = h.Msg.InProgress()
		if held := now.Sub(h.since); f.OnLong != nil && !h.told && held >= LongInHand {
			h.told = true
			f.OnLong(h.Msg, held)
		}
	}
}

// WarnHeldLong is an OnLong that logs each message held that long: what
// names the holder and the message ("runtime: a message"), meaning says
// what so long a hold may mean.
func WarnHeldLong(log *slog.Logger, what, meaning string) func(jetstream.Msg, time.Duration) {
	return func(m jetstream.Msg, held time.Duration) {
		log.Warn(what+" held "+held.Round(time.Second).String()+" and not yet done: "+meaning, "subject", m.Subject())
	}
}

func (f *InHand) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// LetGo stops keeping h in progress without acknowledging it: a reader
// that stops, or that hands it back by other means, lets JetStream
// redeliver it once its AckWait has run out.
func (h *Held) LetGo() {
	h.hand.mu.Lock()
	delete(h.hand.msgs, h)
	h.hand.mu.Unlock()
}

// answer lets h go and sends its acknowledgement, the first time only.
func (h *Held) answer(send func() error) error {
	h.LetGo()
	if !h.answered.CompareAndSwap(false, true) {
		return jetstream.ErrMsgAlreadyAckd
	}
	return send()
}

func (h *Held) Ack() error { return h.answer(h.Msg.Ack) }
func (h *Held) DoubleAck(ctx context.Context) error {
	return h.answer(func() error { return h.Msg.DoubleAck(ctx) })
}
func (h *Held) Nak() error { return h.answer(h.Msg.Nak) }
func (h *Held) NakWithDelay(d time.Duration) error {
	return h.answer(func() error { return h.Msg.NakWithDelay(d) })
}
func (h *Held) Term() error { return h.answer(h.Msg.Term) }
func (h *Held) TermWithReason(r string) error {
	return h.answer(func() error { return h.Msg.TermWithReason(r) })
}

// ProgressEvery is how often the messages in hand are kept in progress on
// a consumer with AckWait ackWait: a third of it, so one lost message of
// progress does not lose the message.
func ProgressEvery(ackWait time.Duration) time.Duration {
	if ackWait <= 0 {
		ackWait = 30 * time.Second // JetStream's default
	}
	return max(ackWait/3, 100*time.Millisecond)
}
