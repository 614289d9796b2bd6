// Package runtime is askbridge's authority. It consumes questions, answer
// attempts, cancels and delivery reports from JetStream, decides every
// transition against the store, and publishes events and resumes through
// the store's outbox. Adapters only propose; the runtime decides.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/policy"
	"github.com/askbridge/askbridge/store/record"
)

// shared reports whether st is shared by several runtimes.
func shared(st record.Backend) bool {
	s, ok := st.(record.Shareable)
	return ok && s.Shared()
}

// Options configure a Runtime.
type Options struct {
	NATS *bridge.NATS
	// Store is the record. Each part of the runtime takes from it only
	// the narrow view it uses, declared beside it (questionStore,
	// ladderStore, relayStore, ...). A Shareable store that reports true
	// is shared by replicas: the runtime takes no lease on it (lease.go),
	// and a DueWatcher's word wakes the ladder.
	Store record.Backend
	Roles Roles
	// Policy holds the operator's policy in force (ASK_POLICY); nil or
	// empty gates nothing.
	Policy *policy.Holder
	// People links identities into persons (ASK_PEOPLE); the policy's
	// people: section adds to it (docs/contract.md, "People").
	People bridge.People
	// Principals checks the credentials of what agents and people publish
	// (serveIntake); nil takes nothing from them (a NATS without
	// askbridge's accounts).
	Principals Principals
	// Platforms are the chat platforms that can show questions, switched
	// on or not, in the order texts name them.
	Platforms []bridge.Platform
	Logger    *slog.Logger
	// Registerer receives the runtime's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Consumer prefixes the durable consumer names (default "runtime").
	Consumer string
	// LeaseWait is how long a runtime waits for another's lease on the
	// same NATS to lapse before it gives up (default 45 s; tests shorten it).
	LeaseWait time.Duration
	// LeaseRenew is how often the runtime renews its lease (default 5 s,
	// well within the lease's 15 s life; tests shorten it).
	LeaseRenew time.Duration
	// BeforePublish and AfterPublish, when set, run before each outbox row
	// is published and after (before it is marked sent); an error stops the
	// relay there, as a crash would. They exist for crash tests.
	BeforePublish func(record.OutboxRow) error
	AfterPublish  func(record.OutboxRow) error
	// Clock tells the time of questions (see Clock); nil is the system's.
	Clock Clock
	// MarkSentAfter delays marking a published row sent. With a JetStream
	// that fsyncs only every so often, an acknowledged message can still be
	// lost to a power cut: rows stay unsent until the server has surely
	// synced them (set this above its sync interval), and a restart
	// publishes them again under the same message id. 0 marks at once.
	MarkSentAfter time.Duration
	// Clarify sets the clarification metrics' window and the tenants and
	// agents /metrics names (ASK_METRICS_*; see ClarifyMetrics).
	Clarify ClarifyMetrics
	// HealEvery is how often the runtime looks for its streams and
	// consumers when no error made it look sooner (see heal); 0 is 5 s.
	// Tests shorten it.
	HealEvery time.Duration
	// AttemptWaits is how often an attempt that waits for an earlier one
	// of its question is handed back before it is decided anyway; 0 is
	// maxAttemptWaits (about 15 s). Tests shorten it.
	AttemptWaits int
	// TimeZone is where "tomorrow 09:00" of a snooze is (ASK_TIME_ZONE);
	// nil is UTC.
	TimeZone *time.Location
}

// Runtime is the authority over questions.
type Runtime struct {
	o   Options
	log *slog.Logger
	js  jetstream.JetStream
	// questions is the questions stream, a work queue (see
	// questionInFlight).
	questions jetstream.Stream
	// answers is the answers stream (see answerWaiting).
	answers jetstream.Stream
	nc      *nats.Conn
	clock   Clock
	metrics *metrics
	// people resolves identities into persons (docs/contract.md, "People").
	people *people

	// The store, as each part sees it.
	asking      questionStore
	reports     deliveryStore
	deciding    attemptStore
	order       attemptOrder // answer attempts in stream order (order.go)
	cancelling  cancelStore
	steps       ladderStore
	bookkeeping pruneStore
	queries     apiStore
	adapters    eventConsumerStore
	notices     noticeStore
	gates       gateStore
	proposals   proposalStore
	queue       queueStore
	// instance is the store's database, named in the lease.
	instance string
	// shared: other runtimes share the store, and no lease is taken.
	shared bool
	// dueChanged hears of due steps other replicas changed (DueWatcher);
	// nil for a store of this runtime's alone.
	dueChanged <-chan struct{}
	// outbox is the relay publishing what the parts decided.
	outbox *relay
	// recorded holds the row ids of the questions this runtime recorded
	// lately, by key: the delivery report of a card shown, which follows
	// within a second, needs no read of the record.
	recorded *bridge.Memo[int64]

	ladWake  chan struct{}
	healWake chan struct{}
	// consuming are the consumers Run consumes (see heal).
	consuming []*consumption
	// hand is the messages of those consumers in hand, kept in progress.
	hand  *bridge.InHand
	ready chan struct{}
}

