package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// EnsureStreams makes askbridge's streams again, with the options they
// were first made with, where they are gone (a NATS server that restarted
// without its store); streams that exist are left as they are.
//
// It waits remakePause first: nats-server removes a deleted stream's files
// after it answers the delete, and a stream made again under the same name
// in that moment can fail ("error creating store for stream") or lose its
// files and acknowledge nothing (docs/benchmarks.md, the test suite).
func (n *NATS) EnsureStreams(ctx context.Context) error {
	err := CheckStreams(ctx, n.JS)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(remakePause):
		}
		return EnsureStreams(ctx, n.JS, n.streams)
	}
	return err
}

// remakePause is how long a stream found gone stays gone before it is made
// again. 500 ms was not enough on a 2-core machine beside two CPU burners
// and the test suite: a stream made again then lost its directory to the
// old one's removal. A heal looks every 5 s anyway.
const remakePause = 2 * time.Second

// Gone says err means JetStream no longer holds what askbridge made: a
// consumer, a stream or a key-value bucket was deleted, or the NATS server
// restarted without its store. Such state is made again (Heal); waiting
// would not bring it back.
func Gone(err error) bool {
	return errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted) ||
		errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders)
}

// Durable is a front-end's durable consumer that is made again when it
// is gone: its stream (askbridge's streams), whatever else Remake makes
// (the front-end's buckets), then the consumer itself.
type Durable struct {
	NATS   *NATS
	Stream string
	Config jetstream.ConsumerConfig
	// Remake makes the caller's other JetStream state again; nil: none.
	Remake func(context.Context) error
	// Look looks for that other state (the front-end's buckets): an error
	// Gone accepts has it made again (Remake), although the consumer is
	// there. nil: only the consumer is looked for.
	Look   func(context.Context) error
	Logger *slog.Logger
	// HealEvery is how often the consumer is looked for; 0: HealEvery.
	HealEvery time.Duration
}

// Ensure creates or updates the consumer. When the server refuses but the
// consumer is there, it is taken as it is: the runtime makes the chat
// adapters' consumers too (EventConsumer), and a consumer deleted and made
// again at once under its name can leave the server failing to write the
// new one's files (it then works, and is made again after a restart).
func (d *Durable) Ensure(ctx context.Context) (jetstream.Consumer, error) {
	c, err := d.NATS.JS.CreateOrUpdateConsumer(ctx, d.Stream, d.Config)
	if err == nil {
		return c, nil
	}
	if there, lookErr := d.NATS.JS.Consumer(ctx, d.Stream, d.Config.Durable); lookErr == nil {
		d.log().Warn("nats: consumer "+d.Config.Durable+" on "+d.Stream+" could not be updated; reading from it as it is", "err", err)
		return there, nil
	}
	return nil, fmt.Errorf("consumer %s on %s: %w", d.Config.Durable, d.Stream, err)
}

func (d *Durable) log() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}

// heal makes the streams, the caller's state and the consumer again.
func (d *Durable) heal(ctx context.Context) (jetstream.Consumer, error) {
	if err := d.NATS.EnsureStreams(ctx); err != nil {
		return nil, err
	}
	if d.Remake != nil {
		if err := d.Remake(ctx); err != nil {
			return nil, err
		}
	}
	return d.Ensure(ctx)
}

// Messages is Consumer.Messages on the durable consumer, which comes
// back by itself when the consumer was deleted or the server lost it.
func (d *Durable) Messages(ctx context.Context, opts ...jetstream.PullMessagesOpt) (*Messages, error) {
	c, err := d.Ensure(ctx)
	if err != nil {
		return nil, err
	}
	// A consumer the server lost sends no heartbeats: Next says so,
	// and the consumer is looked for.
	opts = append(opts, jetstream.WithMessagesErrOnMissingHeartbeat(true))
	m := &Messages{d: d, ctx: ctx, opts: opts, done: make(chan struct{})}
	it, err := m.pull(c)
	if err != nil {
		return nil, err
	}
	m.it, m.c, m.created = it, c, ConsumerCreated(ctx, c)
	go m.watch()
	return m, nil
}

// pull starts pulling from c, in c's priority group when it has one
// (EventConsumer's pinned group), and notes the group.
func (m *Messages) pull(c jetstream.Consumer) (jetstream.MessagesContext, error) {
	group := priorityGroup(c.CachedInfo(), m.d.Config)
	opts := m.opts
	if group != "" {
		opts = append(slices.Clip(opts), jetstream.PullPriorityGroup(group))
	}
	it, err := c.Messages(opts...)
	if err != nil {
		return nil, fmt.Errorf("consume %s: %w", m.d.Stream, err)
	}
	m.mu.Lock()
	if group != m.group {
		m.pin = ""
	}
	m.group = group
	m.mu.Unlock()
	return it, nil
}

