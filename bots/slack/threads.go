package slack

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// A job has one thread per channel, whichever replica or run of the
// process posts its first card. Its parent's ts is claimed in the
// adapter's bucket before the parent is posted and written there once it
// is, so that a replica, or a restart, that shows a later question of the
// job uses that thread rather than open another, and a later try of a
// card looks for it where the earlier try posted it.

// threadClaim is a job's thread in a channel as the bucket holds it: the
// parent's ts once it is posted; until then, which run is opening it and
// since when.
type threadClaim struct {
	TS    string    `json:"ts,omitempty"`
	Run   string    `json:"run,omitempty"`
	Since time.Time `json:"since"`
}

// threadTTL is how long the bucket holds a job's thread: as long as a
// claim to show a question, past the restart of a run killed while it
// opened the thread. By then the card's delivery report has told the
// runtime, which names the job's threads on its later events.
const threadTTL = engine.ShowClaimTTL

// threadOpening is how long a replica waits for another to finish
// opening a job's thread before it opens it itself: past any one post
// and its retries, so only a run that died leaves it that long.
const threadOpening = 30 * time.Second

// threadRecheck is how soon a job held back by another replica's opening
// of its thread looks again.
const threadRecheck = time.Second

// unclaimed is the revision claimThread gives a parent posted without a
// claim: nothing is recorded of it.
const unclaimed = ^uint64(0)

// threadRun names this run of the process in its thread claims.
var threadRun = nuid.Next()

// jobThread returns the ts of the job's thread parent in channel, posting
// the parent the first time.
func (p platform) jobThread(ctx context.Context, ev *bridge.Event, channel string, last bool) (string, error) {
	if ts := p.knownThread(ev, channel); ts != "" {
		return ts, nil
	}
	b := p.b
	key := threadKey(ev.Tenant, ev.JobID, channel)
	rev, lookSince, err := p.claimThread(ctx, ev, channel)
	if err != nil || rev == 0 {
		if ts, ok := b.threads.Get(key); ok && err == nil {
			return ts, nil
		}
		return "", err
	}
	meta := threadMeta(ev.Tenant, ev.JobID)
	if !lookSince.IsZero() {
		// An earlier try of this run, or a run that died, may have posted it.
		ts, err := b.findPosted(ctx, channel, "", lookSince, meta)
		if err != nil {
			return "", err
		}
		if ts != "" {
			p.threadOpened(ctx, ev, channel, rev, ts)
			return ts, nil
		}
	}
	blocks, text := blockkit.ThreadParent(ev.Question, b.consoleOn())
	ts, err := b.postMarked(ctx, last, channel, "", meta, slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(text, false))
	if err != nil {
		if rev != unclaimed && !p.Fault(err, channel).MayHavePosted {
			// Not posted: the next try claims it afresh, looking nothing up.
			if err := b.kv.Delete(ctx, key, jetstream.LastRevision(rev)); err != nil {
				b.log.WarnContext(ctx, "slack: could not release the claim of a job's thread", "job", ev.JobID, "err", err)
			}
		}
		return "", err
	}
	p.threadOpened(ctx, ev, channel, rev, ts)
	return ts, nil
}

// claimThread claims the opening of the job's thread in channel. It
// returns the claim's revision, and when a try before may have posted the
// parent, since when to look for it. A revision of 0 with no error says
// the thread is open: its ts is remembered. Another run opening it lately
// holds the job back. Without the bucket, or with NATS away, the parent is
// posted unclaimed, since a thread opened twice beats a question not shown.
func (p platform) claimThread(ctx context.Context, ev *bridge.Event, channel string) (rev uint64, lookSince time.Time, err error) {
	b := p.b
	if b.kv == nil {
		return unclaimed, time.Time{}, nil
	}
	key := threadKey(ev.Tenant, ev.JobID, channel)
	now := b.now()
	rev, err = bridge.PutJSON(ctx, b.kv, key, 0, threadClaim{Run: threadRun, Since: now.UTC()}, threadTTL)
	if err == nil {
		return rev, time.Time{}, nil
	}
	if !bridge.IsConflict(err) {
		b.log.WarnContext(ctx, "slack: could not claim a job's thread; opening it unclaimed", "job", ev.JobID, "err", err)
		return unclaimed, time.Time{}, nil
	}
	var c threadClaim
	rev, _, found, err := bridge.GetJSON(ctx, b.kv, key, &c)
	switch {
	case err != nil:
		return 0, time.Time{}, fmt.Errorf("slack: read the claim of job %s's thread: %w", ev.JobID, err)
	case !found:
		return 0, time.Time{}, fmt.Errorf("slack: the claim of job %s's thread went as it was read", ev.JobID)
	case c.TS != "":
		b.threads.Put(key, c.TS)
		return 0, time.Time{}, nil
	case c.Run != threadRun && now.Sub(c.Since) < threadOpening:
		return 0, time.Time{}, &engine.Hold{Until: time.Now().Add(threadRecheck),
			Why: "slack: another replica is opening job " + ev.JobID + "'s thread"}
	}
	if c.Run != threadRun {
		// The run that claimed it died: this run takes the claim over.
		if rev, err = bridge.PutJSON(ctx, b.kv, key, rev, threadClaim{Run: threadRun, Since: c.Since}, threadTTL); err != nil {
			return 0, time.Time{}, fmt.Errorf("slack: take over the claim of job %s's thread: %w", ev.JobID, err)
		}
	}
	return rev, c.Since.Add(-lookback), nil
}

// threadOpened remembers the job's thread parent, here and in the bucket.
func (p platform) threadOpened(ctx context.Context, ev *bridge.Event, channel string, rev uint64, ts string) {
	b := p.b
	key := threadKey(ev.Tenant, ev.JobID, channel)
	b.threads.Put(key, ts)
	if rev == unclaimed {
		return
	}
	if _, err := bridge.PutJSON(ctx, b.kv, key, rev, threadClaim{TS: ts}, threadTTL); err != nil {
		b.log.WarnContext(ctx, "slack: could not record a job's thread", "job", ev.JobID, "err", err)
	}
}

// sharedThread is the job's thread in channel for a card an earlier try
// may have posted: as the bucket names it, else as the channel's history
// shows it since since.
func (p platform) sharedThread(ctx context.Context, ev *bridge.Event, channel string, since time.Time) (string, error) {
	b := p.b
	key := threadKey(ev.Tenant, ev.JobID, channel)
	if b.kv != nil {
		var c threadClaim
		if _, _, _, err := bridge.GetJSON(ctx, b.kv, key, &c); err != nil {
			return "", fmt.Errorf("slack: read job %s's thread: %w", ev.JobID, err)
		}
		if c.TS != "" {
			b.threads.Put(key, c.TS)
			return c.TS, nil
		}
	}
	ts, err := b.findPosted(ctx, channel, "", since, threadMeta(ev.Tenant, ev.JobID))
	if err != nil || ts == "" {
		return "", err
	}
	b.threads.Put(key, ts)
	return ts, nil
}
