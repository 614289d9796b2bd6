package slack

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// runSocketMode receives interactions and slash commands over Slack's
// Socket Mode websocket (for workspaces where Slack cannot reach us) and
// handles them exactly as the HTTP endpoints do; responses such as inline
// modal errors travel back in the acknowledgement.
func (b *Bot) runSocketMode(ctx context.Context) {
	smc := socketmode.New(b.api, socketmode.OptionLog(slogWriter{b.log}))
	go func() {
		refused := 0
		for ctx.Err() == nil {
			// RunContext returns only with an error: ctx ended, or the
			// connection failed for good.
			err := smc.RunContext(ctx)
			if ctx.Err() != nil {
				return
			}
			wait := 5 * time.Second
			if code := err.Error(); refusedTokenCodes[code] {
				// Trying again every few seconds will not mend the token:
				// say what to fix, and try again less and less often.
				refused++
				wait = min(wait<<min(refused-1, 6), 5*time.Minute)
				b.log.ErrorContext(ctx, "slack: socket mode: Slack refused the app token ("+code+"); check ASK_SLACK_APP_TOKEN (an xapp- token with connections:write)",
					"retry_in", wait)
			} else {
				refused = 0
				b.log.ErrorContext(ctx, "slack: socket mode stopped; reconnecting", "err", err)
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case evt := <-smc.Events:
			b.socketEvent(ctx, smc, evt)
		}
	}
}

// refusedTokenCodes are the errors slack-go's Socket Mode client gives up
// on at once: Slack refused the app token itself.
var refusedTokenCodes = map[string]bool{"invalid_auth": true, "account_inactive": true, "not_authed": true, "token_revoked": true}

func (b *Bot) socketEvent(ctx context.Context, smc *socketmode.Client, evt socketmode.Event) {
	switch evt.Type {
	case socketmode.EventTypeInteractive:
		cb, ok := evt.Data.(slack.InteractionCallback)
		if !ok || evt.Request == nil {
			return
		}
		req := *evt.Request
		go func() {
			resp := b.redelivered.do(interactionKey(&cb), func() (any, bool) {
				hctx, cancel := context.WithTimeout(ctx, b.budget)
				defer cancel()
				resp, err := b.interact(hctx, &cb)
				if err != nil {
					return notAcked{}, false // Slack's redelivery tries it again
				}
				if resp != nil {
					// Inline errors: the same form sent again is checked
					// again (the question may have changed meanwhile).
					return resp, false
				}
				return nil, true
			})
			if _, ok := resp.(notAcked); ok {
				// Its attempt is not in JetStream: unacknowledged, Slack
				// shows the person the failure and delivers it again.
				b.log.WarnContext(ctx, "slack: socket mode interaction not acknowledged: its answer could not be recorded")
				return
			}
			b.ack(smc, req, resp)
		}()
	case socketmode.EventTypeSlashCommand:
		cmd, ok := evt.Data.(slack.SlashCommand)
		if !ok || evt.Request == nil {
			return
		}
		req := *evt.Request
		key := ""
		if cmd.TriggerID != "" {
			key = "command|" + cmd.TriggerID
		}
		go func() {
			resp := b.redelivered.do(key, func() (any, bool) {
				hctx, cancel := context.WithTimeout(ctx, b.budget)
				defer cancel()
				reply := b.command(hctx, &cmd)
				if raw, err := json.Marshal(socketmode.Response{EnvelopeID: req.EnvelopeID, Payload: reply}); err == nil && len(raw) >= maxSocketAck && cmd.ResponseURL != "" {
					// Slack drops an acknowledgement this large (slack-go
					// refuses to send it): the reply goes to the
					// command's response_url, which takes long messages.
					b.say(map[string]string{replyUser: cmd.UserID, replyChannel: cmd.ChannelID, replyResponseURL: cmd.ResponseURL}, reply.Text)
					return nil, true
				}
				return reply, true
			})
			b.ack(smc, req, resp)
		}()
	case socketmode.EventTypeEventsAPI:
		if evt.Request != nil {
			b.ack(smc, *evt.Request, nil)
		}
	case socketmode.EventTypeInvalidAuth:
		b.log.ErrorContext(ctx, "slack: socket mode: the app token was refused (invalid_auth); check ASK_SLACK_APP_TOKEN")
	case socketmode.EventTypeConnectionError:
		b.connectionError(ctx, evt)
	case socketmode.EventTypeConnected:
		b.log.InfoContext(ctx, "slack: socket mode connected")
	}
}

// connectionError logs why Socket Mode could not connect, and when it
// tries again: Slack's answer to apps.connections.open (internal_error, a
// 5xx) or the network's. A websocket ticket an error might quote is cut:
// it lets whoever holds it connect as the app.
func (b *Bot) connectionError(ctx context.Context, evt socketmode.Event) {
	ce, ok := evt.Data.(*slack.ConnectionErrorEvent)
	if !ok || ce.ErrorObj == nil {
		b.log.WarnContext(ctx, "slack: socket mode connection error")
		return
	}
	why := socketTicket.ReplaceAllString(ce.ErrorObj.Error(), "${1}[redacted]")
	b.log.WarnContext(ctx, "slack: socket mode connection error", "err", why, "attempt", ce.Attempt, "retry_in", ce.Backoff)
}

// socketTicket is the ticket in a Socket Mode websocket URL.
var socketTicket = regexp.MustCompile(`(ticket=)[^&\s"]+`)

// notAcked is the result of an interaction that must not be acknowledged.
type notAcked struct{}

func (b *Bot) ack(smc *socketmode.Client, req socketmode.Request, payload any) {
	var err error
	if payload == nil {
		err = smc.Ack(req)
	} else {
		err = smc.Ack(req, payload)
	}
	if err != nil {
		b.log.Warn("slack: socket mode ack failed", "err", err)
	}
}

// maxSocketAck is the size from which Slack drops a Socket Mode
// acknowledgement (20 KB, as sent).
const maxSocketAck = 20 * 1024

// socketRedelivery is how long an interaction Socket Mode delivered is
// remembered: Slack delivers one again when it saw no acknowledgement,
// at once and up to minutes later.
const socketRedelivery = 10 * time.Minute

// interactionKey names what an interaction is, the same for each time
// Slack delivers it, whatever its envelope: a click by its trigger id, a
// form submission by its view, the view's hash and the values submitted.
// "" when there is nothing to name it by.
func interactionKey(cb *slack.InteractionCallback) string {
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		if cb.TriggerID != "" {
			return "click|" + cb.TriggerID
		}
	case slack.InteractionTypeViewSubmission:
		if cb.View.ID == "" {
			return ""
		}
		return "view|" + cb.View.ID + "|" + cb.View.Hash + "|" + stateDigest(cb.View.State)
	}
	return ""
}

