package slack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bridge"
)

// KVBucket holds the Slack adapter's own durable memory: which message
// shows which question, which thread belongs to which job, and which
// one-off side effects (DMs, ephemeral refusals) were already done. It is
// shared by every replica, so "post once" and "one thread per job" hold
// across restarts and replicas without the adapter touching the store.
const KVBucket = "ASK_SLACK_REFS"

// kvTTL outlives the longest question (90 days) with margin: a record
// written without a TTL of its own (a card still waiting) lives this long.
const kvTTL = 120 * 24 * time.Hour

// Records the adapter needs only for a while go sooner, because JetStream
// keeps every key in memory.
const (
	// threadTTL: a job's thread takes its later questions until 30 days
	// after its last one; a job that asks after that opens a new one.
	threadTTL = 30 * 24 * time.Hour
	// threadRefresh: a thread record this old is written again when the
	// job asks in it, so its TTL counts from the last question (at most
	// one extra write a day for a job that keeps asking).
	threadRefresh = 24 * time.Hour
)

// cardTTL is how long a card record lives after it is written. A settled
// or failed card is kept while its asked event may be replayed, so a replay
// does not show the question again; later clicks on it are answered from
// the runtime.
func cardTTL(c *card) time.Duration {
	if c.Outcome != "" || c.Failure != nil {
		return bridge.EventRecordTTL
	}
	return 0 // the bucket's
}

// card is what the adapter remembers about one question at one version.
type card struct {
	Question *bridge.Question `json:"question,omitempty"`
	AskedAt  time.Time        `json:"asked_at,omitzero"`
	Deadline time.Time        `json:"deadline,omitzero"`
	// Where the card is, once posted.
	Channel string `json:"channel,omitempty"`
	TS      string `json:"ts,omitempty"`
	Thread  string `json:"thread,omitempty"`
	// Claim says a replica is posting the card right now (crash-safe: a
	// claim older than claimTTL may be taken over).
	ClaimBy    string    `json:"claim_by,omitempty"`
	ClaimSince time.Time `json:"claim_since,omitzero"`
	// TriedSince is the earliest unfinished claim before the current one:
	// a post made then may have reached Slack unrecorded, so a takeover
	// looks for it (by its metadata) from there on.
	TriedSince time.Time `json:"tried_since,omitzero"`
	// Failure is the delivery failure, once posting failed for good.
	Failure *bridge.Failure `json:"failure,omitempty"`
	// Outcome is the settled card's context line; Updated says the card in
	// Slack already shows it.
	Outcome string `json:"outcome,omitempty"`
	Updated bool   `json:"updated,omitempty"`
	// Ended is when the question ended (the settling event's time), shown
	// after the outcome line.
	Ended time.Time `json:"ended,omitzero"`
	// Late is what someone who answers after it ended is told, in the
	// runtime's words: who answered it and when, that it was cancelled...
	// (empty in records written before it was kept).
	Late string `json:"late,omitempty"`
	// Attempt is the answer attempt that ended the question, if one did:
	// the same interaction delivered again is that answer, not a late one.
	Attempt string `json:"attempt,omitempty"`
}

// thread is a job's thread parent in one channel.
type thread struct {
	TS         string    `json:"ts,omitempty"`
	ClaimBy    string    `json:"claim_by,omitempty"`
	ClaimSince time.Time `json:"claim_since,omitzero"`
	// TriedSince, as in card: the earliest post that may have reached
	// Slack unrecorded (an earlier claim, or a released one whose post
	// failed in a way that may hide a success).
	TriedSince time.Time `json:"tried_since,omitzero"`
}

func cardKey(r blockkit.Ref) string {
	return fmt.Sprintf("q.%s.%s.%s.%d", r.Tenant, r.JobID, r.QuestionID, r.Version)
}

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

// errConflict is a lost compare-and-set race: re-read and try again.
var errConflict = bridge.ErrConflict

