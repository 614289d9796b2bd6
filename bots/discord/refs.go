package discord

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

// card is a question's card as Discord draws it (viewOf): the question as
// asked, where it was posted, and its outcome once known.
type card struct {
	Tenant      string           `json:"tenant"`
	JobID       string           `json:"job_id"`
	QuestionID  string           `json:"question_id"`
	TaskVersion int64            `json:"task_version"`
	Question    *bridge.Question `json:"question,omitempty"`
	AskedAt     time.Time        `json:"asked_at,omitzero"`
	Deadline    time.Time        `json:"deadline,omitzero"`
	// Channel is where the message lives (the job's thread for later
	// questions); Thread the job's thread; Guild the server, when known.
	Channel   string `json:"channel,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	Thread    string `json:"thread,omitempty"`
	Guild     string `json:"guild,omitempty"`
	// Outcome is set once the question is settled.
	Outcome *outcome `json:"outcome,omitempty"`
	// Proposal is an approval's proposal as it stands, when known.
	Proposal *bridge.ProposalStatus `json:"proposal,omitempty"`
}

// outcome is how a question ended, as the card shows it.
type outcome struct {
	Type   string    `json:"type"`
	Text   string    `json:"text,omitempty"`
	By     string    `json:"by,omitempty"`
	ByName string    `json:"by_name,omitempty"`
	Answer string    `json:"answer,omitempty"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at,omitzero"`
}

// cardIndex resolves keyed custom ids.
type cardIndex struct {
	Tenant     string `json:"tenant"`
	JobID      string `json:"job_id"`
	QuestionID string `json:"question_id"`
}

// jobKey names a job's thread in a channel: a job whose questions are
// routed to two channels has a thread in each.
func jobKey(tenant, job, channel string) string { return "job." + tenant + "." + job + "." + channel }

func indexKey(hash string) string { return "ix." + hash }

// seenKey makes a key-value key from parts that may hold characters keys
// cannot; such parts are hashed.
func seenKey(kind string, parts ...string) string {
	k := kind
	for _, p := range parts {
		if !safeKeyPart(p) {
			sum := sha256.Sum256([]byte(p))
			p = "h" + hex.EncodeToString(sum[:12])
		}
		k += "." + p
	}
	return k
}

func safeKeyPart(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// putIndex records the keyed custom id index for a card's question.
func (b *Bot) putIndex(ctx context.Context, tenant, job, question string) error {
	data, _ := json.Marshal(cardIndex{Tenant: tenant, JobID: job, QuestionID: question})
	if _, err := b.refs.Put(ctx, indexKey(cardHash(tenant, job, question)), data); err != nil {
		return fmt.Errorf("discord: write card index: %w", err)
	}
	return nil
}

// resolve fills a keyed action's ids from the card index.
func (b *Bot) resolve(ctx context.Context, a *action) (bool, error) {
	if a.Key == "" {
		return true, nil
	}
	var ix cardIndex
	_, _, found, err := bridge.GetJSON(ctx, b.refs, indexKey(a.Key), &ix)
	if err != nil || !found {
		return false, err
	}
	a.Tenant, a.JobID, a.QuestionID = ix.Tenant, ix.JobID, ix.QuestionID
	return true, nil
}

// markSeen records key in SeenBucket for ttl (0: the bucket's); it
// reports false when it was there.
func (b *Bot) markSeen(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	_, err := b.seen.Write(ctx, key, 0, []byte(b.now().UTC().Format(time.RFC3339)), ttl)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discord: record %s: %w", key, err)
	}
	return true, nil
}

// wasSeen reports whether key is in SeenBucket.
func (b *Bot) wasSeen(ctx context.Context, key string) (bool, error) {
	_, err := b.seen.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discord: read %s: %w", key, err)
	}
	return true, nil
}
