// Package discord is askbridge's Discord front-end. It shows questions as
// channel messages with components (one thread per job), takes clicks,
// modal submits and the /ask command over HTTP interactions, and proposes
// answers to the runtime. It decides nothing: the runtime validates every
// attempt and tells the bot, through events, what to show.
//
// It meets the rest of askbridge only on NATS subjects and bridge types.
package discord

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge/bots/apimetrics"
	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// Options configure the bot; the serve command fills them from config.
type Options struct {
	NATS           *bridge.NATS
	BotToken       string   // ASK_DISCORD_BOT_TOKEN
	PublicKey      string   // ASK_DISCORD_PUBLIC_KEY (hex ed25519)
	AppID          string   // ASK_DISCORD_APP_ID
	APIURL         string   // ASK_DISCORD_API_URL, ends with "/", e.g. https://discord.com/api/v10/
	DefaultChannel string   // ASK_DISCORD_CHANNEL
	Guild          string   // ASK_DISCORD_GUILD (guild-scoped command registration when set)
	AdminRoles     []string // ASK_DISCORD_ADMIN_ROLES (Discord role ids → askbridge admin)
	OperatorRoles  []string // ASK_DISCORD_OPERATOR_ROLES
	Console        console.Signer
	Logger         *slog.Logger
	// AckAfterDecision acknowledges an attempt only once the runtime has
	// decided (and durably recorded) it; when the interaction's time is
	// nearly up first, the person is told it could not be recorded.
	// serve sets it when JetStream does not fsync every write.
	AckAfterDecision bool
	// Registerer, when set, gets the Discord API call metrics.
	Registerer prometheus.Registerer
	// ReportSync: see engine.Cards.ReportSync.
	ReportSync time.Duration
}

// Names of the JetStream objects the bot owns.
const (
	// ConsumerName is the durable pull consumer on bridge.StreamEvents
	// (bridge.EventConsumer).
	ConsumerName = bridge.PlatformDiscord
	// RefsBucket holds the index of custom ids too long to name their
	// question, and the rare card whose post failed in a way that may hide
	// a success (engine.Cards). Which message shows which question is the
	// runtime's record (docs/design.md, "Card state").
	RefsBucket = "ASK_DISCORD_REFS"
	// SeenBucket remembers interaction ids for a day, and sent refusals
	// and reminders while the events stream may hand their events out
	// again (to a new consumer), so replays and redeliveries do nothing
	// twice.
	SeenBucket = "ASK_DISCORD_SEEN"
	seenTTL    = bridge.EventRecordTTL
	// interactionTTL: Discord retries an interaction within seconds.
	interactionTTL = 24 * time.Hour
	// refsTTL outlives the longest question (entries expire after their
	// last write); a waiting card's record lives this long.
	refsTTL = bridge.MaxTimeout + 14*24*time.Hour
)

// Timing limits.
const (
	// maxClockSkew is how far an interaction's signed timestamp may be
	// from our clock.
	maxClockSkew = 5 * time.Minute
	// interactionBudget bounds the work done before answering Discord,
	// which wants the initial response within 3 seconds.
	interactionBudget = 2 * time.Second
	// maxBodyBytes bounds an interaction body (real ones are a few KiB);
	// a larger one is refused with 413 before its signature is checked.
	maxBodyBytes = 1 << 20
	httpTimeout  = 15 * time.Second
	// A 429 is retried at most rateLimitRetries times, and only when
	// Discord asks to wait no longer than maxRateLimitWait.
	rateLimitRetries = 3
	maxRateLimitWait = 10 * time.Second
	// maxEventAttempts bounds how often a transient failure of one event
	// is retried before it is reported and dropped.
	maxEventAttempts = 6
)

// Bot is the Discord front-end.
type Bot struct {
	calls *apimetrics.Calls
	// decided is set with Options.AckAfterDecision.
	decided *bridge.Decisions
	o       Options
	log     *slog.Logger
	s       *discordgo.Session
	pub     ed25519.PublicKey
	refs    *bridge.KV
	// hints names each new job's thread (bridge.ThreadsBucket).
	hints *bridge.KV
	seen  *bridge.KV
	// proposing, set by tests only, runs just before an attempt is
	// published: where a replica's death must not lose the interaction.
	proposing atomic.Pointer[func()]
	admin     map[string]bool
	oper      map[string]bool
	now       func() time.Time
	backoff   func(attempt uint64) time.Duration
	// cards is the card lifecycle; threads remembers each job's thread by
	// channel, guilds each channel's guild (docs/design.md, "Card state").
	cards *engine.Cards
	// reactions routes the runtime's events to the cards and the rest.
	reactions *engine.Reactions
	threads   *bridge.Memo[string]
	guilds    *bridge.Memo[string]
	// hinted is each job's new thread as the threads bucket names it,
	// followed (followThread).
	hinted *bridge.Memo[jobThread]
	// rateLimitWait is maxRateLimitWait; tests shorten it.
	rateLimitWait time.Duration
	// healEvery is how often the events consumer and the buckets are
	// looked for; 0: bridge.HealEvery. Tests shorten it.
	healEvery time.Duration
	// budget is interactionBudget. Tests not about it lengthen it: what
	// they show must not hang on how busy the machine is.
	budget time.Duration
}

