// Package engine is what the chat adapters share of a card's lifecycle:
// the loop that consumes the runtime's events, in order per job, with one
// retry policy (backoff, a platform's Retry-After, deferring), and that
// hands events back on shutdown only once it no longer pulls. A job
// waiting for its channel's turn (Hold) is put aside without holding its
// worker. Each
// adapter supplies its event handler and how to read its platform's
// errors (Classify); the loop knows no platform.
package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// Kind is how an error of a handler may be retried.
type Kind int

const (
	// Transient errors may pass: the event is tried again after a backoff.
	Transient Kind = iota
	// RateLimited errors carry the platform's Retry-After: the event is
	// tried again no sooner.
	RateLimited
	// Permanent errors never pass: the event is logged and acknowledged.
	Permanent
)

// Verdict is a platform's reading of an error.
type Verdict struct {
	Kind       Kind
	RetryAfter time.Duration // RateLimited: how long the platform asked to wait
}

// Later asks for the event again after a pause, without counting as a
// failure: another replica holds a fresh claim, or a resource is held.
// An event put off is never dropped, even on its last delivery.
type Later struct {
	After time.Duration // 0: the loop's backoff
	Why   string
}

func (e *Later) Error() string { return "retry later: " + e.Why }

// Delivery is what a handler knows of its event's delivery.
type Delivery struct {
	Attempt uint64 // 1 for the first delivery
	// Last says the event has been tried MaxDeliveries times: the handler
	// reports a transient failure (a delivery failure) rather than return it.
	Last bool
}

// Handler applies one event. It must be idempotent: an event may come
// again after a restart, a redelivery or from a second replica.
type Handler func(ctx context.Context, ev *bridge.Event, d Delivery) error

// Defaults of a Loop.
const (
	// DefaultWorkers: a worker mostly waits (on the platform's HTTP API, on
	// JetStream's acknowledgements), so many keep the asking path busy.
	DefaultWorkers       = 32
	DefaultMaxDeliveries = 6
	// DefaultGiveUpAfter bounds the deliveries of an event whose handler
	// keeps returning a transient error after its last try (NATS or the
	// key-value store away): about 35 minutes at the backoff's cap.
	DefaultGiveUpAfter   = 20
	DefaultHandleTimeout = 90 * time.Second
	// handBackWait bounds how long a stop waits for the pull subscription
	// to end before handing an event back all the same.
	handBackWait = 5 * time.Second
	// handBackDelay is how soon an event handed back comes again.
	handBackDelay = time.Second
)

// Backoff is the pause before the attempt after attempt: 2 s, 8 s, 18 s,
// 32 s, 50 s, then at most 2 minutes.
func Backoff(attempt uint64) time.Duration {
	return min(time.Duration(attempt*attempt)*2*time.Second, 2*time.Minute)
}

// Loop consumes the runtime's events for one adapter.
type Loop struct {
	Name     string          // the adapter, first word of every log line ("slack")
	Events   *bridge.Durable // the adapter's durable consumer on bridge.StreamEvents
	Handle   Handler
	Classify func(error) Verdict // nil: every error is Transient
	Logger   *slog.Logger
	// PullMax bounds the events buffered from JetStream (0: 64).
	PullMax int
	// Workers handle events at once; a job's events go to one of them, in
	// order (0: DefaultWorkers).
	Workers       int
	MaxDeliveries uint64                             // 0: DefaultMaxDeliveries
	GiveUpAfter   uint64                             // 0: DefaultGiveUpAfter
	Backoff       func(attempt uint64) time.Duration // nil: Backoff
	HandleTimeout time.Duration                      // 0: DefaultHandleTimeout

	acks   *delayedAcks
	it     *bridge.Messages
	flight *bridge.InHand
	// onRead, when set, is called with each event read, once it is in
	// hand (a test waits until the loop holds what it was sent).
	onRead func(jetstream.Msg)
}

// pullExpiry is how long a pull waits on a consumer whose pin lapses
// after ttl: a third of it, so a live pinned replica pulls again twice
// before it could lose its pin; at least a second (nats.go's least).
func pullExpiry(ttl time.Duration) time.Duration {
	return min(max(ttl/3, time.Second), 30*time.Second)
}

// QueueOf is the worker queue of an event's subject among workers: one
// job's events all go to one queue, so they are handled in order.
func QueueOf(subject string, workers int) int {
	h := fnv.New32a()
	h.Write([]byte(subject))
	return int(h.Sum32() % uint32(max(workers, 1)))
}

