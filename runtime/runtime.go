// Package runtime is askbridge's authority. It consumes questions, answer
// attempts, cancels and delivery reports from JetStream, decides every
// transition against the store, and publishes events and resumes through
// the store's outbox. Adapters only propose; the runtime decides.
package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store"
)

// Store is what the runtime needs from durable storage. The SQLite store
// implements it; a clustered backend on JetStream can too.
type Store interface {
	AskMany(ctx context.Context, nqs []store.NewQuestion) ([]*store.AskResult, error)
	Settle(ctx context.Context, st store.Settlement) error
	DecideEach(ctx context.Context, n int, decide func(i int, l store.Lookup) (store.Decision, error)) ([]error, error)
	Enqueue(ctx context.Context, msgs []store.Message) error
	Cancel(ctx context.Context, c store.JobCancel) ([]store.Record, error)

	Get(ctx context.Context, id int64) (*store.Record, error)
	Find(ctx context.Context, k store.Key) (*store.Record, error)
	FindQuestionIDs(ctx context.Context, tenant, job, questionID string) ([]*store.Record, error)
	List(ctx context.Context, f store.ListFilter) ([]store.Record, error)
	Audit(ctx context.Context, question int64) ([]bridge.AuditEntry, error)
	CountByState(ctx context.Context) (map[string]int64, error)

	NextDue(ctx context.Context) (time.Time, bool, error)
	DueSteps(ctx context.Context, now time.Time, limit int) ([]store.DueStep, error)
	FireStep(ctx context.Context, d store.DueStep, at time.Time, reason string, msgs []store.Message) error

	Unsent(ctx context.Context, afterID int64, limit int, oldBefore time.Time) ([]store.OutboxRow, error)
	MarkSent(ctx context.Context, ids []int64, at time.Time) error
	OutboxBacklogAfter(ctx context.Context, after int64) (int64, error)
	PruneSent(ctx context.Context, before time.Time) (int64, error)
	PruneAttempts(ctx context.Context, before time.Time) (int64, error)
	AttemptDecidedAt(ctx context.Context, attemptID string) (time.Time, bool, error)

	RecordDelivery(ctx context.Context, question int64, d bridge.Delivery, at time.Time) ([]store.DeliveryRow, error)
	Messages(ctx context.Context, question int64) ([]bridge.MessageRef, error)
	Ping(ctx context.Context) error
	Instance() string
}

var _ Store = (*store.Store)(nil)

// Platform is a chat platform the service shows questions on.
type Platform struct {
	// DefaultChannel is where questions without a route for it go; empty
	// means only routed questions are shown there.
	DefaultChannel string
}

// Options configure a Runtime.
type Options struct {
	NATS  *bridge.NATS
	Store Store
	Roles Roles
	// Platforms are the enabled chat platforms by name ("slack", "discord").
	Platforms map[string]Platform
	Logger    *slog.Logger
	// Registerer receives the runtime's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Consumer prefixes the durable consumer names (default "runtime").
	Consumer string
	// LeaseWait is how long a runtime waits for another's lease on the
	// same NATS to lapse before it gives up (default 45 s; tests shorten it).
	LeaseWait time.Duration
	// BeforePublish and AfterPublish, when set, run before each outbox row
	// is published and after (before it is marked sent); an error stops the
	// relay there, as a crash would. They exist for crash tests.
	BeforePublish func(store.OutboxRow) error
	AfterPublish  func(store.OutboxRow) error
	// MarkSentAfter delays marking a published row sent. With a JetStream
	// that fsyncs only every so often, an acknowledged message can still be
	// lost to a power cut: rows stay unsent until the server has surely
	// synced them (set this above its sync interval), and a restart
	// publishes them again under the same message id. 0 marks at once.
	MarkSentAfter time.Duration
}