// priorityGroup is the group to pull in from the consumer info describes:
// the first of want's groups the consumer has, else its first (a pull
// without a group is refused by a consumer with groups), else none.
func priorityGroup(info *jetstream.ConsumerInfo, want jetstream.ConsumerConfig) string {
	if info == nil || len(info.Config.PriorityGroups) == 0 || info.Config.PriorityPolicy == jetstream.PriorityPolicyNone {
		return ""
	}
	for _, g := range want.PriorityGroups {
		if slices.Contains(info.Config.PriorityGroups, g) {
			return g
		}
	}
	return info.Config.PriorityGroups[0]
}

// HealEvery is how often a Durable looks for its consumer. A consumer the
// server lost is not otherwise noticed before its pull's heartbeats are
// missed (half a minute or more).
var HealEvery = 5 * time.Second

// watch looks for the consumer every HealEvery (the Durable's, or the
// package's); gone, it makes it again and ends the current pull, which
// Next then starts anew. A consumer made anew by someone else meanwhile
// (the runtime makes the adapters', see EventConsumer) ends the pull too:
// it was on the one that went. With the
// consumer there, it looks for the caller's other state (Look), and makes
// that again when it is gone.
func (m *Messages) watch() {
	every := m.d.HealEvery
	if every <= 0 {
		every = HealEvery
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-m.done:
			return
		case <-m.ctx.Done():
			return
		case <-tick.C:
		}
		if m.d.NATS.Conn.Status() != nats.CONNECTED {
			continue
		}
		// The consumer, or (with the consumer there) what else it needs:
		// a bucket deleted on its own fails every message.
		c, gone := m.d.NATS.JS.Consumer(m.ctx, m.d.Stream, m.d.Config.Durable)
		consumerGone := Gone(gone)
		if gone == nil && !c.CachedInfo().Created.Equal(m.createdOf()) {
			m.log().Warn("nats: consumer " + m.d.Config.Durable + " on " + m.d.Stream + " was made anew (it was deleted, or the NATS server lost its store); reading from it")
			m.restart()
		}
		if gone == nil && m.d.Look != nil {
			gone = m.d.Look(m.ctx)
		}
		if !Gone(gone) {
			continue
		}
		what := "consumer " + m.d.Config.Durable + " on " + m.d.Stream
		if !consumerGone {
			what = "what " + what + " needs"
			// A bucket is a stream: made again at once after its delete,
			// it can lose its files to the old one's removal, as the
			// streams can (EnsureStreams, which pauses for those).
			select {
			case <-m.done:
				return
			case <-m.ctx.Done():
				return
			case <-time.After(remakePause):
			}
		}
		if _, err := m.d.heal(m.ctx); err != nil {
			if m.ctx.Err() == nil {
				m.log().Error("nats: "+what+" is gone, and making it again failed", "gone", gone, "err", err)
			}
			continue
		}
		m.log().Warn("nats: "+what+" was gone (deleted, or the NATS server lost its store); made it again", "gone", gone)
		if consumerGone {
			m.restart()
		}
	}
}

// restart ends the current pull; Next starts it anew on the consumer
// there is now.
func (m *Messages) restart() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.stopped {
		m.it.Stop()
	}
}

// createdOf is when the consumer the current pull reads was made.
func (m *Messages) createdOf() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.created
}

// ConsumerCreated is when c was made, as JetStream's consumer info says.
// The reply to an update of a consumer can name another time (the server
// loading it at its start), so it is read anew.
func ConsumerCreated(ctx context.Context, c jetstream.Consumer) time.Time {
	info, err := c.Info(ctx)
	if err != nil {
		return c.CachedInfo().Created
	}
	return info.Created
}

// Messages is the iterator of a Durable.
type Messages struct {
	d    *Durable
	ctx  context.Context
	opts []jetstream.PullMessagesOpt

	mu sync.Mutex
	it jetstream.MessagesContext
	// c is the consumer it reads; created is when it was made.
	c       jetstream.Consumer
	created time.Time
	// group is the priority group it pulls in ("": none); pin is the pin
	// JetStream last gave it there (notePin).
	group, pin string
	stopped    bool          // by Drain
	done       chan struct{} // closed by Drain: watch ends
}

