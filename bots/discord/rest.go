package discord

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/bots/apimetrics"
	"github.com/askbridge/askbridge/bridge"
)

// Discord JSON error codes askbridge treats specially.
const (
	codeUnknownChannel    = 10003
	codeUnknownMessage    = 10008
	codeUnknownWebhook    = 10015
	codeUnknownInteract   = 10062
	codeMissingAccess     = 50001
	codeCannotDM          = 50007
	codeMissingPermission = 50013
	codeInvalidWebhookTok = 50027
	codeArchivedThread    = 50083
	codeThreadExists      = 160004
	codeThreadLocked      = 160005
)

// apiError is a Discord REST failure with the provider's raw text removed:
// the URL (which can hold an interaction token) and the body never appear.
type apiError struct {
	Op        string
	Status    int // HTTP status; 0 for a network failure
	Code      int // Discord's JSON error code, when it sent one
	RateLimit bool
	// RetryAfter is how long Discord asked to wait before the next try,
	// on a 429.
	RetryAfter time.Duration
	Network    string
}

func (e *apiError) Error() string {
	switch {
	case e.RateLimit:
		return fmt.Sprintf("discord: %s: rate limited", e.Op)
	case e.Status == 0:
		return fmt.Sprintf("discord: %s: %s", e.Op, e.Network)
	case e.Code != 0:
		return fmt.Sprintf("discord: %s: HTTP %d, code %d", e.Op, e.Status, e.Code)
	}
	return fmt.Sprintf("discord: %s: HTTP %d", e.Op, e.Status)
}

// transient reports whether trying again later may succeed.
func (e *apiError) transient() bool {
	return e.RateLimit || e.Status == 0 || e.Status >= 500
}

// sanitize turns a discordgo error into an apiError.
func sanitize(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("discord: %s: %w", op, err)
	}
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) {
		e := &apiError{Op: op, Status: 429, RateLimit: true}
		if rl.TooManyRequests != nil {
			e.RetryAfter = rl.RetryAfter
		}
		return e
	}
	var re *discordgo.RESTError
	if errors.As(err, &re) {
		e := &apiError{Op: op}
		if re.Response != nil {
			e.Status = re.Response.StatusCode
		}
		if re.Message != nil {
			e.Code = re.Message.Code
		}
		return e
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		msg := "network error"
		var ne net.Error
		if errors.As(ue.Err, &ne) && ne.Timeout() {
			msg = "timed out"
		}
		return &apiError{Op: op, Network: msg}
	}
	if errors.Is(err, discordgo.ErrJSONUnmarshal) {
		return &apiError{Op: op, Status: 200, Network: "unreadable response"}
	}
	// Anything else from discordgo may quote a URL or a body: keep it out.
	return &apiError{Op: op, Network: "request failed"}
}

// discordCode is the Discord error code of err, or 0.
func discordCode(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return 0
}

// retryAfter is how long Discord asked to wait after err (a 429), or 0.
func retryAfter(err error) time.Duration {
	var ae *apiError
	if errors.As(err, &ae) && ae.RateLimit {
		return ae.RetryAfter
	}
	return 0
}

// isTransient reports whether err may go away on a later try.
func isTransient(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.transient()
	}
	return true // NATS trouble and the like: try again
}

// call runs a Discord request. A 429 is retried at most rateLimitRetries
// times, and only when the wait asked for is short; discordgo's own retry
// (which loops forever) is off.
func (b *Bot) call(ctx context.Context, op string, fn func(opts ...discordgo.RequestOption) error) (err error) {
	start := time.Now()
	defer func() { b.calls.Done(op, start, err) }()
	for attempt := 0; ; attempt++ {
		err := fn(discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
		var rl *discordgo.RateLimitError
		if !errors.As(err, &rl) {
			return sanitize(op, err)
		}
		wait := time.Duration(0)
		if rl.TooManyRequests != nil {
			wait = rl.RetryAfter
		}
		if wait <= 0 {
			wait = 250 * time.Millisecond
		}
		if attempt >= rateLimitRetries || wait > b.rateLimitWait {
			return sanitize(op, err)
		}
		b.log.Info("discord: rate limited; waiting", "op", op, "wait", wait, "attempt", attempt+1)
		b.calls.Retry(op, apimetrics.RetryRateLimited)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("discord: %s: %w", op, ctx.Err())
		case <-t.C:
		}
	}
}