// Runtime is the authority over questions.
type Runtime struct {
	o   Options
	log *slog.Logger
	js  jetstream.JetStream
	// questions is the questions stream when it is a work queue (see
	// questionInFlight); nil for an older stream that keeps every question.
	questions jetstream.Stream
	// answers is the answers stream (see answerWaiting).
	answers jetstream.Stream
	nc      *nats.Conn
	st      Store
	metrics *metrics

	relayWake chan struct{}
	ladWake   chan struct{}
	healWake  chan struct{}
	// consuming are the consumers Run consumes (see heal).
	consuming []*consumption
	ready     chan struct{}
	// started is when Run began: attempts stored before it may have been
	// decided by an earlier release (legacyAttemptID).
	started time.Time

	// The relay's own state (only the relay goroutine touches it): the last
	// row JetStream acknowledged with all before it, the last row published,
	// the batch whose acknowledgements are awaited, and rows acknowledged
	// but not yet marked sent.
	relayHigh int64
	// acked is relayHigh for readers outside the relay: every row up to it
	// is in JetStream, whether or not it is marked sent yet.
	acked          atomic.Int64
	relayPublished int64
	relayInflight  []*relayBatch
	relayPending   []publishedRow
	relayLastMark  time.Time
}

// relayBatch is outbox rows published together, awaiting JetStream's
// acknowledgements: done of them have come back, sent are the rows
// acknowledged before the first failure.
type relayBatch struct {
	rows    []store.OutboxRow
	futures []jetstream.PubAckFuture
	done    int
	sent    []int64
	failed  error
}

// record notes the next acknowledgement (err nil) or failure.
func (b *relayBatch) record(err error) {
	switch {
	case err != nil && b.failed == nil:
		b.failed = fmt.Errorf("publish %s: %w", b.rows[b.done].MsgID(), err)
	case err == nil && b.failed == nil:
		b.sent = append(b.sent, b.rows[b.done].ID)
	}
	b.done++
}

// poll records, without waiting, the acknowledgements that have come back.
func (b *relayBatch) poll() {
	for b.done < len(b.futures) {
		f := b.futures[b.done]
		select {
		case <-f.Ok():
			b.record(nil)
		case err := <-f.Err():
			b.record(err)
		default:
			return
		}
	}
}

// maxRelayInflight bounds the batches published and not yet acknowledged.
const maxRelayInflight = 8

// publishedRow is a row published at a time, waiting to be marked sent.
type publishedRow struct {
	id int64
	at time.Time
}

// Ready is closed once Run has started its consumers and the API.
func (r *Runtime) Ready() <-chan struct{} { return r.ready }

