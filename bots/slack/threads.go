package slack

import (
	"context"
	"encoding/json"
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
// may have posted, when this run knows none (neither remembered, nor
// named on the event, nor followed from the threads bucket): as the
// channel's history shows it since since.
func (p platform) sharedThread(ctx context.Context, ev *bridge.Event, channel string, since time.Time) (string, error) {
	b := p.b
	ts, err := b.findPosted(ctx, channel, "", since, threadMeta(ev.Tenant, ev.JobID))
	if err != nil || ts == "" {
		return "", err
	}
	b.threads.Put(threadKey(ev.Tenant, ev.JobID, channel), ts)
	return ts, nil
}

// recordThread remembers the job's new thread, here and in the threads
// bucket, as a hint: the card's post does not wait for its write.
func (b *Bot) recordThread(ev *bridge.Event, channel, ts string) {
	key := threadKey(ev.Tenant, ev.JobID, channel)
	b.threads.Put(key, ts)
	if b.hints == nil {
		return
	}
	if err := bridge.HintJSON(b.hints, threadHintPrefix+key, threadRecord{TS: ts}, engine.ThreadHintTTL); err != nil {
		b.log.Warn("slack: could not record a job's thread", "job", ev.JobID, "err", err)
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