// failureFor turns a posting error into the typed failure the runtime
// reads. It never quotes Discord's response.
func failureFor(err error, channel string) *bridge.Failure {
	f := &bridge.Failure{Dependency: "discord", Operation: "post question"}
	var ae *apiError
	if !errors.As(err, &ae) {
		f.Code = bridge.CodeSourceUnreliable
		f.Retryable = true
		f.OperatorMessage = "askbridge could not reach Discord."
		return f
	}
	switch {
	case ae.Code == codeMissingAccess || ae.Code == codeMissingPermission || ae.Status == 401 || ae.Status == 403:
		f.Code = bridge.CodeAccessDenied
		f.RequiredCapability = "View Channel, Send Messages, Embed Links, Create Public Threads and Send Messages in Threads in channel " + channel
		f.SafeFallback = "answer in the askbridge console or with /ask"
		f.OperatorMessage = fmt.Sprintf("Discord refused the bot access to channel %s (HTTP %d, code %d): grant the bot the permissions listed.", channel, ae.Status, ae.Code)
		if ae.Status == 401 {
			f.OperatorMessage = "Discord rejected the bot token (HTTP 401): check ASK_DISCORD_BOT_TOKEN."
			f.RequiredCapability = "a valid bot token"
		}
	case ae.Code == codeUnknownChannel || ae.Status == 404:
		f.Code = bridge.CodeReferenceUnresolved
		f.OperatorMessage = fmt.Sprintf("Discord does not know channel %s (HTTP %d, code %d): check route.discord.channel_id or ASK_DISCORD_CHANNEL.", channel, ae.Status, ae.Code)
		f.SafeFallback = "answer in the askbridge console or with /ask"
	case ae.transient():
		f.Code = bridge.CodeSourceUnreliable
		f.Retryable = true
		f.OperatorMessage = "Discord did not accept the message after several tries (" + ae.Error() + ")."
	default:
		f.Code = bridge.CodeCapabilityUnavailable
		f.OperatorMessage = fmt.Sprintf("Discord refused the message (HTTP %d, code %d).", ae.Status, ae.Code)
	}
	return f
}

// messageCreate is discordgo.MessageSend plus the nonce fields discordgo
// v0.29.0 lacks: with enforce_nonce Discord returns the message already
// created with that nonce instead of posting a second one, which makes a
// retried post after a crash idempotent.
type messageCreate struct {
	Content         string                            `json:"content,omitempty"`
	Embeds          []*discordgo.MessageEmbed         `json:"embeds"`
	Components      []discordgo.MessageComponent      `json:"components"`
	AllowedMentions *discordgo.MessageAllowedMentions `json:"allowed_mentions,omitempty"`
	Nonce           string                            `json:"nonce,omitempty"`
	EnforceNonce    bool                              `json:"enforce_nonce,omitempty"`
}

// nonceFor is a 25-character nonce derived from what is being posted.
func nonceFor(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))[:25]
}

// postMessage creates a message in channel.
func (b *Bot) postMessage(ctx context.Context, op, channel string, m *messageCreate) (*discordgo.Message, error) {
	for _, e := range m.Embeds {
		if e.Type == "" {
			e.Type = discordgo.EmbedTypeRich
		}
	}
	var msg *discordgo.Message
	err := b.call(ctx, op, func(opts ...discordgo.RequestOption) error {
		ep := discordgo.EndpointChannelMessages(channel)
		body, err := b.s.RequestWithBucketID("POST", ep, m, ep, opts...)
		if err != nil {
			return err
		}
		return json.Unmarshal(body, &msg)
	})
	if err != nil {
		return nil, err
	}
	if msg == nil || msg.ID == "" {
		return nil, &apiError{Op: op, Status: 200, Network: "response without a message id"}
	}
	return msg, nil
}

// noMentions keeps cards from pinging: people are named, not notified
// (reminders go by DM).
var noMentions = &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