// New makes a runtime; Run starts it.
func New(o Options) (*Runtime, error) {
	if o.NATS == nil || o.Store == nil {
		return nil, errors.New("runtime: NATS and Store are required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Consumer == "" {
		o.Consumer = "runtime"
	}
	r := &Runtime{
		o:         o,
		log:       o.Logger.With("component", "runtime"),
		js:        o.NATS.JS,
		nc:        o.NATS.Conn,
		st:        o.Store,
		relayWake: make(chan struct{}, 1),
		ladWake:   make(chan struct{}, 1),
		healWake:  make(chan struct{}, 1),
		ready:     make(chan struct{}),
	}
	m, err := newMetrics(o.Registerer, o.Store, r.backlog)
	if err != nil {
		return nil, err
	}
	r.metrics = m
	return r, nil
}

// Run consumes until ctx is done, then stops its consumers and returns.
func (r *Runtime) Run(ctx context.Context) error {
	r.started = time.Now()
	type sub struct {
		stream, name string
		handle       func(context.Context, jetstream.Msg) error
	}
	subs := []sub{
		{bridge.StreamCancels, "cancels", r.handleCancel},
		{bridge.StreamDelivery, "delivery", r.handleDelivery},
	}
	var stops []func()
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	leaseKV, leaseRev, err := r.takeLease(ctx)
	if err != nil {
		return err
	}
	// Everything below stops when the lease is lost, too.
	ctx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	leaseCtx, dropLease := context.WithCancel(ctx)
	leaseLost := make(chan error, 1)
	leaseDone := make(chan struct{})
	go func() {
		defer close(leaseDone)
		r.keepLease(leaseCtx, leaseKV, leaseRev, func(err error) { leaseLost <- err })
	}()
	defer func() { dropLease(); <-leaseDone }()
	// Answers that waited for the runtime (published while it was down)
	// are decided before the ladder fires anything: see awaitAnswers.
	as, err := r.js.Stream(ctx, bridge.StreamAnswers)
	if err != nil {
		return fmt.Errorf("runtime: answers stream: %w", err)
	}
	r.answers = as
	answersAtStart := as.CachedInfo().State.LastSeq
	if qs, err := r.js.Stream(ctx, bridge.StreamQuestions); err != nil {
		return fmt.Errorf("runtime: questions stream: %w", err)
	} else if qs.CachedInfo().Config.Retention == jetstream.WorkQueuePolicy {
		r.questions = qs
	}
	for _, s := range subs {
		stop, err := r.consume(ctx, s.stream, r.durable(s.name), s.handle)
		if err != nil {
			return err
		}
		stops = append(stops, stop)
	}
	for _, b := range []struct {
		stream, name string
		handle       func(context.Context, []jetstream.Msg) error
	}{
		{bridge.StreamQuestions, "questions", r.askQuestions},
		{bridge.StreamAnswers, "answers", r.decideAttempts},
	} {
		stop, err := r.consumeBatches(ctx, b.stream, r.durable(b.name), b.handle)
		if err != nil {
			return err
		}
		stops = append(stops, stop)
	}
	apiStop, err := r.serveAPI(ctx)
	if err != nil {
		return err
	}
	stops = append(stops, apiStop)

	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); r.relay(ctx) }()
	go func() { defer wg.Done(); r.heal(ctx) }()
	go func() { defer wg.Done(); r.awaitAnswers(ctx, answersAtStart); r.ladder(ctx) }()
	go func() { defer wg.Done(); r.prune(ctx) }()
	close(r.ready)
	r.log.Info("runtime started")
	var lost error
	select {
	case <-ctx.Done():
	case lost = <-leaseLost:
		r.log.Error("runtime stopping", "err", lost)
		stopRun()
	}
	wg.Wait()
	return lost
}

// consumerAckWait is how long a message handed to a runtime that died
// waits before JetStream hands it out again. Handling takes milliseconds,
// so this bounds how late an answer is decided after a crash.
const consumerAckWait = 10 * time.Second

// durableConsumer creates (or updates) one of the runtime's durable
// consumers: every message from the start of the stream, acked one by one.
func (r *Runtime) durableConsumer(ctx context.Context, stream, durable string, maxAckPending int) (jetstream.Consumer, error) {
	cons, err := r.js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Durable:       durable,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       consumerAckWait,
		MaxAckPending: maxAckPending,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("runtime: consumer %s on %s: %w", durable, stream, err)
	}
	return cons, nil
}

// consume runs handle for every message of a durable consumer. A handler
// error is transient (the store or NATS failed): the message is redelivered
// after a pause. Bad input is not an error: handlers refuse it and ack.
func (r *Runtime) consume(ctx context.Context, stream, durable string, handle func(context.Context, jetstream.Msg) error) (func(), error) {
	c, err := r.startConsume(ctx, stream, durable, 1000, func(msg jetstream.Msg) {
		if err := handle(ctx, msg); err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, errAfterQuestion) {
				_ = msg.NakWithDelay(20 * time.Millisecond)
				return
			}
			r.log.Error("will retry message", "subject", msg.Subject(), "err", err)
			_ = msg.NakWithDelay(time.Second)
			return
		}
		_ = msg.Ack()
	})
	if err != nil {
		return nil, err
	}
	return c.stop, nil
}

// consumeErrors logs what goes wrong with a consumer (deleted, its stream
// gone, the server unreachable): otherwise the runtime would stop taking
// messages without a word. /readyz reports a missing consumer (Check),
// and heal makes it again.
func (r *Runtime) consumeErrors(durable string) jetstream.PullConsumeOpt {
	return jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		r.log.Warn("consumer", "consumer", durable, "err", err)
		if bridge.Gone(err) || errors.Is(err, jetstream.ErrNoHeartbeat) {
			r.wakeHeal()
		}
	})
}