// recordedMemo is a generation of the row ids Runtime.recorded keeps
// (about a hundred bytes each).
const recordedMemo = 10000

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
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	log := o.Logger.With("component", "runtime")
	r := &Runtime{
		o:           o,
		log:         log,
		js:          o.NATS.JS,
		nc:          o.NATS.Conn,
		clock:       o.Clock,
		asking:      o.Store,
		reports:     o.Store,
		deciding:    o.Store,
		cancelling:  o.Store,
		steps:       o.Store,
		bookkeeping: o.Store,
		queries:     o.Store,
		adapters:    o.Store,
		notices:     o.Store,
		gates:       o.Store,
		proposals:   o.Store,
		queue:       o.Store,
		instance:    o.Store.Instance(),
		shared:      shared(o.Store),
		outbox:      newRelay(o, log),
		ladWake:     make(chan struct{}, 1),
		healWake:    make(chan struct{}, 1),
		hand:        bridge.NewInHand(),
		recorded:    bridge.NewMemo[int64](recordedMemo),
		ready:       make(chan struct{}),
	}
	r.hand.OnLong = bridge.WarnHeldLong(log, "runtime: a message", "no other replica gets it while this one lives")
	if w, ok := o.Store.(record.DueWatcher); ok && r.shared {
		r.dueChanged = w.DueChanged()
	}
	m, err := newMetrics(o.Registerer, o.Store, r.backlog, o.Platforms)
	r.o.Store = nil // each part holds its own view
	if err != nil {
		return nil, err
	}
	r.metrics = m
	r.outbox.published = m.published
	r.people = newPeople(o.People, o.Policy, o.Platforms)
	r.o.Roles.dir = r.people.directory
	if o.Registerer != nil {
		if err := o.Registerer.Register(&clarifyCollector{st: o.Store, now: r.stamp, o: o.Clarify}); err != nil {
			return nil, fmt.Errorf("runtime: register metrics: %w", err)
		}
	}
	return r, nil
}

// Run consumes until ctx is done, then stops its consumers and returns.
func (r *Runtime) Run(ctx context.Context) error {
	var stops []func()
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	// Everything below stops when the lease is lost, too.
	ctx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var leaseLost <-chan error // never, for a shared store
	if !r.shared {
		leaseKV, leaseRev, err := r.takeLease(ctx)
		if err != nil {
			return err
		}
		var dropLease func()
		leaseLost, dropLease = r.holdLease(ctx, leaseKV, leaseRev)
		defer dropLease()
	}
	answersAtStart, err := r.openStreams(ctx)
	if err != nil {
		return err
	}
	// Before the relay publishes: an event published while no adapter's
	// consumer exists is gone at once.
	fresh, err := r.ensureEventConsumers(ctx)
	if err != nil {
		return err
	}
	consumersStop, err := r.startConsumers(ctx)
	if err != nil {
		return err
	}
	stops = append(stops, consumersStop)
	apiStop, err := r.serveAPI(ctx)
	if err != nil {
		return err
	}
	stops = append(stops, apiStop)
	gateStop, err := r.serveGate(ctx)
	if err != nil {
		return err
	}
	stops = append(stops, gateStop)
	intakeStop, err := r.serveIntake(ctx)
	if err != nil {
		return err
	}
	stops = append(stops, intakeStop)

	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); r.outbox.run(ctx) }()
	go func() { defer wg.Done(); r.reaskAll(ctx, fresh); r.heal(ctx) }()
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

// openStreams looks up the streams the runtime reads besides consuming
// them, and returns the last answer stored when it started: answers that
// waited for the runtime (published while it was down) are decided before
// the ladder fires anything (see awaitAnswers).
func (r *Runtime) openStreams(ctx context.Context) (answersAtStart uint64, err error) {
	as, err := r.js.Stream(ctx, bridge.StreamAnswers)
	if err != nil {
		return 0, fmt.Errorf("runtime: answers stream: %w", err)
	}
	r.answers = as
	if r.questions, err = r.js.Stream(ctx, bridge.StreamQuestions); err != nil {
		return 0, fmt.Errorf("runtime: questions stream: %w", err)
	}
	return as.CachedInfo().State.LastSeq, nil
}