func (l *Loop) workers() int { return cmp.Or(l.Workers, DefaultWorkers) }

func (l *Loop) log() *slog.Logger { return cmp.Or(l.Logger, slog.Default()) }

// Run consumes events until ctx is done; it then returns nil once every
// event in hand is handled or handed back.
func (l *Loop) Run(ctx context.Context) error {
	opts := []jetstream.PullMessagesOpt{jetstream.PullMaxMessages(cmp.Or(l.PullMax, 64))}
	if ttl := l.Events.Config.PinnedTTL; ttl > 0 {
		// The pinned replica must pull again well within the pin's TTL.
		opts = append(opts, jetstream.PullExpiry(pullExpiry(ttl)))
	}
	it, err := l.Events.Messages(ctx, opts...)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%s: %w", l.Name, err)
	}
	// unsubscribed is closed once a stop has ended the pull subscription.
	// Events cut short by the stop are handed back (Nak) only after it: a
	// Nak before would have JetStream redeliver the event at once to this
	// subscription's pending pull, where nobody reads it any more, and the
	// next adapter would get it only after AckWait.
	l.acks = &delayedAcks{}
	l.it = it
	l.flight = bridge.NewInHand()
	l.flight.OnLong = bridge.WarnHeldLong(l.log(), l.Name+": an event",
		"its handler is stuck, or its job waits its turn in a long queue of cards")
	// Kept in progress until every event is acknowledged or handed back,
	// after the stop too.
	keepCtx, stopKeeping := context.WithCancel(context.WithoutCancel(ctx))
	go l.flight.Keep(keepCtx, bridge.ProgressEvery(l.Events.Config.AckWait))
	unsubscribed := make(chan struct{})
	var wg sync.WaitGroup
	queues := make([]*queue, l.workers())
	for i := range queues {
		queues[i] = newQueue()
		in := make(chan jetstream.Msg, 16)
		go queues[i].feed(in)
		w := &worker{l: l, ctx: ctx, unsubscribed: unsubscribed}
		wg.Go(func() { w.run(in) })
	}
	defer func() {
		for _, q := range queues {
			q.close()
		}
		wg.Wait()
		l.acks.stop()
		stopKeeping()
	}()
	// A stop drains the pull: the events already delivered to this client
	// are read and handed back with the rest (dropped, they would come
	// again only after AckWait).
	stop := context.AfterFunc(ctx, it.Drain)
	defer stop()
	l.read(ctx, it, queues)
	if ctx.Err() != nil {
		l.unpin()
	}
	close(unsubscribed)
	return nil
}

// read queues the events it pulls to their workers until the pull ends.
func (l *Loop) read(ctx context.Context, it *bridge.Messages, queues []*queue) {
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return
			}
			l.log().WarnContext(ctx, l.Name+": reading events", "err", err)
			select { // do not spin while NATS is away
			case <-time.After(time.Second):
			case <-ctx.Done():
				return
			}
			continue
		}
		// Even after a stop: the job's worker hands it back behind the
		// job's events before it, so the next replica gets them in order.
		queues[QueueOf(m.Subject(), len(queues))].push(l.flight.Hold(m))
		if l.onRead != nil {
			l.onRead(m)
		}
	}
}

// handBack returns an event when the adapter stops, to whoever runs
// next, once this adapter no longer pulls. Without a pin, the pause
// covers the moment the server may still hold this subscription's pull
// request after the unsubscribe: a redelivery at once can go to it, and
// then waits for the consumer's AckWait. With one (bridge.EventConsumer),
// the pin is released first (unpin) and the event handed back at once,
// the server confirming each in turn: the next replica gets the events
// handed back in the order they were, before the stream's later ones.
func (l *Loop) handBack(m jetstream.Msg, unsubscribed <-chan struct{}) {
	select {
	case <-unsubscribed:
	case <-time.After(handBackWait):
		l.log().Warn(l.Name+": the pull had not ended "+handBackWait.String()+" into the stop; handing an event back all the same",
			"subject", m.Subject())
	}
	if l.it == nil || !l.it.Pinned() || l.Events.NATS == nil {
		_ = m.NakWithDelay(handBackDelay)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), handBackWait)
	defer cancel()
	if h, ok := m.(*bridge.Held); ok {
		h.LetGo()
	}
	if _, err := l.Events.NATS.Conn.RequestWithContext(ctx, m.Reply(), []byte("-NAK")); err != nil {
		_ = m.Nak()
	}
}

