package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// A job has one thread in a channel, whichever run of the process posts
// its cards. The runtime names the job's threads on its events once a
// card's delivery report told it; until then the threads bucket names a
// new thread: its parent's ts is written there as soon as the parent is
// posted, so that a restart, or another replica, puts the job's next
// question in that thread rather than open another, and a later try of a
// card the earlier run posted looks for it there.

// threadRecord is a job's thread in a channel as the bucket holds it.
type threadRecord struct {
	TS string `json:"ts"`
}

// threadTTL is how long the bucket names a job's thread: as long as a
// claim to show a question, past the restart of a run killed while it
// showed the job's first question. By then the card's delivery report has
// told the runtime.
const threadTTL = engine.ShowClaimTTL

// jobThread returns the ts of the job's thread parent in channel, posting
// the parent the first time. A thread another run opened lately is
// remembered already: the bucket's hints are followed (followThread).
func (p platform) jobThread(ctx context.Context, ev *bridge.Event, channel string, last bool) (string, error) {
	if ts := p.knownThread(ev, channel); ts != "" {
		return ts, nil
	}
	b := p.b
	blocks, text := blockkit.ThreadParent(ev.Question, b.consoleOn())
	ts, err := b.postMarked(ctx, last, channel, "", threadMeta(ev.Tenant, ev.JobID), slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(text, false))
	if err != nil {
		return "", err
	}
	b.recordThread(ev, channel, ts)
	return ts, nil
}

// sharedThread is the job's thread in channel for a card an earlier try
// may have posted: as the bucket names it, else as the channel's history
// shows it since since.
func (p platform) sharedThread(ctx context.Context, ev *bridge.Event, channel string, since time.Time) (string, error) {
	b := p.b
	if ts := b.recordedThread(ctx, ev, channel); ts != "" {
		return ts, nil
	}
	ts, err := b.findPosted(ctx, channel, "", since, threadMeta(ev.Tenant, ev.JobID))
	if err != nil || ts == "" {
		return "", err
	}
	b.threads.Put(threadKey(ev.Tenant, ev.JobID, channel), ts)
	return ts, nil
}

// recordedThread is the job's thread in channel as the bucket names it,
// remembered; "" when it names none or cannot be read (NATS away: a
// second thread beats a card not shown).
func (b *Bot) recordedThread(ctx context.Context, ev *bridge.Event, channel string) string {
	if b.hints == nil {
		return ""
	}
	key := threadKey(ev.Tenant, ev.JobID, channel)
	var r threadRecord
	if _, _, found, err := bridge.GetJSON(ctx, b.hints, threadHintPrefix+key, &r); err != nil || !found || r.TS == "" {
		return ""
	}
	b.threads.Put(key, r.TS)
	return r.TS
}

// recordThread remembers the job's new thread, here and in the bucket. The
// bucket's copy is a hint, written without waiting: the card's post does
// not wait for an fsync.
func (b *Bot) recordThread(ev *bridge.Event, channel, ts string) {
	key := threadKey(ev.Tenant, ev.JobID, channel)
	b.threads.Put(key, ts)
	if b.hints == nil {
		return
	}
	data, err := json.Marshal(threadRecord{TS: ts})
	if err == nil {
		err = b.hints.Hint(threadHintPrefix+key, data, threadTTL)
	}
	if err != nil {
		b.log.Warn("slack: could not record a job's thread", "job", ev.JobID, "err", fmt.Errorf("record %s: %w", key, err))
	}
}

// threadHintPrefix starts Slack's keys in the threads bucket.
const threadHintPrefix = "slack."

// followThread remembers a job's thread another run or replica named in
// the threads bucket (engine.FollowHints): the job's next question goes
// in it without a read of the bucket.
func (b *Bot) followThread(key string, value []byte) {
	var r threadRecord
	if json.Unmarshal(value, &r) == nil && r.TS != "" {
		b.threads.Put(key, r.TS)
	}
}
