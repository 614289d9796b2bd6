package torture

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bots/slack"
	"github.com/askbridge/askbridge/bridge"
)

// The person who clicks, and the secret Slack signs with. The clicker is
// an operator of every tenant (ASK_OPERATORS), so a click is refused only
// for a reason that holds: the question no longer waits.
const (
	slackUser     = "UTORTURE"
	clickIdentity = "slack:" + slackUser
	slackSecret   = "torture-signing-secret"
)

// clickTimeout is how long a click waits for its answer: Slack gives up
// after 3 s and shows the person an error, and they click again.
const clickTimeout = 3 * time.Second

// click is a button of a question's card clicked by the run's person: one
// interaction, sent as Slack sends it, and again (the same payload, the
// same trigger id) until a replica answers 200.
type click struct {
	card     card
	value    string // the button's value: the choice
	actionID string
	trigger  string
	body     string // the form Slack posts; the same on every request
	requests int
	// cut says a request was cut off by the kill of the replica handling
	// it; retryAt is when the first request after that went, and claimed
	// says the click's claim (bots/slack foldClick) was then in the
	// bucket, holding this click's attempt.
	cut     bool
	retryAt time.Time
	claimed bool
	// trail is each request: where, when, and what came of it.
	trail []string
	// lastReqAt is when the last request went: for an acknowledged click,
	// the one answered 200.
	lastReqAt time.Time
}