// consumption is one of the runtime's durable consumers being consumed;
// heal starts it again when the consumer was gone.
type consumption struct {
	stream, durable string
	maxAckPending   int
	handler         jetstream.MessageHandler
	opts            []jetstream.PullConsumeOpt

	mu      sync.Mutex
	cc      jetstream.ConsumeContext
	stopped bool
}

func (c *consumption) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	c.cc.Stop()
}

// running says the consumption was not stopped by an error (a deleted
// consumer ends a Consume for good).
func (c *consumption) running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.cc.Closed():
		return false
	default:
		return true
	}
}

// startConsume creates the durable consumer and consumes it with handler.
func (r *Runtime) startConsume(ctx context.Context, stream, durable string, maxAckPending int, handler jetstream.MessageHandler, opts ...jetstream.PullConsumeOpt) (*consumption, error) {
	c := &consumption{stream: stream, durable: durable, maxAckPending: maxAckPending, handler: handler,
		opts: append(opts, r.consumeErrors(durable))}
	cons, err := r.durableConsumer(ctx, stream, durable, maxAckPending)
	if err != nil {
		return nil, err
	}
	if c.cc, err = cons.Consume(handler, c.opts...); err != nil {
		return nil, fmt.Errorf("runtime: consume %s: %w", durable, err)
	}
	r.consuming = append(r.consuming, c)
	return c, nil
}

// restart makes the consumer again (or updates it) and consumes it anew.
func (r *Runtime) restart(ctx context.Context, c *consumption) error {
	cons, err := r.durableConsumer(ctx, c.stream, c.durable, c.maxAckPending)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	cc, err := cons.Consume(c.handler, c.opts...)
	if err != nil {
		return fmt.Errorf("runtime: consume %s: %w", c.durable, err)
	}
	c.cc.Stop()
	c.cc = cc
	return nil
}

// healEvery is how often the runtime looks for its consumers when no
// error made it look sooner.
const healEvery = 5 * time.Second

func (r *Runtime) wakeHeal() {
	select {
	case r.healWake <- struct{}{}:
	default:
	}
}

// heal makes the runtime's streams and consumers again when they are gone
// (deleted, or a NATS server that restarted without its store) and
// consumes them anew: the runtime goes on without a restart. What the
// streams held and nobody had read yet is lost with them; the store's
// pending questions, ladders and unsent outcomes are not.
func (r *Runtime) heal(ctx context.Context) {
	tick := time.NewTicker(healEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-r.healWake:
		}
		if r.nc.Status() != nats.CONNECTED {
			continue // the client reconnects by itself
		}
		var gone []*consumption
		for _, c := range r.consuming {
			_, err := r.js.Consumer(ctx, c.stream, c.durable)
			switch {
			case bridge.Gone(err):
				gone = append(gone, c)
			case err == nil && !c.running():
				gone = append(gone, c)
			}
		}
		// The streams only the relay publishes to (events, resumes) too.
		if len(gone) == 0 && !bridge.Gone(bridge.CheckStreams(ctx, r.js)) {
			continue
		}
		if err := r.o.NATS.EnsureStreams(ctx); err != nil {
			if ctx.Err() == nil {
				r.log.Error("runtime: streams are gone and could not be made again", "err", err)
			}
			continue
		}
		for _, c := range gone {
			if err := r.restart(ctx, c); err != nil {
				if ctx.Err() == nil {
					r.log.Error("runtime: consumer "+c.durable+" on "+c.stream+" is gone and could not be made again", "err", err)
				}
				continue
			}
			r.log.Warn("runtime: consumer " + c.durable + " on " + c.stream + " was gone (deleted, or the NATS server lost its store); made it again")
		}
	}
}

// durable names one of the runtime's durable consumers.
func (r *Runtime) durable(name string) string { return r.o.Consumer + "-" + name }

// consumers are the runtime's durable consumers: stream, name suffix.
var consumers = [][2]string{
	{bridge.StreamCancels, "cancels"}, {bridge.StreamDelivery, "delivery"},
	{bridge.StreamQuestions, "questions"}, {bridge.StreamAnswers, "answers"},
}