// endpointsMu serializes re-pointing discordgo's package-level endpoints.
var endpointsMu sync.Mutex

// New checks the options, points discordgo at APIURL and creates the
// bot's JetStream key-value buckets. Errors never carry the token.
func New(ctx context.Context, o Options) (*Bot, error) {
	if o.NATS == nil || o.NATS.Conn == nil || o.NATS.JS == nil {
		return nil, errors.New("discord: a NATS connection with JetStream is required")
	}
	if o.APIURL == "" {
		o.APIURL = "https://discord.com/api/v10/"
	}
	key, err := checkOptions(o)
	if err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	pointEndpoints(o.APIURL)

	s, err := discordgo.New("Bot " + o.BotToken)
	if err != nil {
		return nil, errors.New("discord: cannot create the REST client")
	}
	s.ShouldRetryOnRateLimit = false
	s.MaxRestRetries = 1
	s.Client = &http.Client{Timeout: httpTimeout, Transport: &rateHold{next: engine.Transport()}}
	s.UserAgent = "DiscordBot (https://github.com/askbridge/askbridge, 1) askbridge"

	refs, err := bridge.EnsureKV(ctx, o.NATS.JS, refsConfig)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	hints, err := o.NATS.EnsureThreads(ctx)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	seen, err := bridge.EnsureKV(ctx, o.NATS.JS, seenConfig)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	var decided *bridge.Decisions
	if o.AckAfterDecision {
		if decided, err = bridge.WatchDecisions(o.NATS.Conn); err != nil {
			return nil, fmt.Errorf("discord: watch decisions: %w", err)
		}
	}
	calls, err := apimetrics.New(o.Registerer, bridge.PlatformDiscord)
	if err != nil {
		return nil, fmt.Errorf("discord: metrics: %w", err)
	}
	calls.Preset("post question", "edit question")
	b := &Bot{
		calls:         calls,
		decided:       decided,
		o:             o,
		log:           o.Logger,
		s:             s,
		pub:           key,
		refs:          refs,
		hints:         hints,
		seen:          seen,
		admin:         set(o.AdminRoles),
		oper:          set(o.OperatorRoles),
		now:           time.Now,
		threads:       bridge.NewMemo[string](50000),
		hinted:        bridge.NewMemo[jobThread](50000),
		guilds:        bridge.NewMemo[string](1000),
		rateLimitWait: maxRateLimitWait,
		budget:        interactionBudget,
		backoff:       engine.Backoff,
	}
	b.cards = engine.NewCards(bridge.PlatformDiscord, platform{b}, o.NATS, refs, o.Logger)
	b.cards.Now = func() time.Time { return b.now() }
	b.cards.ReportSync = o.ReportSync
	b.reactions = &engine.Reactions{Name: "discord", Cards: b.cards, RestrictedAsked: b.onRestrictedAsked,
		Refused: b.onRefused, Reminder: b.onReminder, Notice: b.onNotice, Logger: b.log}
	return b, nil
}

