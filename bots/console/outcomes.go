package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// OutcomesBucket keeps what the runtime said about the console's answer
// attempts for outcomeTTL, so the page a POST redirects to shows a
// refusal, with the input kept, on whichever replica the browser reaches
// (docs/console.md "After a submit").
const OutcomesBucket = "ASK_CONSOLE_OUTCOMES"

// outcomeTTL is how long an attempt's outcome is shown on its page.
const outcomeTTL = 15 * time.Minute

// outcomeWait bounds a read or write of the bucket on a page's path: the
// memory of this replica answers when the bucket is slow or away.
const outcomeWait = time.Second

var outcomesConfig = jetstream.KeyValueConfig{
	Bucket:      OutcomesBucket,
	Description: "askbridge console: what the runtime said about answers sent from the console",
	History:     1,
	TTL:         outcomeTTL,
	Storage:     jetstream.FileStorage,
}

// sharedOutcome is an outcome as the bucket holds it.
type sharedOutcome struct {
	Identity string        `json:"identity"`
	Tenant   string        `json:"tenant"`
	Job      string        `json:"job"`
	Question string        `json:"question"`
	At       time.Time     `json:"at"`
	Refused  *bridge.Event `json:"refused,omitempty"`
	Action   string        `json:"action,omitempty"`
	Done     string        `json:"done,omitempty"`
	Input    url.Values    `json:"input,omitempty"`
}

// outcomeKey is the bucket's key of an attempt id (a hash: ids are the
// console's own, but keys allow fewer characters).
func outcomeKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "a." + hex.EncodeToString(sum[:16])
}

// openOutcomes makes the bucket, or says why the outcomes stay in this
// replica's memory alone.
func openOutcomes(n *bridge.NATS, log *slog.Logger) *bridge.KV {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := bridge.EnsureKV(ctx, n.JS, outcomesConfig)
	if err != nil {
		log.Warn("console: refusals are kept in this replica's memory only: another replica shows \"Your answer was sent\" instead", "bucket", OutcomesBucket, "err", err)
		return nil
	}
	return kv
}

// share writes o to the bucket; a failure leaves it in memory alone.
func (oc *outcomeCache) share(id string, o *outcome) {
	if oc.kv == nil {
		return
	}
	raw, err := json.Marshal(sharedOutcome{Identity: o.identity, Tenant: o.tenant, Job: o.job, Question: o.question,
		At: o.at, Refused: o.refused, Action: o.action, Done: o.done, Input: url.Values(o.input)})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), outcomeWait)
	defer cancel()
	if _, err := oc.kv.Put(ctx, outcomeKey(id), raw); err != nil {
		oc.log.Warn("console: could not share an answer's outcome with the other replicas", "err", err)
	}
}

// fetch reads the outcome of attempt id another replica shared.
func (oc *outcomeCache) fetch(id string) (*outcome, bool) {
	if oc.kv == nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), outcomeWait)
	defer cancel()
	e, err := oc.kv.Get(ctx, outcomeKey(id))
	if err != nil {
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			oc.log.Warn("console: could not read an answer's outcome", "err", err)
		}
		return nil, false
	}
	var s sharedOutcome
	if err := json.Unmarshal(e.Value(), &s); err != nil || time.Since(s.At) >= oc.ttl {
		return nil, false
	}
	return &outcome{identity: s.Identity, tenant: s.Tenant, job: s.Job, question: s.Question, at: s.At,
		refused: s.Refused, action: s.Action, done: s.Done, input: formInput(s.Input)}, true
}
