package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// consumerAckWait is how long a message handed to a runtime that died
// waits before JetStream hands it out again: it bounds how late a
// question is asked, or an answer decided, after a replica's death. A live
// runtime keeps what it holds in progress however long it takes (bridge.InHand),
// so this is short: a question asked before a replica died has its card
// within seconds (docs/deploy.md, "How long a person waits").
const consumerAckWait = 4 * time.Second

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
	c, err := r.startConsume(ctx, stream, durable, 1000, func(m jetstream.Msg) {
		msg := r.hand.Hold(m)
		err := handle(ctx, msg)
		if err != nil {
			if ctx.Err() != nil {
				msg.LetGo()
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

// durable names one of the runtime's durable consumers.
func (r *Runtime) durable(name string) string { return r.o.Consumer + "-" + name }

// answersConsumer names the consumer deciding answer attempts; the ladder
// reads its progress (answerWaiting).
const answersConsumer = "answers"

// consumer is one of the runtime's durable consumers: the stream it reads,
// its name (after Options.Consumer) and its handler, which takes one
// message at a time (handle) or batches (handleBatch).
type consumer struct {
	stream, name string
	handle       func(context.Context, jetstream.Msg) error
	handleBatch  func(context.Context, []jetstream.Msg) error
}

// consumers are all of the runtime's durable consumers: Run starts these,
// heal makes them again, Check reports them.
func (r *Runtime) consumers() []consumer {
	return []consumer{
		{stream: bridge.StreamCancels, name: "cancels", handle: r.handleCancel},
		{stream: bridge.StreamDelivery, name: "delivery", handleBatch: r.handleDeliveries},
		{stream: bridge.StreamQuestions, name: "questions", handleBatch: r.askQuestions},
		{stream: bridge.StreamAnswers, name: answersConsumer, handleBatch: r.decideAttempts},
		{stream: bridge.StreamNotices, name: "notices", handle: r.handleNotice},
		{stream: bridge.StreamExecuted, name: "executed", handle: r.handleExecution},
	}
}

// startConsumers creates and consumes every consumer; the function
// returned stops them.
func (r *Runtime) startConsumers(ctx context.Context) (func(), error) {
	// Messages in hand are kept in progress until every consumer stopped.
	keepCtx, stopKeep := context.WithCancel(ctx)
	go r.hand.Keep(keepCtx, bridge.ProgressEvery(consumerAckWait))
	var stops []func()
	stopAll := func() {
		for _, stop := range stops {
			stop()
		}
		stopKeep()
	}
	for _, c := range r.consumers() {
		var stop func()
		var err error
		if c.handleBatch != nil {
			stop, err = r.consumeBatches(ctx, c.stream, r.durable(c.name), c.handleBatch)
		} else {
			stop, err = r.consume(ctx, c.stream, r.durable(c.name), c.handle)
		}
		if err != nil {
			stopAll()
			return nil, err
		}
		stops = append(stops, stop)
	}
	return stopAll, nil
}

// Check reports the first of the runtime's consumers that is missing: a
// runtime whose consumer was deleted takes no more of those messages.
func (r *Runtime) Check(ctx context.Context) error {
	select {
	case <-r.ready:
	default:
		return errors.New("runtime: not started yet")
	}
	checks := make([]func() error, len(r.consuming))
	for i, c := range r.consuming {
		checks[i] = func() error {
			if _, err := r.js.Consumer(ctx, c.stream, c.durable); err != nil {
				return fmt.Errorf("runtime: consumer %s on %s: %w", c.durable, c.stream, err)
			}
			return nil
		}
	}
	if err := bridge.CheckAll(checks...); err != nil {
		return err
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
		held := r.hand.Hold(m)
		select {
		case queue <- held:
		case <-loopCtx.Done():
			held.LetGo()
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
			ackBatch(batch)
		}
	}()
	return func() {
		c.stop()
		stopLoop()
		<-done
	}, nil
}

// ackBatch acknowledges a batch handled: each message the handler did not
// hand back itself (bridge.Held sends one acknowledgement only).
func ackBatch(batch []jetstream.Msg) {
	for _, m := range batch {
		_ = m.Ack()
	}
}