// Check reports the first of the runtime's consumers that is missing: a
// runtime whose consumer was deleted takes no more of those messages.
func (r *Runtime) Check(ctx context.Context) error {
	for _, c := range consumers {
		if _, err := r.js.Consumer(ctx, c[0], r.durable(c[1])); err != nil {
			return fmt.Errorf("runtime: consumer %s on %s: %w", r.durable(c[1]), c[0], err)
		}
	}
	for _, c := range r.consuming {
		if !c.running() {
			return fmt.Errorf("runtime: consumer %s on %s: not consumed since it was deleted; the runtime starts it again", c.durable, c.stream)
		}
	}
	return nil
}

// maxBatch bounds how many messages one transaction handles.
const maxBatch = 512

// consumeBatches feeds a durable consumer's messages to handle in batches:
// whatever arrived while the previous batch was being committed goes into
// the next single transaction, so one fsync carries many questions or
// answers under load, and a lone message is still handled at once. An
// error from handle is transient: the whole batch is redelivered, which
// the store's idempotency makes harmless.
func (r *Runtime) consumeBatches(ctx context.Context, stream, durable string, handle func(context.Context, []jetstream.Msg) error) (func(), error) {
	queue := make(chan jetstream.Msg, 4096)
	loopCtx, stopLoop := context.WithCancel(ctx)
	c, err := r.startConsume(ctx, stream, durable, 8192, func(m jetstream.Msg) {
		select {
		case queue <- m:
		case <-loopCtx.Done():
		}
	}, jetstream.PullMaxMessages(1024))
	if err != nil {
		stopLoop()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var batch []jetstream.Msg
			select {
			case <-loopCtx.Done():
				return
			case m := <-queue:
				batch = append(batch, m)
			}
		drain:
			for len(batch) < maxBatch {
				select {
				case m := <-queue:
					batch = append(batch, m)
				default:
					break drain
				}
			}
			if err := handle(loopCtx, batch); err != nil {
				if loopCtx.Err() != nil {
					return
				}
				r.log.Error("will retry messages", "consumer", durable, "count", len(batch), "err", err)
				for _, m := range batch {
					_ = m.NakWithDelay(time.Second)
				}
				continue
			}
			for _, m := range batch {
				_ = m.Ack()
			}
		}
	}()
	return func() {
		c.stop()
		stopLoop()
		<-done
	}, nil
}

// Outbox rows are marked sent in batches: at most one commit for it every
// markSentEvery, unless maxMarkBatch rows are waiting.
const (
	markSentEvery = 250 * time.Millisecond
	maxMarkBatch  = 4096
)

// Retention of bookkeeping rows: sent outbox rows a day (JetStream keeps
// the messages), attempt ids a day longer than the answers stream keeps
// attempts (after that no attempt can be redelivered).
const (
	keepSentOutbox = 24 * time.Hour
	keepAttemptIDs = 31 * 24 * time.Hour
)