// Next returns the next message. When the consumer or its stream is gone
// it makes them again and goes on; it returns other errors (the server
// unreachable) as they are, and jetstream.ErrMsgIteratorClosed once a
// Drain has ended the pull.
func (m *Messages) Next() (jetstream.Msg, error) {
	for {
		m.mu.Lock()
		it := m.it
		m.mu.Unlock()
		msg, err := it.Next()
		if err == nil {
			m.notePin(msg)
			return msg, nil
		}
		m.mu.Lock()
		stopped := m.stopped
		m.mu.Unlock()
		if stopped || m.ctx.Err() != nil {
			return nil, jetstream.ErrMsgIteratorClosed
		}
		closed := errors.Is(err, jetstream.ErrMsgIteratorClosed) || errors.Is(err, jetstream.ErrConsumerDeleted)
		if !closed && !errors.Is(err, jetstream.ErrNoHeartbeat) && !Gone(err) {
			return nil, err
		}
		// The consumer is looked for: gone, it is made again; there, a
		// stopped iterator is started again.
		c, lookErr := m.d.NATS.JS.Consumer(m.ctx, m.d.Stream, m.d.Config.Durable)
		if lookErr == nil && c.CachedInfo().Created.Equal(m.createdOf()) {
			// The same consumer: pull on through the client that holds
			// the pin (nats.go keeps it there), or this replica would wait
			// for its own pin to lapse.
			m.mu.Lock()
			c = m.c
			m.mu.Unlock()
		}
		switch {
		case Gone(lookErr):
			if c, err = m.d.heal(m.ctx); err != nil {
				return nil, fmt.Errorf("consumer %s on %s is gone, and making it again failed: %w", m.d.Config.Durable, m.d.Stream, err)
			}
			m.log().Warn("nats: consumer "+m.d.Config.Durable+" on "+m.d.Stream+" was gone (deleted, or the NATS server lost its store); made it again",
				"err", lookErr)
		case lookErr != nil:
			return nil, fmt.Errorf("consumer %s on %s: %w", m.d.Config.Durable, m.d.Stream, lookErr)
		case !closed:
			continue // a missed heartbeat while the consumer is there: the iterator pulls again
		}
		next, err := m.pull(c)
		if err != nil {
			return nil, err
		}
		created := ConsumerCreated(m.ctx, c)
		m.mu.Lock()
		if m.stopped {
			m.mu.Unlock()
			next.Stop()
			return nil, jetstream.ErrMsgIteratorClosed
		}
		old := m.it
		m.it, m.c, m.created = next, c, created
		m.mu.Unlock()
		old.Stop()
	}
}

// notePin keeps the pin JetStream gave this pull (the header it sets on
// what it delivers to the pinned client), to release it on a stop.
func (m *Messages) notePin(msg jetstream.Msg) {
	pin := msg.Headers().Get(pinHeader)
	if pin == "" {
		return
	}
	m.mu.Lock()
	m.pin = pin
	m.mu.Unlock()
}

// pinHeader is the header in which JetStream names the pin of the client
// a message of a pinned consumer goes to.
const pinHeader = "Nats-Pin-Id"

// Pinned says the pull is in a priority group with the pinned-client
// policy: while this replica holds the pin, nobody else gets the
// consumer's messages, those it hands back included.
func (m *Messages) Pinned() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.group != ""
}

// Unpin releases the consumer's pin when this pull holds it, so another
// replica's pull takes over at once instead of after the pinned TTL. Call
// it after Stop's pull has ended (Closed) and what was in hand was handed
// back: the next replica then gets those first. A pin another replica
// holds is left alone.
func (m *Messages) Unpin(ctx context.Context) error {
	m.mu.Lock()
	group, pin := m.group, m.pin
	m.mu.Unlock()
	if group == "" || pin == "" {
		return nil
	}
	stream, err := m.d.NATS.JS.Stream(ctx, m.d.Stream)
	if err != nil {
		return fmt.Errorf("unpin %s on %s: %w", m.d.Config.Durable, m.d.Stream, err)
	}
	c, err := stream.Consumer(ctx, m.d.Config.Durable)
	if err != nil {
		return fmt.Errorf("unpin %s on %s: %w", m.d.Config.Durable, m.d.Stream, err)
	}
	held := false
	for _, g := range c.CachedInfo().PriorityGroups {
		held = held || g.Group == group && g.PinnedClientID == pin
	}
	if !held {
		return nil
	}
	if err := stream.UnpinConsumer(ctx, m.d.Config.Durable, group); err != nil {
		return fmt.Errorf("unpin %s on %s: %w", m.d.Config.Durable, m.d.Stream, err)
	}
	return nil
}

func (m *Messages) log() *slog.Logger { return m.d.log() }

// Drain ends the iteration. Next first returns the messages already
// delivered to this client and not yet read (stopped instead, the client
// would drop them, and JetStream would send them again only after the
// consumer's AckWait), then jetstream.ErrMsgIteratorClosed once the
// server has ended the pull subscription.
func (m *Messages) Drain() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	m.stopped = true
	close(m.done)
	m.it.Drain()
}