// newClick is a click on the button of q's card that carries value.
func (r *run) newClick(q *question, value string, n int) (*click, error) {
	c := q.card
	actionID, ok := c.buttons[value]
	if !ok || c.blockID == "" {
		return nil, fmt.Errorf("the card of %s (ts %s) has no %q button: its buttons are %v", q.key(), c.ts, value, c.buttons)
	}
	now := time.Now()
	k := &click{card: *c, value: value, actionID: actionID,
		trigger: fmt.Sprintf("%d.%d.%s", now.Unix(), n, r.runID)}
	payload := map[string]any{
		"type": "block_actions", "trigger_id": k.trigger, "api_app_id": "ATORTURE", "token": "torture-verification",
		"response_url": strings.TrimSuffix(r.slack.url, "api/") + "actions/" + k.trigger,
		"user":         map[string]any{"id": slackUser, "username": "torture", "name": "torture", "team_id": "TTORTURE"},
		"team":         map[string]any{"id": "TTORTURE", "domain": "torture"},
		"container":    map[string]any{"type": "message", "message_ts": c.ts, "channel_id": c.channel, "is_ephemeral": false, "thread_ts": c.thread},
		"channel":      map[string]any{"id": c.channel, "name": strings.ToLower(c.channel)},
		"message":      map[string]any{"type": "message", "ts": c.ts, "thread_ts": c.thread, "bot_id": "BTORTURE"},
		"state":        map[string]any{"values": map[string]any{}},
		"actions": []any{map[string]any{
			"type": "button", "action_id": actionID, "block_id": c.blockID, "value": value,
			"text":      map[string]any{"type": "plain_text", "text": value, "emoji": true},
			"action_ts": fmt.Sprintf("%d.%06d", now.Unix(), now.Nanosecond()/1000),
		}},
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	k.body = "payload=" + url.QueryEscape(string(raw))
	return k, nil
}

// clickAttemptID is the attempt the Slack adapter makes of a click.
func clickAttemptID(c *click) string { return "slack-" + c.trigger }

// signSlack is Slack's v0 request signature.
func signSlack(secret, ts, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "v0:%s:%s", ts, body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// clickUntilAcked sends a click to a random ready replica, and again to
// another one while its request fails (no answer, 5xx): as Slack's retries
// and a person's second click would. Its first request may be the one a
// kill is aimed at.
func (r *run) clickUntilAcked(ctx context.Context, a *attempt) {
	c := a.click
	aim := r.aims.take(r.live)
	last := -1
	for {
		i := r.live.pick(last)
		if aim != nil {
			i = aim.srv
		}
		if i < 0 {
			if pause(ctx, 50*time.Millisecond) != nil {
				return
			}
			continue
		}
		if c.cut && c.retryAt.IsZero() {
			claimed := r.claimed(ctx, c)
			r.mu.Lock()
			c.retryAt, c.claimed = time.Now(), claimed
			r.mu.Unlock()
		}
		status, body, err := r.postClick(ctx, i, a, aim)
		aim, last = nil, i
		switch {
		case err == nil && status == http.StatusOK:
			inc, now := r.kills.Load(), time.Now()
			r.mu.Lock()
			a.acked, a.ackInc, a.ackedAt = true, inc, now
			r.mu.Unlock()
			return
		case err == nil && status < 500:
			r.problem("click %s (%q on %s) was answered HTTP %d by replica r%d: %s", c.trigger, c.value, a.q.key(), status, i+1, body)
			return
		case ctx.Err() != nil:
			return
		}
		if err == nil {
			// Told to try again: a person clicks again a little later.
			if pause(ctx, 100*time.Millisecond) != nil {
				return
			}
		}
	}
}

// postClick sends the click's interaction to service i, signed now, and
// returns its answer. A request cut off by a kill of i marks the click
// cut. aim, when set, is told once the request is written.
func (r *run) postClick(ctx context.Context, i int, a *attempt, aim *aimed) (int, string, error) {
	c, s := a.click, r.srvs[i]
	gen := s.gen.Load()
	rctx, cancel := context.WithTimeout(ctx, clickTimeout)
	defer cancel()
	if aim != nil {
		defer aim.wrote()
		rctx = httptrace.WithClientTrace(rctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { aim.wrote() }})
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, "http://"+s.httpAddr+"/slack/interactions", strings.NewReader(c.body))
	if err != nil {
		return 0, "", err
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", signSlack(slackSecret, ts, c.body))
	r.mu.Lock()
	c.requests++
	if a.sentAt.IsZero() {
		a.sentAt = time.Now()
	}
	r.mu.Unlock()
	start := time.Now()
	r.mu.Lock()
	c.lastReqAt = start
	r.mu.Unlock()
	resp, err := r.http.Do(req)
	if err != nil {
		cut := s.gen.Load() != gen && !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
		r.mu.Lock()
		c.cut = c.cut || cut
		c.trail = append(c.trail, fmt.Sprintf("r%d at %s: %v after %v (cut by a kill: %t)", i+1, clock(start), err, time.Since(start).Round(time.Millisecond), cut))
		r.mu.Unlock()
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	took := time.Since(start)
	r.mu.Lock()
	c.trail = append(c.trail, fmt.Sprintf("r%d at %s: HTTP %d after %v", i+1, clock(start), resp.StatusCode, took.Round(time.Millisecond)))
	r.mu.Unlock()
	if resp.StatusCode == http.StatusOK {
		r.aims.answered(took)
	}
	return resp.StatusCode, strings.TrimSpace(string(body)), nil
}

// claimed says whether the click's claim is in the Slack adapter's clicks bucket
// holding this click's attempt: the replica that was killed claimed it.
func (r *run) claimed(ctx context.Context, c *click) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	kv, err := r.js.KeyValue(ctx, slack.ClicksBucket)
	if err != nil {
		return false
	}
	e, err := kv.Get(ctx, slack.ClickClaimKey(slackUser, c.card.blockID, c.actionID, c.value, ""))
	if err != nil {
		return false
	}
	var held struct {
		AttemptID string `json:"attempt_id"`
	}
	return json.Unmarshal(e.Value(), &held) == nil && held.AttemptID == clickAttemptID(c)
}

// aimer hands the killer's aim to the next click: the killer picks a
// ready replica, the next click sends its first request there, and the
// killer SIGKILLs that replica a few milliseconds after the request is
// written, without waiting for its answer.
type aimer struct {
	mu   sync.Mutex
	cur  *aimed
	took time.Duration // how long clicks lately took to be answered 200
}

// aimed is one kill aimed at a click.
type aimed struct {
	srv  int
	sent chan struct{}
	once sync.Once
}

func (a *aimed) wrote() { a.once.Do(func() { close(a.sent) }) }

// aimWithin bounds the wait for a click to aim at: clicks go many times a
// second, so none in this long means there is nothing to click.
const aimWithin = 2 * time.Second

// aim waits for the next click to be sent to a ready replica and returns
// that replica a few milliseconds later; false when no click came.
func (am *aimer) aim(ctx context.Context, l *live) (int, bool) {
	i := l.pick(-1)
	if i < 0 {
		return -1, false
	}
	a := &aimed{srv: i, sent: make(chan struct{})}
	am.mu.Lock()
	am.cur = a
	am.mu.Unlock()
	t := time.NewTimer(aimWithin)
	defer t.Stop()
	select {
	case <-a.sent:
	case <-t.C:
	case <-ctx.Done():
	}
	am.mu.Lock()
	taken := am.cur != a
	am.cur = nil
	am.mu.Unlock()
	if !taken {
		return -1, false
	}
	select {
	case <-a.sent:
	case <-ctx.Done():
		return -1, false
	}
	// Into the click's handling: its signature checked, its claim being
	// written or written, its attempt being published.
	if pause(context.WithoutCancel(ctx), am.aimDelay()) != nil {
		return -1, false
	}
	return i, true
}

// take hands the aim, if any, to a click about to be sent.
func (am *aimer) take(l *live) *aimed {
	am.mu.Lock()
	defer am.mu.Unlock()
	a := am.cur
	if a == nil || !l.isReady(a.srv) {
		return nil
	}
	am.cur = nil
	return a
}

// storedAt reads when each of the run's answer attempts was stored in the
// answers stream, by attempt id.
func (r *run) storedAt(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	err := r.readStream(ctx, bridge.StreamAnswers, func(m *jetstream.MsgMetadata, data []byte) error {
		var at struct {
			AttemptID string `json:"attempt_id"`
		}
		if json.Unmarshal(data, &at) == nil && at.AttemptID != "" {
			if _, ok := out[at.AttemptID]; !ok {
				out[at.AttemptID] = m.Timestamp
			}
		}
		return nil
	})
	return out, err
}

// aimDelay is how long after a click's request is written the kill aimed
// at it comes: anywhere within how long clicks have lately taken to be
// answered (checked, claimed, published), so that some kills come
// between the claim and the publication.
func (am *aimer) aimDelay() time.Duration {
	am.mu.Lock()
	took := am.took
	am.mu.Unlock()
	if took <= 0 {
		took = 20 * time.Millisecond
	}
	return time.Duration(rand.Int64N(int64(took) + 1))
}

// answered notes how long a click took to be answered 200.
func (am *aimer) answered(took time.Duration) {
	am.mu.Lock()
	defer am.mu.Unlock()
	if am.took == 0 {
		am.took = took
		return
	}
	am.took = (am.took*7 + took) / 8
}
