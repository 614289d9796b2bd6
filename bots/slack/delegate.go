package slack

import (
	"context"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bridge"
)

// submitDelegate handles the user picker of Ask someone else: the person
// picked is proposed as an answerer (docs/contract.md "Delegate and
// snooze"); the runtime decides, and its delegated event redraws the card
// and DMs them. A refusal reaches the clicker like a refused answer.
func (b *Bot) submitDelegate(ctx context.Context, cb *slack.InteractionCallback) (*slack.ViewSubmissionResponse, error) {
	meta, err := blockkit.ParseModalMeta(cb.View.PrivateMetadata)
	if err != nil {
		b.log.WarnContext(ctx, "slack: modal with foreign metadata", "err", err)
		return nil, nil
	}
	user := blockkit.DelegateFromState(cb.View.State)
	switch {
	case user == "":
		return inlineError(blockkit.BlockDelegate, "Pick the person to ask."), nil
	case !bridge.ValidSlackID(user):
		return inlineError(blockkit.BlockDelegate, "That is not a Slack user askbridge can ask."), nil
	case user == cb.User.ID:
		return inlineError(blockkit.BlockDelegate, "Pick someone else: you may answer it yourself."), nil
	}
	rec, err := b.question(ctx, meta.Ref, cb.User.ID)
	if err != nil || rec == nil {
		return inlineError(blockkit.BlockDelegate, "This question is no longer available."), nil
	}
	if rec.ended {
		return inlineError(blockkit.BlockDelegate, rec.lateText()), nil
	}
	to := map[string]string{replyUser: cb.User.ID}
	if meta.Channel != "" {
		to[replyChannel] = meta.Channel
		if t := rec.thread(); t != "" {
			to[replyThread] = t
		} else if meta.MessageTS != "" {
			to[replyThread] = meta.MessageTS
		}
	}
	at := b.attempt(cb, meta.Ref, "slack-view-"+safeID(cb.View.ID+"-"+cb.View.Hash), bridge.ActionDelegate, nil, "", to)
	at.Delegate = "slack:" + user
	if !b.publishAttempt(ctx, at, nil) {
		return nil, errNotRecorded // the form stays open; Slack says the submit failed
	}
	return nil, nil
}
