// Package slack is askbridge's Slack front-end. It shows questions as
// Block Kit cards in each job's thread, turns clicks, modal submissions and
// /ask commands into answer attempts for the runtime, and keeps the cards
// in step with the runtime's events. It decides nothing: the runtime owns
// every question's state, and a card is only a projection of it.
//
// It meets the rest of askbridge only on NATS (bridge types). Which
// message shows which question is the runtime's record; the adapter keeps
// only one-off side effects in a JetStream KV bucket (KVBucket).
package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/bots/apimetrics"
	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// Options configure the Slack adapter; the serve command fills them from
// the ASK_SLACK_* variables.
type Options struct {
	NATS           *bridge.NATS   // connected, streams exist
	BotToken       string         // ASK_SLACK_BOT_TOKEN
	SigningSecret  string         // ASK_SLACK_SIGNING_SECRET
	AppToken       string         // ASK_SLACK_APP_TOKEN (xapp-..., Socket Mode when set)
	APIURL         string         // ASK_SLACK_API_URL, ends with "/"
	DefaultChannel string         // ASK_SLACK_CHANNEL
	Console        console.Signer // PublicURL + Secret; links for people
	Logger         *slog.Logger
	// AckAfterDecision acknowledges a click only once the runtime has
	// decided (and durably recorded) its attempt; when the interaction's
	// time is nearly up first, it is answered 503, not recorded. serve
	// sets it when JetStream does not fsync every write.
	AckAfterDecision bool
	// Registerer, when set, gets the Slack API call metrics.
	Registerer prometheus.Registerer
	// ReportSync: see engine.Cards.ReportSync.
	ReportSync time.Duration
}

// ConsumerName is the durable JetStream consumer all replicas share, so
// each event is handled by one of them (bridge.EventConsumer).
const ConsumerName = bridge.PlatformSlack

// Bot is the Slack adapter. It is safe for concurrent use.
type Bot struct {
	o    Options
	api  *slack.Client
	http *http.Client
	js   jetstream.JetStream
	kv   *bridge.KV
	// hints names each new job's thread (bridge.ThreadsBucket).
	hints *bridge.KV
	// clicksKV holds the double-click markers (ClicksBucket).
	clicksKV *bridge.KV
	log      *slog.Logger
	pace     *pacer
	retry    retryPolicy
	now      func() time.Time
	// cards is the card lifecycle; threads remembers each job's thread by
	// channel (docs/design.md, "Card state").
	cards *engine.Cards
	// reactions routes the runtime's events to the cards and the rest.
	reactions *engine.Reactions
	threads   *bridge.Memo[string]
	// workers is how many events are handled at once (ordered per job).
	workers int
	clicks  *dedupe
	// clickClaimed, set by tests only, runs between a click's claim and
	// the publication of its attempt: where a replica's death must not
	// lose the click.
	clickClaimed atomic.Pointer[func()]
	// redelivered remembers the interactions Socket Mode delivered, so
	// one Slack delivers again (retry_attempt > 0) has one effect.
	redelivered *replies
	calls       *apimetrics.Calls
	// decided is set with Options.AckAfterDecision.
	decided *bridge.Decisions
	// dmChannels remembers each person's DM channel (conversations.open
	// gives the same one every time), so a reminder to many people costs
	// one paced call per person once, not per reminder.
	dmMu       sync.Mutex
	dmChannels map[string]string
	// budget is ackBudget. Tests not about it lengthen it: what they show
	// must not hang on how busy the machine is.
	budget time.Duration
}

// ackBudget bounds the work done before answering an interaction or a
// command: Slack wants the answer within 3 s.
const ackBudget = 2500 * time.Millisecond

// formLookup bounds a lookup of the runtime's before a form opens: two
// fifths of the budget (a second), leaving the rest for views.open
// within the trigger id's 3 seconds.
func (b *Bot) formLookup() time.Duration { return b.budget * 2 / 5 }

