package discord

import (
	"context"

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
// it, as the event names it, or as the bucket does. For the question the
// bucket's thread was started from it is "": that card is in the channel,
// and a later try of it posts there, where Discord's nonce finds it.
func (p platform) sharedThread(ctx context.Context, ev *bridge.Event, channel string) string {
	if th := p.knownThread(ev, channel); th != "" {
		return th
	}
	b := p.b
	if b.hints == nil {
		return ""
	}
	key := jobKey(ev.Tenant, ev.JobID, channel)
	var jt jobThread
	if _, _, found, err := bridge.GetJSON(ctx, b.hints, "discord."+key, &jt); err != nil || !found {
		return "" // none, or NATS away: a new thread beats a card not shown
	}
	if !bridge.ValidSnowflake(jt.Thread) || jt.From == bridge.RefOf(ev).String() {
		return ""
	}
	b.threads.Put(key, jt.Thread)
	return jt.Thread
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
	if err := bridge.HintJSON(b.hints, "discord."+key, jobThread{Thread: thread, From: bridge.RefOf(ev).String()}, engine.ThreadHintTTL); err != nil {
		b.log.Warn("discord: could not record the job's thread", "tenant", ev.Tenant, "job", ev.JobID, "err", err)
	}
}

// forgetThread forgets a job's thread that went.
func (b *Bot) forgetThread(ctx context.Context, ev *bridge.Event, channel string) {
	key := jobKey(ev.Tenant, ev.JobID, channel)
	b.threads.Delete(key)
	if b.hints == nil {
		return
	}
	if err := b.hints.Delete(ctx, "discord."+key); err != nil {
		b.log.Warn("discord: could not forget the job's thread", "tenant", ev.Tenant, "job", ev.JobID, "err", err)
	}
}