// prune deletes old bookkeeping rows at start and then hourly.
func (r *Runtime) prune(ctx context.Context) {
	tick := time.NewTicker(time.Hour)
	defer tick.Stop()
	for {
		now := time.Now()
		if n, err := r.st.PruneSent(ctx, now.Add(-keepSentOutbox)); err != nil && ctx.Err() == nil {
			r.log.Warn("prune outbox", "err", err)
		} else if n > 0 {
			r.log.Debug("pruned sent outbox rows", "rows", n)
		}
		if _, err := r.st.PruneAttempts(ctx, now.Add(-keepAttemptIDs)); err != nil && ctx.Err() == nil {
			r.log.Warn("prune attempt ids", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (r *Runtime) wakeRelay() {
	select {
	case r.relayWake <- struct{}{}:
	default:
	}
}

func (r *Runtime) wakeLadder() {
	select {
	case r.ladWake <- struct{}{}:
	default:
	}
}

// relay publishes outbox rows in order, each with Nats-Msg-Id = its row id,
// and marks them sent after JetStream acknowledged them. It publishes new
// rows while earlier ones wait for their acknowledgements, so subscribers
// get each decision as soon as it committed, even while a stream is busy
// writing to disk.
func (r *Runtime) relay(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		progressed, err := r.relayOnce(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("outbox relay", "err", err)
		}
		if progressed && err == nil {
			continue
		}
		var ok <-chan *jetstream.PubAck
		var failed <-chan error
		var head *relayBatch
		if err == nil && len(r.relayInflight) > 0 {
			head = r.relayInflight[0]
			ok, failed = head.futures[head.done].Ok(), head.futures[head.done].Err()
		}
		select {
		case <-ctx.Done():
			r.markOnExit()
			return
		case <-r.relayWake:
		case <-tick.C:
		case <-ok:
			head.record(nil)
		case err := <-failed:
			head.record(err)
		}
	}
}

// relayOnce publishes the next rows, if the window allows, and finishes
// the batches whose acknowledgements have all come back. It reports
// whether it did anything.
func (r *Runtime) relayOnce(ctx context.Context) (bool, error) {
	if err := r.markDue(ctx, time.Now()); err != nil {
		return false, err
	}
	progressed := false
	if len(r.relayInflight) < maxRelayInflight {
		b, err := r.publishNext(ctx)
		if err != nil {
			return false, err
		}
		if b != nil {
			r.relayInflight = append(r.relayInflight, b)
			r.relayPublished = b.rows[len(b.rows)-1].ID
			progressed = true
		}
	}
	for len(r.relayInflight) > 0 {
		b := r.relayInflight[0]
		b.poll()
		if b.done < len(b.futures) {
			break
		}
		r.relayInflight = r.relayInflight[1:]
		progressed = true
		if err := r.finishBatch(ctx, b); err != nil {
			// Publish again from the first row not acknowledged; rows that
			// did reach the stream are dropped there as duplicates.
			r.relayInflight = nil
			r.relayPublished = r.relayHigh
			return progressed, err
		}
	}
	return progressed, nil
}

// publishNext publishes the rows after the last one published; nil when
// there are none.
func (r *Runtime) publishNext(ctx context.Context) (*relayBatch, error) {
	rows, err := r.st.Unsent(ctx, r.relayPublished, 256, time.Now().Add(-staleAfter))
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	if r.o.BeforePublish != nil {
		for i, row := range rows {
			if err := r.o.BeforePublish(row); err != nil {
				rows = rows[:i]
				break
			}
		}
		if len(rows) == 0 {
			return nil, nil
		}
	}
	b := &relayBatch{rows: rows, futures: make([]jetstream.PubAckFuture, 0, len(rows))}
	var seen earlierPublishes
	for _, row := range rows {
		f, err := r.publishRow(ctx, row, &seen)
		if err != nil {
			if len(b.futures) == 0 {
				return nil, err
			}
			b.rows = b.rows[:len(b.futures)] // the rest go in a later batch
			break
		}
		b.futures = append(b.futures, f)
	}
	return b, nil
}

// finishBatch queues a fully acknowledged batch's rows to be marked sent
// (see markDue). It returns the batch's first failure.
func (r *Runtime) finishBatch(ctx context.Context, b *relayBatch) error {
	sent, failed := b.sent, b.failed
	if r.o.AfterPublish != nil {
		for i := range sent {
			if err := r.o.AfterPublish(b.rows[i]); err != nil {
				sent = sent[:i]
				failed = err
				break
			}
		}
	}
	now := time.Now()
	for _, id := range sent {
		r.relayPending = append(r.relayPending, publishedRow{id: id, at: now})
	}
	if len(sent) > 0 {
		r.relayHigh = sent[len(sent)-1]
		r.acked.Store(r.relayHigh)
	}
	r.metrics.published.Add(float64(len(sent)))
	return failed
}

// backlog counts the outbox rows not yet in JetStream; rows published
// and only waiting to be marked sent do not count.
func (r *Runtime) backlog(ctx context.Context) (int64, error) {
	return r.st.OutboxBacklogAfter(ctx, r.acked.Load())
}

// MarkPublished marks sent every row JetStream acknowledged that still
// waits out MarkSentAfter. Call it only after Run has returned and the
// messages are known to be on disk (the embedded server stopped and its
// files synced): a restart then publishes none of them again, which past
// JetStream's duplicate window would show the job a second resume.
func (r *Runtime) MarkPublished(ctx context.Context) error {
	ids := make([]int64, 0, len(r.relayPending))
	for _, p := range r.relayPending {
		ids = append(ids, p.id)
	}
	// And the batches whose acknowledgements came back after the relay
	// stopped reading them (see CollectAcks), up to the first row that
	// failed or was not acknowledged: a restart publishes from there, and
	// rows after it marked sent would reach the stream before it.
	for _, b := range r.relayInflight {
		b.poll()
		ids = append(ids, b.sent...)
		if b.failed != nil || b.done < len(b.futures) {
			break
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if err := r.st.MarkSent(ctx, ids, time.Now()); err != nil {
		return fmt.Errorf("runtime: mark published rows sent: %w", err)
	}
	r.relayPending = r.relayPending[:0]
	return nil
}

// CollectAcks waits, until ctx ends, for JetStream's acknowledgements of
// the rows the relay published and was still waiting on when it stopped,
// so MarkPublished can mark them. Call it after Run has returned and
// before the NATS connection closes.
func (r *Runtime) CollectAcks(ctx context.Context) {
	for _, b := range r.relayInflight {
		for b.done < len(b.futures) {
			f := b.futures[b.done]
			select {
			case <-f.Ok():
				b.record(nil)
			case err := <-f.Err():
				b.record(err)
			case <-ctx.Done():
				return
			}
		}
	}
}

// markOnExit writes the marks that are due but still gathered, so a
// clean restart publishes fewer rows again.
func (r *Runtime) markOnExit() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for len(r.relayPending) > 0 {
		before := len(r.relayPending)
		r.relayLastMark = time.Time{}
		if err := r.markDue(ctx, time.Now()); err != nil {
			r.log.Warn("outbox relay: mark published rows sent at exit", "err", err)
			return
		}
		if len(r.relayPending) == before {
			return // the rest are not due yet
		}
	}
}

// markDue marks sent the published rows whose delay has passed. Each mark
// is a commit, and so an fsync that the answer path's commits queue behind:
// marks are gathered for markSentEvery (or maxMarkBatch rows) into one. A
// row marked late is at worst published again after a crash, under the same
// message id.
func (r *Runtime) markDue(ctx context.Context, now time.Time) error {
	n := 0
	for n < len(r.relayPending) && n < maxMarkBatch && now.Sub(r.relayPending[n].at) >= r.o.MarkSentAfter {
		n++
	}
	if n == 0 || n < maxMarkBatch && now.Sub(r.relayLastMark) < markSentEvery {
		return nil
	}
	r.relayLastMark = now
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = r.relayPending[i].id
	}
	if err := r.st.MarkSent(ctx, ids, now); err != nil {
		return err
	}
	r.relayPending = append(r.relayPending[:0], r.relayPending[n:]...)
	return nil
}

// RuntimeBucket holds the lease of the runtime working on this NATS (key
// "lease": its database and host). The bucket keeps a record leaseTTL, so a
// runtime that stops renewing it (stopped, crashed, cut off) lets it go.
const RuntimeBucket = "ASK_RUNTIME"

// ErrOtherRuntime is a runtime that found another, with its own database,
// working on the same NATS, and kept renewing its lease.
var ErrOtherRuntime = errors.New("runtime: another askbridge runtime works on this NATS")

// Lease timing: renewed every leaseRenew, gone leaseTTL after the last
// renewal; a starting runtime waits at most leaseWait for another's.
var (
	leaseTTL   = 15 * time.Second
	leaseRenew = 5 * time.Second
	leaseWait  = 45 * time.Second
)

// lease is the record in RuntimeBucket.
type lease struct {
	Database string    `json:"database"`
	Host     string    `json:"host,omitempty"`
	At       time.Time `json:"at"`
}

// takeLease makes this runtime the one working on this NATS's askbridge
// streams. Two runtimes with their own databases at once would split the
// questions and answers between them (one refusing answers to the other's
// questions, both reminding). A runtime of the same database takes over at
// once (its own restart); one of another database waits for the other's
// lease to lapse, so a runtime that stopped or crashed is followed, and
// gives up with ErrOtherRuntime when it keeps being renewed.
func (r *Runtime) takeLease(ctx context.Context) (*bridge.KV, uint64, error) {
	kv, err := bridge.EnsureKV(ctx, r.js, leaseBucket)
	if err != nil {
		return nil, 0, fmt.Errorf("runtime: %w", err)
	}
	wait := r.o.LeaseWait
	if wait <= 0 {
		wait = leaseWait
	}
	giveUp := time.Now().Add(wait)
	for {
		rev, err := r.claimLease(ctx, kv)
		switch {
		case err == nil:
			return kv, rev, nil
		case isKVConflict(err):
			continue // taken or renewed meanwhile: look again
		case !errors.Is(err, ErrOtherRuntime):
			return nil, 0, fmt.Errorf("runtime: take the lease: %w", err)
		case time.Now().After(giveUp):
			return nil, 0, fmt.Errorf("%w: askbridge runs one runtime per NATS; stop that one, or run this replica on its data dir", err)
		}
		r.log.Warn("another askbridge runtime works on this NATS; waiting for its lease to lapse", "err", err)
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// leaseBucket holds the runtime's lease.
var leaseBucket = jetstream.KeyValueConfig{
	Bucket: RuntimeBucket, Description: "askbridge: the lease of the runtime working on this NATS", History: 1,
	TTL: leaseTTL, Storage: jetstream.FileStorage,
}

// claimLease writes this runtime's lease, unless another database's
// runtime holds it (ErrOtherRuntime); a lost race is a key conflict.
func (r *Runtime) claimLease(ctx context.Context, kv *bridge.KV) (uint64, error) {
	var rev uint64
	e, err := kv.Get(ctx, "lease")
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return 0, err
	default:
		var held lease
		_ = json.Unmarshal(e.Value(), &held)
		if held.Database != r.st.Instance() {
			return 0, fmt.Errorf("%w (database %s on %s)", ErrOtherRuntime, held.Database, firstNonEmpty(held.Host, "an unknown host"))
		}
		rev = e.Revision()
	}
	return kv.Write(ctx, "lease", rev, r.leaseRecord(), 0)
}

// leaseRecord is this runtime's lease as of now.
func (r *Runtime) leaseRecord() []byte {
	host, _ := os.Hostname()
	data, _ := json.Marshal(lease{Database: r.st.Instance(), Host: host, At: time.Now().UTC()})
	return data
}

// keepLease renews the lease until ctx ends, then lets it go, so the next
// runtime need not wait for it to lapse. A lease taken by another runtime
// meanwhile (this one was cut off longer than leaseTTL) stops this one.
func (r *Runtime) keepLease(ctx context.Context, kv *bridge.KV, rev uint64, lost func(error)) {
	tick := time.NewTicker(leaseRenew)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = kv.Delete(dctx, "lease", jetstream.LastRevision(rev))
			cancel()
			return
		case <-tick.C:
		}
		next, err := kv.Write(ctx, "lease", rev, r.leaseRecord(), 0)
		if bridge.Gone(err) && r.nc.Status() == nats.CONNECTED {
			// The bucket is gone (the NATS server lost its store): made
			// again, the lease is claimed anew.
			if _, err = bridge.EnsureKV(ctx, r.js, leaseBucket); err == nil {
				r.log.Warn("runtime: the lease bucket " + RuntimeBucket + " was gone (deleted, or the NATS server lost its store); made it again")
				err = jetstream.ErrKeyNotFound
			}
		}
		if isKVConflict(err) || errors.Is(err, jetstream.ErrKeyNotFound) {
			// Lapsed (this process stalled past leaseTTL) or taken: take it
			// again, unless another database's runtime holds it now.
			next, err = r.claimLease(ctx, kv)
		}
		switch {
		case err == nil:
			rev = next
		case errors.Is(err, ErrOtherRuntime):
			if ctx.Err() == nil {
				lost(fmt.Errorf("%w: it took the lease while this runtime could not renew it", err))
			}
			return
		case ctx.Err() == nil:
			r.log.Warn("runtime: renew the lease", "err", err)
		}
	}
}

func isKVConflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
