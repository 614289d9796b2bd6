package slack

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/bots/apimetrics"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// apiError is a Slack Web API call that failed for good (after retries).
// It carries Slack's error code, never the request or the token.
type apiError struct {
	Op        string // e.g. chat.postMessage
	Code      string // Slack's error code, e.g. channel_not_found
	Transient bool   // worth retrying later (rate limit, 5xx, network)
	// Needed and Provided are Slack's scope diagnostics on missing_scope
	// (scope names, nothing secret).
	Needed, Provided string
	// RetryAfter is the wait a rate limit asked for, when it was longer
	// than a call waits in-process.
	RetryAfter time.Duration
	err        error
}

func (e *apiError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("slack: %s: %s", e.Op, e.Code)
	}
	return fmt.Sprintf("slack: %s: %v", e.Op, e.err)
}

func (e *apiError) Unwrap() error { return e.err }

// transientCodes are Slack error codes that say "try again later" (a rate
// limit, in any spelling, is read by rateLimited first).
var transientCodes = map[string]bool{
	"internal_error": true, "fatal_error": true, "service_unavailable": true,
	"request_timeout": true, "team_added_to_org": true,
}

// rateLimited reports whether err is Slack's 429. slack-go makes a
// RateLimitedError only when the response carries Retry-After; without it
// a 429 is still a rate limit, to be retried after at least a second, not
// a failure to report.
func rateLimited(err error) (*slack.RateLimitedError, bool) {
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return rl, true
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) && sc.Code == http.StatusTooManyRequests {
		return &slack.RateLimitedError{}, true
	}
	// Slack also says so in a 200: {"ok":false,"error":"ratelimited"}.
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && (se.Err == "ratelimited" || se.Err == "rate_limited") {
		return &slack.RateLimitedError{}, true
	}
	return nil, false
}

// ratelimitedAs429 makes Slack's {"ok":false,"error":"ratelimited"} in a
// 200 that carries a Retry-After header a 429, which slack-go reads as a
// *slack.RateLimitedError with the wait Slack asked for (on a 200 it
// keeps only the error code, and the wait would be lost).
type ratelimitedAs429 struct{ next http.RoundTripper }

func (t ratelimitedAs429) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp.Header.Get("Retry-After") == "" {
		return resp, err
	}
	wholeSeconds(resp.Header)
	if resp.StatusCode != http.StatusOK {
		return resp, nil
	}
	const most = 64 << 10
	raw, rerr := io.ReadAll(io.LimitReader(resp.Body, most))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(raw), resp.Body), resp.Body}
	var body struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if rerr != nil || len(raw) >= most || json.Unmarshal(raw, &body) != nil || body.OK ||
		(body.Error != "ratelimited" && body.Error != "rate_limited") {
		return resp, nil
	}
	resp.StatusCode, resp.Status = http.StatusTooManyRequests, "429 Too Many Requests"
	return resp, nil
}

// wholeSeconds rounds a Retry-After of fractional seconds (1.5, as a
// proxy may send) up to whole ones: slack-go reads only whole seconds,
// and fails the call as an unknown error otherwise.
func wholeSeconds(h http.Header) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f < 1e9 {
		h.Set("Retry-After", strconv.FormatInt(int64(math.Ceil(f)), 10))
	}
}

// classify turns a slack-go error into an apiError.
func classify(op string, err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	out := &apiError{Op: op, err: err}
	var se slack.SlackErrorResponse
	var sc slack.StatusCodeError
	var ne net.Error
	var ue *url.Error
	_, limited := rateLimited(err)
	switch {
	case limited:
		out.Code, out.Transient = "ratelimited", true
	case errors.As(err, &se):
		out.Code = se.Err
		out.Transient = transientCodes[se.Err]
		out.Needed, out.Provided = se.Needed, se.Provided
	case errors.As(err, &sc):
		out.Code = fmt.Sprintf("http_%d", sc.Code)
		out.Transient = sc.Code >= 500 || sc.Code == 408
	case errors.As(err, &ne), errors.As(err, &ue):
		out.Code, out.Transient = "network_error", true
	case errors.Is(err, context.DeadlineExceeded):
		out.Code, out.Transient = "timeout", true
	default:
		out.Code = "unexpected_error"
	}
	return out
}