// New checks the options and prepares the adapter: the Slack client and
// the KV bucket. It does not call Slack, so a Slack outage does not stop
// askbridge from starting; failures show up as delivery failures.
func New(ctx context.Context, o Options) (*Bot, error) {
	if err := checkOptions(&o); err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: 15 * time.Second, Transport: ratelimitedAs429{next: engine.Transport()}}
	opts := []slack.Option{slack.OptionAPIURL(o.APIURL), slack.OptionHTTPClient(hc)}
	if o.AppToken != "" {
		opts = append(opts, slack.OptionAppLevelToken(o.AppToken))
	}
	kv, err := bridge.EnsureKV(ctx, o.NATS.JS, kvConfig)
	if err != nil {
		return nil, fmt.Errorf("slack: %w", err)
	}
	hints, err := o.NATS.EnsureThreads(ctx)
	if err != nil {
		return nil, fmt.Errorf("slack: %w", err)
	}
	clicksKV, err := o.NATS.EnsureHints(ctx, clicksConfig)
	if err != nil {
		return nil, fmt.Errorf("slack: %w", err)
	}
	var decided *bridge.Decisions
	if o.AckAfterDecision {
		if decided, err = bridge.WatchDecisions(o.NATS.Conn); err != nil {
			return nil, fmt.Errorf("slack: watch decisions: %w", err)
		}
	}
	calls, err := apimetrics.New(o.Registerer, bridge.PlatformSlack)
	if err != nil {
		return nil, fmt.Errorf("slack: metrics: %w", err)
	}
	calls.Preset("chat.postMessage", "chat.update")
	b := &Bot{
		calls:       calls,
		decided:     decided,
		o:           o,
		api:         slack.New(o.BotToken, opts...),
		http:        hc,
		js:          o.NATS.JS,
		kv:          kv,
		hints:       hints,
		clicksKV:    clicksKV,
		log:         o.Logger,
		pace:        newPacer(time.Second, 3),
		retry:       defaultRetry,
		now:         time.Now,
		threads:     bridge.NewMemo[string](threadMemo),
		workers:     engine.DefaultWorkers,
		redelivered: newReplies(socketRedelivery),
		dmChannels:  map[string]string{},
		budget:      ackBudget,
	}
	b.clicks = newDedupe(clickFold, func() time.Time { return b.now() })
	b.cards = engine.NewCards(bridge.PlatformSlack, platform{b}, o.NATS, kv, o.Logger)
	b.cards.Now = func() time.Time { return b.now() }
	b.cards.ReportSync = o.ReportSync
	b.reactions = &engine.Reactions{Name: "slack", Cards: b.cards, RestrictedAsked: b.onRestrictedAsked,
		Refused: b.onRefused, Reminder: b.onReminder, Notice: b.onNotice, Logger: b.log}
	return b, nil
}