// getJSON reads key into v; a missing key gives revision 0 and no error.
func getJSON(ctx context.Context, kv *bridge.KV, key string, v any) (uint64, error) {
	rev, _, err := getJSONAt(ctx, kv, key, v)
	return rev, err
}

// getJSONAt is getJSON that also says when the key was last written.
func getJSONAt(ctx context.Context, kv *bridge.KV, key string, v any) (uint64, time.Time, error) {
	rev, at, _, err := bridge.GetJSON(ctx, kv, key, v)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("slack: %w", err)
	}
	return rev, at, nil
}

// putJSON writes v at key if the key is still at rev (0: absent); with
// ttl > 0 the key goes ttl later. A lost race is errConflict.
func putJSON(ctx context.Context, kv *bridge.KV, key string, rev uint64, v any, ttl time.Duration) (uint64, error) {
	rev, err := bridge.PutJSON(ctx, kv, key, rev, v, ttl)
	if bridge.IsConflict(err) {
		return 0, errConflict
	}
	if err != nil {
		return 0, fmt.Errorf("slack: %w", err)
	}
	return rev, nil
}

// updateCard applies change to the record of r with compare-and-set
// (bridge.UpdateJSON). change sees the current record (nil when absent)
// and returns the new one, or nil to write nothing.
func (b *Bot) updateCard(ctx context.Context, r blockkit.Ref, change func(*card) *card) (*card, error) {
	key := cardKey(r)
	wrote := false
	c, err := bridge.UpdateJSON(ctx, b.kv, key, cardTTL, func(cur *card) *card {
		next := change(cur)
		wrote = next != nil
		return next
	})
	if err != nil {
		return nil, fmt.Errorf("slack: %w", err)
	}
	if wrote {
		b.remember(key, c)
	}
	return c, nil
}

// loadCard reads the record of r, nil when there is none.
func (b *Bot) loadCard(ctx context.Context, r blockkit.Ref) (*card, error) {
	var c card
	key := cardKey(r)
	rev, err := getJSON(ctx, b.kv, key, &c)
	if err != nil || rev == 0 {
		return nil, err
	}
	b.remember(key, &c)
	return &c, nil
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
func (b *Bot) release(ctx context.Context, key string) {
	ctx, cancel := detached(ctx)
	defer cancel()
	if err := b.kv.Delete(ctx, key); err != nil {
		b.log.WarnContext(ctx, "slack: could not release a claim", "key", key, "err", err)
	}
}

// choiceCache remembers each question's choices, which never change for a
// task version, so a button click need not read the card back from the KV
// bucket. Two generations bound its size: when the current one fills, it
// becomes the previous one and the older one is dropped.
type choiceCache struct {
	mu        sync.Mutex
	max       int
	cur, prev map[string][]string
}

func newChoiceCache(max int) *choiceCache {
	return &choiceCache{max: max, cur: map[string][]string{}}
}

func (c *choiceCache) get(key string) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.cur[key]; ok {
		return v, true
	}
	v, ok := c.prev[key]
	if ok {
		c.putLocked(key, v)
	}
	return v, ok
}

func (c *choiceCache) put(key string, choices []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(key, choices)
}

func (c *choiceCache) putLocked(key string, choices []string) {
	if len(c.cur) >= c.max {
		c.prev, c.cur = c.cur, make(map[string][]string, c.max)
	}
	c.cur[key] = choices
}

func (b *Bot) remember(key string, c *card) {
	if c.Question != nil {
		b.choiceCache.put(key, c.Question.Choices)
	}
}

// choices are the choices of the question r names, nil when the adapter
// has no card for it.
func (b *Bot) choices(ctx context.Context, r blockkit.Ref) []string {
	key := cardKey(r)
	if v, ok := b.choiceCache.get(key); ok {
		return v
	}
	rec, _ := b.loadCard(ctx, r)
	if rec == nil || rec.Question == nil {
		return nil
	}
	return rec.Question.Choices
}

// detached is ctx without its cancellation, for a few seconds: for the
// record of work a stop cut short, written as the adapter stops.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
}