// unpin lets another replica take the events over at once when this one
// stops, rather than after the pin's TTL. It comes before the events in
// hand are handed back: handed back while this replica still held the
// pin, JetStream would turn its redelivery queue round each time it
// found only the other replica's pull waiting, and they would reach it
// out of order.
func (l *Loop) unpin() {
	ctx, cancel := context.WithTimeout(context.Background(), handBackWait)
	defer cancel()
	if err := l.it.Unpin(ctx); err != nil {
		l.log().Warn(l.Name+": could not hand the events over to another replica; it takes them over once the pin lapses", "err", err)
	}
}

// handle applies one event and acknowledges, retries or hands it back;
// it reports instead when the handler asked to put its job aside (Hold),
// and until when.
func (l *Loop) handle(ctx context.Context, h *inHand, unsubscribed <-chan struct{}) (until time.Time, held bool) {
	m, log := h.m, l.log()
	if ctx.Err() != nil {
		l.handBack(m, unsubscribed)
		return time.Time{}, false
	}
	var ev bridge.Event
	if err := json.Unmarshal(m.Data(), &ev); err != nil {
		log.ErrorContext(ctx, l.Name+": dropping an undecodable event", "subject", m.Subject(), "err", err)
		_ = m.Term()
		return time.Time{}, false
	}
	d := Delivery{Attempt: 1}
	if md, err := m.Metadata(); err == nil {
		d.Attempt = md.NumDelivered
	}
	d.Last = d.Attempt >= cmp.Or(l.MaxDeliveries, DefaultMaxDeliveries)
	hctx, cancel := context.WithTimeout(WithReserved(ctx, &h.reserved), cmp.Or(l.HandleTimeout, DefaultHandleTimeout))
	err := l.Handle(hctx, &ev, d)
	cancel()
	if err == nil {
		if at := h.reserved.ackTime(); at.After(time.Now()) {
			l.acks.ack(m, at)
		} else {
			_ = m.Ack()
		}
		return time.Time{}, false
	}
	if ctx.Err() != nil {
		l.handBack(m, unsubscribed)
		return time.Time{}, false
	}
	var hold *Hold
	if errors.As(err, &hold) {
		log.DebugContext(ctx, l.Name+": job put aside", "type", ev.Type, "job", ev.JobID, "question", ev.QuestionID, "until", hold.Until, "why", hold.Why)
		if now := time.Now(); hold.Until.Before(now) {
			return now, true
		}
		return hold.Until, true
	}
	delay, ok := l.retry(ctx, log, &ev, d, err)
	if !ok {
		_ = m.Ack()
		return time.Time{}, false
	}
	_ = m.NakWithDelay(delay)
	return time.Time{}, false
}

// retry says when the event whose handler failed with err comes again,
// or false when it is dropped, and logs which.
func (l *Loop) retry(ctx context.Context, log *slog.Logger, ev *bridge.Event, d Delivery, err error) (time.Duration, bool) {
	backoff := Backoff(d.Attempt)
	if l.Backoff != nil {
		backoff = l.Backoff(d.Attempt)
	}
	attrs := []any{"type", ev.Type, "tenant", ev.Tenant, "job", ev.JobID, "question", ev.QuestionID, "attempt", d.Attempt}
	var later *Later
	if errors.As(err, &later) {
		delay := cmp.Or(later.After, backoff)
		log.InfoContext(ctx, l.Name+": event deferred", append(attrs, "why", later.Why, "retry_in", delay)...)
		return delay, true
	}
	v := Verdict{Kind: Transient}
	if l.Classify != nil {
		v = l.Classify(err)
	}
	switch {
	case v.Kind == Permanent:
		log.ErrorContext(ctx, l.Name+": event not handled; dropped", append(attrs, "err", err)...)
		return 0, false
	case d.Attempt >= cmp.Or(l.GiveUpAfter, DefaultGiveUpAfter):
		log.ErrorContext(ctx, l.Name+": event kept failing; dropped", append(attrs, "err", err)...)
		return 0, false
	case v.Kind == RateLimited:
		// Never sooner than the platform asked: a try before its
		// Retry-After is refused again, and counts against the app.
		delay := max(backoff, v.RetryAfter)
		log.InfoContext(ctx, l.Name+": event deferred", append(attrs, "why", err.Error(), "retry_after", v.RetryAfter, "retry_in", delay)...)
		return delay, true
	}
	log.WarnContext(ctx, l.Name+": event failed; will retry", append(attrs, "retry_in", backoff, "err", err)...)
	return backoff, true
}