// failure maps a failed Slack call to the typed failures of docs/contract.md, with a
// message an operator can act on and nothing secret in it.
func failure(op, channel string, e *apiError) *bridge.Failure {
	f := &bridge.Failure{Dependency: "slack", Operation: op, Retryable: e.Transient}
	where := ""
	if channel != "" {
		where = " in channel " + channel
	}
	switch e.Code {
	case "channel_not_found", "thread_not_found", "message_not_found", "user_not_found", "users_not_found", "invalid_channel":
		f.Code = bridge.CodeReferenceUnresolved
		f.SafeFallback = "Check route.slack.channel / ASK_SLACK_CHANNEL: use a channel id such as C0123 the app can see."
	case "invalid_thread_ts":
		f.Code = bridge.CodeReferenceUnresolved
		f.SafeFallback = "Check route.slack.thread_ts: the ts of a message in the channel, such as 1700000000.000100, or leave it empty."
	case "not_in_channel", "is_archived", "channel_is_archived", "restricted_action", "restricted_action_read_only_channel",
		"restricted_action_thread_only_channel", "restricted_action_non_threadable_channel", "cannot_dm_bot", "access_denied",
		"ekm_access_denied", "team_access_not_granted", "messages_tab_disabled", "user_disabled":
		f.Code = bridge.CodeAccessDenied
		f.SafeFallback = "Invite the askbridge app to the channel (/invite @askbridge), or route the question elsewhere."
	case "missing_scope", "invalid_auth", "account_inactive", "token_revoked", "token_expired", "not_authed",
		"no_permission", "not_allowed_token_type", "org_login_required", "ekm_access_denied_on_team":
		f.Code = bridge.CodeCapabilityUnavailable
		f.RequiredCapability = "slack:chat:write"
		if e.Code == "missing_scope" {
			f.RequiredCapability = "slack:scopes of deploy/slack-app-manifest.yaml"
			if e.Needed != "" {
				f.RequiredCapability = "slack:" + e.Needed
			}
		}
		f.SafeFallback = "Reinstall the Slack app from deploy/slack-app-manifest.yaml and set ASK_SLACK_BOT_TOKEN."
	default:
		if e.Transient {
			f.Code = bridge.CodeSourceUnreliable
			f.SafeFallback = "Slack did not accept the message after several tries; askbridge will not retry this delivery."
		} else {
			f.Code = bridge.CodeCapabilityUnavailable
			f.SafeFallback = "Slack refused the message; see the operator message and the askbridge log."
		}
	}
	f.OperatorMessage = fmt.Sprintf("Slack refused %s%s: %s", op, where, e.Code)
	if e.Needed != "" {
		f.OperatorMessage += fmt.Sprintf(" (the app needs the scope %s; its token has %s)", e.Needed, cmp.Or(e.Provided, "none named"))
	}
	return f
}

// retryPolicy bounds retries of one Slack call. Rate limits honour
// Retry-After; other transient errors back off exponentially with jitter.
type retryPolicy struct {
	Tries       int           // attempts in all
	Base        time.Duration // first backoff
	Cap         time.Duration // longest backoff
	MaxRetryAft time.Duration // longest Retry-After we wait in-process
}

var defaultRetry = retryPolicy{Tries: 4, Base: 250 * time.Millisecond, Cap: 5 * time.Second, MaxRetryAft: 30 * time.Second}

// call runs one Slack Web API call with per-channel pacing and bounded
// retries. channel may be empty for calls not tied to one.
func (b *Bot) call(ctx context.Context, op, channel string, fn func(context.Context) error) error {
	return b.callChecked(ctx, op, channel, fn, nil)
}

// callChecked is call for a request Slack may have carried out although
// the try failed: after a failure that leaves the outcome unknown (a
// timeout, a dropped connection, a 5xx; not a rate limit, after which
// Slack did nothing), done is asked before the next try whether an
// earlier try took effect, and if it says so the call has succeeded. A
// nil done retries at once, as call does.
func (b *Bot) callChecked(ctx context.Context, op, channel string, fn func(context.Context) error, done func(context.Context) (bool, error)) (err error) {
	start := time.Now()
	defer func() {
		var hold *engine.Hold
		if !errors.As(err, &hold) { // a call put off is counted when made
			b.calls.Done(op, start, err)
		}
	}()
	p := b.retry
	var last error
	unsure := false // the last try failed and may have taken effect
	for attempt := 0; attempt < p.Tries; attempt++ {
		if unsure && done != nil {
			found, err := done(ctx)
			if err != nil {
				return classify(op, err) // cannot tell whether it took effect: later
			}
			if found {
				return nil
			}
		}
		key := channel
		if key == "" {
			key = "method " + op // Slack limits these per method, not per channel
		}
		if err := b.pace.take(ctx, key, p.MaxRetryAft); err != nil {
			var hold *engine.Hold
			if errors.As(err, &hold) {
				return err // the event comes back at the channel's turn
			}
			e := classify(op, err)
			var h *heldError
			if errors.As(err, &h) {
				// Held by a rate limit longer than a call waits: the event
				// comes back after it, and the worker goes on meanwhile.
				e.Code, e.Transient, e.RetryAfter = "ratelimited", true, h.left
			}
			return e
		}
		err := fn(ctx)
		if err == nil {
			return nil
		}
		last, unsure = err, false
		if rl, ok := rateLimited(err); ok {
			wait := max(rl.RetryAfter, time.Second)
			if wait > p.MaxRetryAft && engine.ReservedOf(ctx) == nil {
				// Too long to wait here: the event comes back after it, and
				// meanwhile nothing else is sent where Slack said not to.
				b.pace.block(key, wait)
				e := classify(op, err)
				e.RetryAfter = wait
				return e
			}
			// Everyone posting to this channel waits, not just this call;
			// an event's job is put aside until then (take). Logged once
			// held, so the log says no call goes there any more.
			b.pace.block(key, wait)
			b.log.WarnContext(ctx, "slack: rate limited", "op", op, "channel", channel, "retry_after", wait)
			b.calls.Retry(op, apimetrics.RetryRateLimited)
			continue
		}
		e := classify(op, err)
		if !e.Transient {
			return e
		}
		unsure = e.Code != "ratelimited"
		d := min(p.Base<<attempt, p.Cap)
		d = d/2 + rand.N(d/2+1)
		b.log.WarnContext(ctx, "slack: transient error, retrying", "op", op, "channel", channel, "code", e.Code, "in", d)
		b.calls.Retry(op, apimetrics.RetryTransient)
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return classify(op, ctx.Err())
		}
	}
	return classify(op, last)
}