// stateDigest names the values a form submitted, the same for the same
// values: each input's block and action ids, type and what it holds, in
// order of ids. It reads the fields the answer forms' inputs fill, not the
// whole state through JSON (every answer given in a form pays for it, and
// a BlockAction's JSON is mostly empty fields).
func stateDigest(st *slack.ViewState) string {
	type input struct{ block, action string }
	var inputs [16]input
	in := inputs[:0]
	if st != nil {
		for block, actions := range st.Values {
			for action := range actions {
				in = append(in, input{block, action})
			}
		}
	}
	slices.SortFunc(in, func(a, b input) int {
		return cmp.Or(strings.Compare(a.block, b.block), strings.Compare(a.action, b.action))
	})
	var scratch [512]byte
	buf := scratch[:0]
	put := func(buf []byte, s string) []byte {
		return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
	}
	for _, k := range in {
		a := st.Values[k.block][k.action]
		buf = put(put(put(put(put(buf, k.block), k.action), string(a.Type)), a.Value), a.SelectedOption.Value)
		buf = binary.AppendUvarint(buf, uint64(len(a.SelectedOptions)))
		for _, o := range a.SelectedOptions {
			buf = put(buf, o.Value)
		}
		buf = put(put(buf, a.SelectedDate), a.SelectedTime)
		buf = binary.AppendVarint(buf, a.SelectedDateTime)
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:16])
}

// replies remembers what each interaction was answered with, so a
// redelivery of it is answered the same way without being handled again:
// a form is opened once, a console link sent once, and an accepted form
// is not then refused as no longer waiting (its own answer ended the
// question). A redelivery arriving while the first is handled waits for
// its answer.
type replies struct {
	mu        sync.Mutex
	ttl       time.Duration
	m         map[string]*reply
	nextPrune time.Time
}

type reply struct {
	done    chan struct{}
	payload any
	at      time.Time
}

func newReplies(ttl time.Duration) *replies { return &replies{ttl: ttl, m: map[string]*reply{}} }

// do returns the answer to the interaction key: handle's for its first
// delivery, the first's for a later one. An answer handle says not to
// keep is forgotten once given (a later delivery is handled anew). An
// empty key is always handled.
func (r *replies) do(key string, handle func() (payload any, keep bool)) any {
	if key == "" {
		p, _ := handle()
		return p
	}
	now := time.Now()
	r.mu.Lock()
	if e, ok := r.m[key]; ok && now.Sub(e.at) < r.ttl {
		r.mu.Unlock()
		<-e.done
		return e.payload
	}
	if len(r.m) > 4096 && !now.Before(r.nextPrune) {
		r.nextPrune = now.Add(r.ttl / 2)
		for k, e := range r.m {
			if now.Sub(e.at) >= r.ttl {
				delete(r.m, k)
			}
		}
	}
	e := &reply{done: make(chan struct{}), at: now}
	r.m[key] = e
	r.mu.Unlock()
	p, keep := handle()
	e.payload = p
	close(e.done)
	if !keep {
		r.mu.Lock()
		if r.m[key] == e {
			delete(r.m, key)
		}
		r.mu.Unlock()
	}
	return p
}

// slogWriter lets slack-go's socket mode client log through slog.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Output(_ int, s string) error {
	w.l.Debug("slack: socketmode: " + strings.TrimSpace(s))
	return nil
}
