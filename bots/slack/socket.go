package slack

import (
	"context"
	"log/slog"
	"strings"
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
		for ctx.Err() == nil {
			if err := smc.RunContext(ctx); err != nil && ctx.Err() == nil {
				b.log.ErrorContext(ctx, "slack: socket mode stopped; reconnecting", "err", err)
				select {
				case <-time.After(5 * time.Second):
				case <-ctx.Done():
				}
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

func (b *Bot) socketEvent(ctx context.Context, smc *socketmode.Client, evt socketmode.Event) {
	switch evt.Type {
	case socketmode.EventTypeInteractive:
		cb, ok := evt.Data.(slack.InteractionCallback)
		if !ok || evt.Request == nil {
			return
		}
		req := *evt.Request
		go func() {
			hctx, cancel := context.WithTimeout(ctx, 2500*time.Millisecond)
			defer cancel()
			if resp := b.interact(hctx, &cb); resp != nil {
				b.ack(smc, req, resp)
			} else {
				b.ack(smc, req, nil)
			}
		}()
	case socketmode.EventTypeSlashCommand:
		cmd, ok := evt.Data.(slack.SlashCommand)
		if !ok || evt.Request == nil {
			return
		}
		req := *evt.Request
		go func() {
			hctx, cancel := context.WithTimeout(ctx, 2500*time.Millisecond)
			defer cancel()
			b.ack(smc, req, b.command(hctx, &cmd))
		}()
	case socketmode.EventTypeEventsAPI:
		if evt.Request != nil {
			b.ack(smc, *evt.Request, nil)
		}
	case socketmode.EventTypeInvalidAuth:
		b.log.ErrorContext(ctx, "slack: socket mode: the app token was refused (invalid_auth); check ASK_SLACK_APP_TOKEN")
	case socketmode.EventTypeConnectionError:
		b.log.WarnContext(ctx, "slack: socket mode connection error")
	case socketmode.EventTypeConnected:
		b.log.InfoContext(ctx, "slack: socket mode connected")
	}
}

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

// slogWriter lets slack-go's socket mode client log through slog.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Output(_ int, s string) error {
	w.l.Debug("slack: socketmode: " + strings.TrimSpace(s))
	return nil
}
