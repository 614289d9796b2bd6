package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bots/engine"
)

// Slack's chat.postMessage has no idempotency key. A post whose KV record
// was never written (the poster died after Slack accepted it, or the call
// failed after Slack had posted) would be posted again by whoever takes
// over the claim. So every card and thread parent carries message metadata
// naming what it shows, and a takeover first looks for that message in the
// channel (or thread) since the unfinished claim, and adopts it.

// The same holds within one delivery: a try of chat.postMessage that times
// out, loses its connection or gets a 5xx may have posted. postMarked looks
// for the message before trying again, and adopts it.

// Metadata event types of askbridge's messages (https://api.slack.com/metadata).
const (
	metaQuestion = "askbridge_question"
	metaThread   = "askbridge_thread"
)

// lookback widens a lookup to before the claim: the claim's time comes
// from a replica's clock, message ts from Slack's.
const lookback = time.Minute

// A lookup reads at most lookupPages pages of lookupLimit messages; a
// message beyond is not found, and the card is posted again.
const (
	lookupLimit = 200
	lookupPages = 5
)

// questionMeta marks a question's card: ids only, never the question's text.
func questionMeta(r blockkit.Ref) slack.SlackMetadata {
	return slack.SlackMetadata{EventType: metaQuestion, EventPayload: map[string]any{
		"tenant": r.Tenant, "job_id": r.JobID, "question_id": r.QuestionID, "task_version": r.Version}}
}

// threadMeta marks a job's thread parent (the channel is where it is).
func threadMeta(tenant, job string) slack.SlackMetadata {
	return slack.SlackMetadata{EventType: metaThread, EventPayload: map[string]any{"tenant": tenant, "job_id": job}}
}

// metaMatches says got names what want names.
func metaMatches(got, want slack.SlackMetadata) bool {
	if got.EventType != want.EventType || len(got.EventPayload) == 0 {
		return false
	}
	for k, v := range want.EventPayload {
		g, ok := got.EventPayload[k]
		if !ok || payloadString(g) != payloadString(v) {
			return false
		}
	}
	return true
}

// payloadString is a payload value as text, so that the 3 we sent and the
// 3.0 JSON gives back compare equal.
func payloadString(v any) string {
	switch x := v.(type) {
	case string:
		return "s:" + x
	case float64:
		return "n:" + strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		return "n:" + x.String()
	case int:
		return "n:" + strconv.Itoa(x)
	case int64:
		return "n:" + strconv.FormatInt(x, 10)
	}
	return fmt.Sprintf("?:%v", v)
}

// slackTS is t as a Slack message timestamp.
func slackTS(t time.Time) string {
	return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000)
}

// findPosted looks for the message marked want that an unfinished post,
// claimed at since, may have left in channel: among the thread's replies
// when thread is set (conversations.replies), else in the channel's
// history (conversations.history). It returns the message's ts, or ""
// when there is none. A lookup that fails for now (a rate limit, which
// Slack's history methods impose tightly, a 5xx, the network) returns its
// *apiError, so the caller tries again later rather than post a second
// card; one that fails for good (a missing scope) is logged and returns
// "", so the caller posts, since a question shown twice beats one never
// shown.
func (b *Bot) findPosted(ctx context.Context, channel, thread string, since time.Time, want slack.SlackMetadata) (string, error) {
	found, err := b.findMarked(ctx, channel, thread, since, want, false)
	if err != nil || len(found) == 0 {
		return "", err
	}
	return found[0], nil
}

// findMarked is findPosted giving the ts of the first message marked
// want, or with all of every such message (posts that each reached Slack
// unrecorded), in the order Slack lists them.
func (b *Bot) findMarked(ctx context.Context, channel, thread string, since time.Time, want slack.SlackMetadata, all bool) ([]string, error) {
	var found []string
	oldest := slackTS(since.Add(-lookback))
	op := "conversations.history"
	if thread != "" {
		op = "conversations.replies"
	}
	cursor := ""
	for range lookupPages {
		var msgs []slack.Message
		var next string
		// Paced per method: Slack limits its history methods per method
		// (one request a minute for many apps), not per channel.
		err := b.call(ctx, op, "", func(ctx context.Context) error {
			var err error
			if thread != "" {
				msgs, _, next, err = b.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
					ChannelID: channel, Timestamp: thread, Oldest: oldest, Cursor: cursor, Limit: lookupLimit, IncludeAllMetadata: true})
				return err
			}
			resp, err := b.api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
				ChannelID: channel, Oldest: oldest, Cursor: cursor, Limit: lookupLimit, IncludeAllMetadata: true})
			if err != nil {
				return err
			}
			msgs, next = resp.Messages, ""
			if resp.HasMore {
				next = resp.ResponseMetaData.NextCursor
			}
			return nil
		})
		if err != nil {
			var hold *engine.Hold
			if errors.As(err, &hold) {
				// The method's turn is still to come: the event comes
				// back then, and looks again (not taken for a failed
				// lookup, which would post a second card).
				return found, err
			}
			ae := classify(op, err)
			if ae.Transient {
				return found, ae
			}
			b.log.WarnContext(ctx, "slack: could not look for a message an unfinished post may have left",
				"op", op, "channel", channel, "event_type", want.EventType, "slack_error", ae.Code)
			return found, nil
		}
		for _, m := range msgs {
			if m.Timestamp != "" && m.Timestamp != thread && metaMatches(m.Metadata, want) {
				b.log.InfoContext(ctx, "slack: found a message an unfinished post left",
					"channel", channel, "ts", m.Timestamp, "event_type", want.EventType)
				found = append(found, m.Timestamp)
				if !all {
					return found, nil
				}
			}
		}
		if next == "" {
			return found, nil
		}
		cursor = next
	}
	return found, nil
}

// postMarked posts a card (in thread) or a thread parent (thread "")
// marked with meta and returns its ts. When a try fails in a way that
// leaves the post's outcome unknown, findPosted looks for the message
// since the first try before the next one, and a message found is this
// post's, as if the try had returned it. A first try that succeeds makes
// no lookup.
//
// On the event's last try a lookup that fails counts as "not found": the
// card is posted again rather than the question failed while it may be up.
func (b *Bot) postMarked(ctx context.Context, lastTry bool, channel, thread string, meta slack.SlackMetadata, opts ...slack.MsgOption) (ts string, err error) {
	opts = append(opts, slack.MsgOptionMetadata(meta))
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	first := b.now()
	err = b.callChecked(ctx, "chat.postMessage", channel, func(ctx context.Context) error {
		_, t, err := b.api.PostMessageContext(ctx, channel, opts...)
		ts = t
		return err
	}, func(ctx context.Context) (bool, error) {
		var err error
		ts, err = b.findPosted(ctx, channel, thread, first, meta)
		if err != nil && lastTry {
			return false, nil
		}
		return ts != "", err
	})
	return ts, err
}