// checkOptions names every setting of o that cannot work, and returns the
// application's public key.
func checkOptions(o Options) (ed25519.PublicKey, error) {
	var problems []string
	if strings.TrimSpace(o.BotToken) == "" {
		problems = append(problems, "the bot token (ASK_DISCORD_BOT_TOKEN) is required")
	}
	if strings.TrimSpace(o.AppID) == "" {
		problems = append(problems, "the application id (ASK_DISCORD_APP_ID) is required")
	}
	key, err := hex.DecodeString(strings.TrimSpace(o.PublicKey))
	if err != nil || len(key) != ed25519.PublicKeySize {
		problems = append(problems, "the public key (ASK_DISCORD_PUBLIC_KEY) must be 64 hexadecimal characters")
	}
	if u, err := url.Parse(o.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.HasSuffix(o.APIURL, "/") {
		problems = append(problems, "the API URL (ASK_DISCORD_API_URL) must be an http(s) URL ending with /, such as https://discord.com/api/v10/")
	}
	if len(problems) > 0 {
		return nil, errors.New("discord: " + strings.Join(problems, "; "))
	}
	return ed25519.PublicKey(key), nil
}

func set(l []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range l {
		if s = strings.TrimSpace(s); s != "" {
			m[s] = true
		}
	}
	return m
}

// pointEndpoints re-points discordgo's endpoint variables, computed once at
// its init from the default API base, at api (ending with "/"). The
// variables are package globals: only assign when they change, so bots in
// one process sharing a base never write them concurrently with readers.
func pointEndpoints(api string) {
	endpointsMu.Lock()
	defer endpointsMu.Unlock()
	if discordgo.EndpointAPI == api {
		return
	}
	discordgo.EndpointAPI = api
	discordgo.EndpointGuilds = api + "guilds/"
	discordgo.EndpointChannels = api + "channels/"
	discordgo.EndpointUsers = api + "users/"
	discordgo.EndpointGateway = api + "gateway"
	discordgo.EndpointGatewayBot = discordgo.EndpointGateway + "/bot"
	discordgo.EndpointWebhooks = api + "webhooks/"
	discordgo.EndpointStickers = api + "stickers/"
	discordgo.EndpointStageInstances = api + "stage-instances"
	discordgo.EndpointVoice = api + "/voice/"
	discordgo.EndpointVoiceRegions = discordgo.EndpointVoice + "regions"
	discordgo.EndpointNitroStickersPacks = api + "/sticker-packs"
	discordgo.EndpointGuildCreate = api + "guilds"
	discordgo.EndpointApplications = api + "applications"
	discordgo.EndpointOAuth2 = api + "oauth2/"
	discordgo.EndpointOAuth2Applications = discordgo.EndpointOAuth2 + "applications"
	discordgo.EndpointOauth2 = discordgo.EndpointOAuth2
	discordgo.EndpointOauth2Applications = discordgo.EndpointOAuth2Applications
}

// Routes mounts the interactions endpoint.
func (b *Bot) Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /discord/interactions", b.handleInteraction)
}

// The adapter's buckets.
var (
	refsConfig = jetstream.KeyValueConfig{
		Bucket:      RefsBucket,
		Description: "askbridge Discord custom id index, stray cards",
		History:     1,
		TTL:         refsTTL,
		Storage:     jetstream.FileStorage,
	}
	seenConfig = jetstream.KeyValueConfig{
		Bucket:      SeenBucket,
		Description: "askbridge Discord interactions, refusals and reminders already handled",
		History:     1,
		TTL:         seenTTL,
		Storage:     jetstream.FileStorage,
	}
)

// Run registers the /ask command and consumes the runtime's events until
// ctx is done; then it returns nil.
func (b *Bot) Run(ctx context.Context) error {
	if err := b.registerCommands(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		// Posting questions works without the command: say so, go on.
		b.log.Error("discord: could not register the /ask command", "err", err)
	}
	// The consumer and the buckets are made again when they are gone (a
	// NATS server that restarted without its store): see bridge.Durable.
	events := &bridge.Durable{NATS: b.o.NATS, Stream: bridge.StreamEvents, Logger: b.log, HealEvery: b.healEvery,
		Config: bridge.EventConsumer(ConsumerName),
		// Each bucket is made whatever became of the one before it.
		Remake: func(ctx context.Context) error {
			var errs []error
			for _, cfg := range []jetstream.KeyValueConfig{refsConfig, seenConfig} {
				_, err := bridge.EnsureKV(ctx, b.o.NATS.JS, cfg)
				errs = append(errs, err)
			}
			_, err := b.o.NATS.EnsureThreads(ctx)
			return errors.Join(append(errs, err)...)
		},
		// The buckets alone can go too (deleted): every event needs them.
		Look: func(ctx context.Context) error {
			for _, cfg := range []jetstream.KeyValueConfig{refsConfig, seenConfig} {
				if _, err := b.o.NATS.JS.KeyValue(ctx, cfg.Bucket); err != nil {
					return fmt.Errorf("key-value bucket %s: %w", cfg.Bucket, err)
				}
			}
			return nil
		},
	}
	if b.hints != nil {
		engine.FollowHints(ctx, b.hints, threadHintPrefix, 5*time.Second, b.log, b.followThread)
	}
	loop := &engine.Loop{Name: "discord", Events: events, Logger: b.log, PullMax: 32,
		MaxDeliveries: maxEventAttempts, Handle: b.handleEvent, Classify: classifyEventError,
		Backoff: func(attempt uint64) time.Duration { return b.backoff(attempt) },
	}
	return loop.Run(ctx)
}