// checkOptions refuses the settings of o that cannot work, naming the
// first, and fills in the defaults.
func checkOptions(o *Options) error {
	if o.NATS == nil || o.NATS.JS == nil || o.NATS.Conn == nil {
		return errors.New("slack: a connected NATS with JetStream is required")
	}
	if o.BotToken == "" {
		return errors.New("slack: ASK_SLACK_BOT_TOKEN is required")
	}
	if o.SigningSecret == "" && o.AppToken == "" {
		return errors.New("slack: ASK_SLACK_SIGNING_SECRET (HTTP) or ASK_SLACK_APP_TOKEN (Socket Mode) is required")
	}
	if o.AppToken != "" && !strings.HasPrefix(o.AppToken, "xapp-") {
		return errors.New("slack: ASK_SLACK_APP_TOKEN must be an app-level token starting with xapp-")
	}
	if o.APIURL == "" {
		o.APIURL = "https://slack.com/api/"
	}
	if !strings.HasSuffix(o.APIURL, "/") {
		return errors.New("slack: ASK_SLACK_API_URL must end with / (such as https://slack.com/api/)")
	}
	if o.DefaultChannel != "" && !bridge.ValidSlackID(o.DefaultChannel) {
		return fmt.Errorf("slack: ASK_SLACK_CHANNEL %q must be a channel id such as C0123", o.DefaultChannel)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// threadMemo is a generation of remembered job threads (a few dozen
// bytes each).
const threadMemo = 50000

// kvConfig is the adapter's bucket.
var kvConfig = jetstream.KeyValueConfig{
	Bucket:      KVBucket,
	Description: "askbridge Slack adapter: one-off side effects, stray cards",
	History:     1,
	TTL:         kvTTL,
	Storage:     jetstream.FileStorage,
}

// Routes registers Slack's HTTP endpoints.
func (b *Bot) Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /slack/interactions", b.serveInteractions)
	mux.HandleFunc("POST /slack/commands", b.serveCommands)
}

// Run consumes the runtime's events (and, with an app token, Slack's
// Socket Mode) until ctx is done; it then returns nil.
func (b *Bot) Run(ctx context.Context) error {
	// The consumer and the bucket are made again when they are gone (a
	// NATS server that restarted without its store): see bridge.Durable.
	events := &bridge.Durable{NATS: b.o.NATS, Stream: bridge.StreamEvents, Logger: b.log,
		Config: bridge.EventConsumer(ConsumerName),
		// Each bucket is made whatever became of the others.
		Remake: func(ctx context.Context) error {
			_, refsErr := bridge.EnsureKV(ctx, b.js, kvConfig)
			_, threadsErr := b.o.NATS.EnsureThreads(ctx)
			_, clicksErr := b.o.NATS.EnsureHints(ctx, clicksConfig)
			return errors.Join(refsErr, threadsErr, clicksErr)
		},
		// A bucket alone can go too (deleted): every event needs the
		// adapter's, and every click the clicks bucket.
		Look: func(ctx context.Context) error {
			for _, bucket := range []string{KVBucket, ClicksBucket} {
				if _, err := b.js.KeyValue(ctx, bucket); err != nil {
					return fmt.Errorf("key-value bucket %s: %w", bucket, err)
				}
			}
			return nil
		},
	}
	// Socket Mode stops with the loop, also when the loop cannot start.
	ctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	if b.o.AppToken != "" {
		wg.Go(func() { b.runSocketMode(ctx) })
	}
	if b.hints != nil {
		engine.FollowHints(ctx, b.hints, threadHintPrefix, 5*time.Second, b.log, b.followThread)
	}
	loop := &engine.Loop{Name: "slack", Events: events, Logger: b.log, PullMax: 256, Workers: b.workers,
		Handle: func(ctx context.Context, ev *bridge.Event, d engine.Delivery) error {
			return b.handleEvent(ctx, ev, d)
		},
		Classify: classifyEventError,
	}
	return loop.Run(ctx)
}

// classifyEventError reads an error of an event's handler for the event
// loop: a rate limit waits as long as Slack asked; every other error is
// tried again (a handler reports what can never work, on its last try).
func classifyEventError(err error) engine.Verdict {
	var ae *apiError
	if errors.As(err, &ae) && ae.RetryAfter > 0 {
		return engine.Verdict{Kind: engine.RateLimited, RetryAfter: ae.RetryAfter}
	}
	return engine.Verdict{Kind: engine.Transient}
}

// dedupe remembers recent clicks and the attempt each made, so a double
// click is one attempt even before the runtime sees it.
type dedupe struct {
	mu   sync.Mutex
	ttl  time.Duration
	now  func() time.Time
	seen map[string]seenClick
	// nextPrune spaces out sweeps of the map: sweeping on every call once
	// it is large made each click cost a walk over every recent click.
	nextPrune time.Time
}

// seenClick is a click remembered: when, and the attempt it made.
type seenClick struct {
	at      time.Time
	attempt *bridge.AnswerAttempt
}

func newDedupe(ttl time.Duration, now func() time.Time) *dedupe {
	return &dedupe{ttl: ttl, now: now, seen: map[string]seenClick{}}
}

// first records key with the attempt it makes when key was not seen
// within the window, and returns nil; otherwise it returns the attempt
// the click seen first made, which the caller publishes again.
func (d *dedupe) first(key string, at *bridge.AnswerAttempt) *bridge.AnswerAttempt {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	if c, ok := d.seen[key]; ok && now.Sub(c.at) < d.ttl {
		return c.attempt
	}
	if len(d.seen) > 4096 && !now.Before(d.nextPrune) {
		d.nextPrune = now.Add(d.ttl / 2)
		for k, c := range d.seen {
			if now.Sub(c.at) >= d.ttl {
				delete(d.seen, k)
			}
		}
	}
	d.seen[key] = seenClick{at: now, attempt: at}
	return nil
}

// hold makes at the attempt key stands for: the one another replica's
// click made first.
func (d *dedupe) hold(key string, at *bridge.AnswerAttempt) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.seen[key]; ok {
		c.attempt = at
		d.seen[key] = c
	}
}

// forget lets key through again: the click it stood for had no effect
// (its attempt could not be published), so the person's retry must count.
func (d *dedupe) forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.seen, key)
}
