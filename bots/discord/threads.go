package discord

import (
	"context"
	"encoding/json"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// A job's thread is started from its first card in a channel. Until that
// card's delivery report reaches the runtime, which names the job's
// threads on its later events, the threads bucket names the thread too:
// a restart, or another replica, then puts the job's next question in it
// rather than start a second thread, and a later try of a card the killed
// run posted there looks for it there.

// jobThread is a job's thread in a channel as the bucket holds it: the
// thread, and the question whose card it was started from, which is in
// the channel, not in the thread.
type jobThread struct {
	Thread string `json:"thread"`
	From   string `json:"from"`
}

// sharedThread is the job's thread in channel as this adapter remembers
// it, as the event names it, or as the threads bucket named it lately
// (followed, without a read for each new job). For the question the
// bucket's thread was started from it is "": that card is in the channel,
// and a later try of it posts there, where Discord's nonce finds it.
func (p platform) sharedThread(ev *bridge.Event, channel string) string {
	if th := p.knownThread(ev, channel); th != "" {
		return th
	}
	key := jobKey(ev.Tenant, ev.JobID, channel)
	jt, ok := p.b.hinted.Get(key)
	if !ok || jt.From == bridge.RefOf(ev).String() {
		return ""
	}
	p.b.threads.Put(key, jt.Thread)
	return jt.Thread
}

// threadHintPrefix starts Discord's keys in the threads bucket.
const threadHintPrefix = "discord."

// followThread keeps a job's thread that a run or replica named in the
// threads bucket (engine.FollowHints).
func (b *Bot) followThread(key string, value []byte) {
	var jt jobThread
	if json.Unmarshal(value, &jt) == nil && bridge.ValidSnowflake(jt.Thread) {
		b.hinted.Put(key, jt)
	}
}

// rememberThread remembers the job's new thread, started from the card of
// ev's question, here and in the bucket. The bucket's copy is a hint,
// written without waiting for its fsync.
func (b *Bot) rememberThread(ev *bridge.Event, channel, thread string) {
	key := jobKey(ev.Tenant, ev.JobID, channel)
	b.threads.Put(key, thread)
	if b.hints == nil {
		return
	}
	if err := bridge.HintJSON(b.hints, threadHintPrefix+key, jobThread{Thread: thread, From: bridge.RefOf(ev).String()}, engine.ThreadHintTTL); err != nil {
		b.log.Warn("discord: could not record the job's thread", "tenant", ev.Tenant, "job", ev.JobID, "err", err)
	}
}

// forgetThread forgets a job's thread that went.
func (b *Bot) forgetThread(ctx context.Context, ev *bridge.Event, channel string) {
	key := jobKey(ev.Tenant, ev.JobID, channel)
	b.threads.Delete(key)
	b.hinted.Delete(key)
	if b.hints == nil {
		return
	}
	if err := b.hints.Delete(ctx, threadHintPrefix+key); err != nil {
		b.log.Warn("discord: could not forget the job's thread", "tenant", ev.Tenant, "job", ev.JobID, "err", err)
	}
}
