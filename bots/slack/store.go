package slack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// KVBucket holds what the Slack adapter must remember across restarts and
// replicas that the runtime does not: which one-off side effects (DMs,
// ephemeral refusals) were done, a new job's thread until the runtime
// knows it (threads.go), and the rare card whose post failed in a way
// that may hide a success (a stray, engine.Cards). Which message shows
// which question is the runtime's record, reported on ask.v1.delivery and
// named on every later event (docs/design.md, "Card state"): nothing is
// kept here for a question that waits.
const KVBucket = "ASK_SLACK_REFS"

// ClicksBucket holds each click's double-click marker for clickFold
// (foldClick). A marker is a hint (bridge.NATS.EnsureHints): one lost in
// a crash lets the person's second click through as a click of its own,
// which the runtime refuses as already answered; so writing one costs no
// fsync on the embedded server, where the click's attempt already costs
// one (docs/benchmarks.md, "askbridge bench").
const ClicksBucket = "ASK_SLACK_CLICKS"

// clicksConfig is the clicks bucket: a marker lasts its own key TTL
// (clickFold); the bucket's TTL only bounds a server without key TTLs.
var clicksConfig = jetstream.KeyValueConfig{
	Bucket:      ClicksBucket,
	Description: "askbridge Slack adapter: double-click markers",
	History:     1,
	TTL:         time.Minute,
	Storage:     jetstream.FileStorage,
}

// kvTTL outlives the longest question (90 days) with margin.
const kvTTL = 120 * 24 * time.Hour

func threadKey(tenant, job, channel string) string {
	return "t." + tenant + "." + job + "." + channel
}

// onceKey names a one-off side effect; hashed because event ids and
// identities may hold characters KV keys do not allow.
func onceKey(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "o." + hex.EncodeToString(h.Sum(nil)[:16])
}

// once claims a one-off side effect. It returns false when the effect was
// claimed before (by this or another replica); release undoes the claim
// when the effect could not be done, so a redelivery tries again.
func (b *Bot) once(ctx context.Context, key string) (bool, error) {
	_, err := b.kv.Write(ctx, key, 0, []byte(b.now().UTC().Format(time.RFC3339)), bridge.EventRecordTTL)
	if bridge.IsConflict(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("slack: claim %s: %w", key, err)
	}
	return true, nil
}

// release undoes a claim of once whose side effect was not done, so a
// redelivery tries again. It runs even when ctx is done: a side effect
// cut short by a stop is left to whoever runs next, not kept claimed and
// never done.
func (b *Bot) release(ctx context.Context, key string) { b.releaseIn(ctx, b.kv, key) }

// releaseIn deletes the claim key in kv.
func (b *Bot) releaseIn(ctx context.Context, kv *bridge.KV, key string) {
	ctx, cancel := detached(ctx)
	defer cancel()
	if err := kv.Delete(ctx, key); err != nil {
		b.log.WarnContext(ctx, "slack: could not release a claim", "key", key, "err", err)
	}
}

// detached is ctx without its cancellation, for a few seconds: for the
// record of work a stop cut short, written as the adapter stops.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
}

// clickFold is how long a click folds the same person's same click into
// it, on every replica (a double click; Slack's own retries carry the
// same trigger id, and so the same attempt id, anyway).
const clickFold = 10 * time.Second

// clickOf names a click for folding: who clicked which button, with which
// value (a select's option).
func clickOf(user, blockID, actionID, value, selected string) string {
	return user + "|" + blockID + "|" + actionID + "|" + value + "|" + selected
}

// ClickClaimKey is the key of KVBucket that claims a click while it folds
// (foldClick): user is the clicker's Slack id, the rest the block action
// as Slack sends it. It lets a tool outside the adapter see whether a
// click was claimed (internal/torture checks that its kills cut clicks
// between the claim and the publication).
func ClickClaimKey(user, blockID, actionID, value, selected string) string {
	return onceKey("click", clickOf(user, blockID, actionID, value, selected))
}

// foldClick folds a click into the same click made within clickFold (a
// double click; Slack's own retries carry the same trigger id, and so
// the same attempt id, anyway). It returns nil when click is the first
// of its kind, remembered with at, the attempt it makes: the caller
// publishes at. Otherwise it returns the attempt the first click made,
// which the caller publishes again before acknowledging: JetStream keeps
// one copy of it (its message id), and a first click whose replica died
// before publishing is then recorded by the person's retry, not folded
// into nothing (docs/design.md, "Double clicks").
//
// The window is the adapter's clock from the first click's attempt, not
// the key's TTL alone: a claim older than it is taken over.
//
// The click is remembered here (the same replica, at no cost), then
// claimed in the clicks bucket with a key TTL and the attempt as its
// value, so a double click whose second half reaches another replica is
// one attempt too, not a second one the runtime refuses ("already
// answered by you"). Without the bucket (NATS away, a server without key
// TTLs) the click is folded on this replica alone.
func (b *Bot) foldClick(ctx context.Context, click string, at *bridge.AnswerAttempt) *bridge.AnswerAttempt {
	if held := b.clicks.first(click, at); held != nil {
		return held
	}
	if !b.clicksKV.KeyTTLs() {
		return nil
	}
	data, err := json.Marshal(at)
	if err != nil {
		return nil
	}
	key := onceKey("click", click)
	// A claim that expires between the write and the read is claimed again.
	var rev uint64
	for range 3 {
		_, err := b.clicksKV.Write(ctx, key, rev, data, clickFold)
		if err == nil {
			return nil
		}
		if !bridge.IsConflict(err) {
			b.log.WarnContext(ctx, "slack: could not fold a click across replicas; taken as a first click", "err", err)
			return nil
		}
		e, err := b.clicksKV.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			rev = 0
			continue
		}
		var held bridge.AnswerAttempt
		if err == nil {
			err = json.Unmarshal(e.Value(), &held)
		}
		if err != nil || held.AttemptID == "" {
			// Unreadable (or a claim without its attempt): publishing
			// this click's own attempt risks a refusal, not a lost click.
			b.log.WarnContext(ctx, "slack: could not read the click this one folds into; taken as a first click", "err", err)
			return nil
		}
		if !b.now().Before(held.At.Add(clickFold)) {
			// The claim outlived its window: the server removes expired
			// keys late while it elects a leader. This click is a new one.
			rev = e.Revision()
			continue
		}
		b.clicks.hold(click, &held)
		return &held
	}
	return nil
}

// forgetClick lets click through again, here and on every replica.
func (b *Bot) forgetClick(ctx context.Context, click string) {
	b.clicks.forget(click)
	if b.clicksKV.KeyTTLs() {
		b.releaseIn(ctx, b.clicksKV, onceKey("click", click))
	}
}
