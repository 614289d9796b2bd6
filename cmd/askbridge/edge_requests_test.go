package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// The requests TestEdgeLoad sends, of every kind, and the answers each
// kind may get.

// edgeKind is one kind of request in the mix.
type edgeKind int

const (
	edgeValid edgeKind = iota
	edgeForged
	edgeStale
	edgeOversize
	edgeNotJSON
	edgeKinds
)

var edgeKindNames = [...]string{"valid", "forged", "stale", "oversize", "non-JSON"}

// edgeMix is the share of each kind, out of 20.
var edgeMix = [edgeKinds]int{edgeValid: 8, edgeForged: 4, edgeStale: 3, edgeOversize: 1, edgeNotJSON: 4}

// slackRequest is request i to POST /slack/interactions, of kind: a click
// on the card's second choice by a clicker of its own.
func (e *edgeLoad) slackRequest(i int, kind edgeKind) *http.Request {
	user := fmt.Sprintf("U0L%06d", i) // one clicker per request: a double click is one attempt
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "trigger_id": fmt.Sprintf("trig-load-%d", i), "response_url": e.slackAPI + "/response/" + strconv.Itoa(i),
		"user": map[string]any{"id": user, "name": "load"}, "team": map[string]any{"id": "T1"},
		"container": map[string]any{"type": "message", "message_ts": "1700000000.000001", "channel_id": "C0123"},
		"channel":   map[string]any{"id": "C0123"},
		"actions":   []any{map[string]any{"type": "button", "action_id": "choice.1", "block_id": e.slackBlock, "value": "blue", "action_ts": "1700000001.000001"}},
	})
	body := []byte("payload=" + url.QueryEscape(string(payload)))
	secret, at := edgeSlackSecret, time.Now()
	switch kind {
	case edgeForged:
		secret = "not-the-signing-secret"
	case edgeStale:
		at = at.Add(-10 * time.Minute)
	case edgeOversize:
		body = append([]byte("payload="), e.oversize...)
	case edgeNotJSON:
		body = []byte("payload=%7Bnot-json-" + strconv.Itoa(i))
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "v0:%s:%s", ts, body)
	req, _ := http.NewRequest(http.MethodPost, e.base+"/slack/interactions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(m.Sum(nil)))
	return req
}

// discordRequest is request i to POST /discord/interactions, of kind: a
// click on one of the card's choices, an interaction id of its own.
func (e *edgeLoad) discordRequest(i int, kind edgeKind) *http.Request {
	id := strconv.FormatInt(1400000000000000000+int64(i), 10)
	body, _ := json.Marshal(map[string]any{"id": id, "application_id": "555000111", "type": 3, "token": "itoken-" + id, "version": 1,
		"guild_id": "900", "channel_id": "1000000000000000001",
		"member": map[string]any{"user": map[string]any{"id": edgeDiscordUser, "username": "kevin"}, "roles": []string{}, "joined_at": "2026-01-01T00:00:00Z"},
		"data":   map[string]any{"custom_id": e.discordChoice, "component_type": 2}})
	key, at := e.priv, time.Now()
	switch kind {
	case edgeForged:
		key = e.otherKey
	case edgeStale:
		at = at.Add(-10 * time.Minute)
	case edgeOversize:
		body = e.oversize
	case edgeNotJSON:
		body = []byte("not json " + id)
	}
	stamp := strconv.FormatInt(at.Unix(), 10)
	req, _ := http.NewRequest(http.MethodPost, e.base+"/discord/interactions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Signature-Ed25519", hex.EncodeToString(ed25519.Sign(key, append([]byte(stamp), body...))))
	req.Header.Set("X-Signature-Timestamp", stamp)
	return req
}

// edgeWantStatus is the answers a request of kind may get. Both endpoints
// read the body under their size limit before checking the signature, so
// an oversize body is 413 at both. A valid request to Slack is 200 once
// its attempt is in JetStream, or 503 when that took longer than the
// adapter's budget for the platform's 3 s (a loaded machine): nothing
// acknowledged, the person told to retry. Discord's is 200 either way: its
// body tells (discordRecorded).
func edgeWantStatus(discord bool, kind edgeKind) []int {
	switch kind {
	case edgeValid:
		if discord {
			return []int{http.StatusOK}
		}
		return []int{http.StatusOK, http.StatusServiceUnavailable}
	case edgeForged, edgeStale:
		return []int{http.StatusUnauthorized}
	case edgeOversize:
		return []int{http.StatusRequestEntityTooLarge}
	default:
		return []int{http.StatusBadRequest}
	}
}

// edgeJob is one request of the load.
type edgeJob struct {
	i       int
	discord bool
	kind    edgeKind
}

// attemptKey is what countAttempts counts a valid job's attempt by.
func (j edgeJob) attemptKey() string {
	if j.discord {
		return bridge.PlatformDiscord + "-" + strconv.FormatInt(1400000000000000000+int64(j.i), 10)
	}
	return fmt.Sprintf("slack:U0L%06d", j.i)
}

// edgeJobs is the load: both endpoints interleaved, perEndpoint requests
// each, kinds spread by the mix; and how many are valid.
func edgeJobs(perEndpoint int) (jobs []edgeJob, valid int) {
	var mix []edgeKind
	for k, n := range edgeMix {
		for range n {
			mix = append(mix, edgeKind(k))
		}
	}
	for i := range 2 * perEndpoint {
		j := edgeJob{i: i, discord: i%2 == 1, kind: mix[(i/2*7)%len(mix)]}
		if j.kind == edgeValid {
			valid++
		}
		jobs = append(jobs, j)
	}
	return jobs, valid
}

// discordRecorded reads the body of a valid click's 200 from Discord's
// endpoint: a deferred update (type 6) acknowledges a recorded attempt; an
// ephemeral message (type 4, flag 64) asking to try again says nothing
// was recorded. Anything else is bad, and says what it was.
func discordRecorded(body []byte) (recorded bool, bad string) {
	var resp struct {
		Type int `json:"type"`
		Data struct {
			Content string `json:"content"`
			Flags   int    `json:"flags"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return false, fmt.Sprintf("a 200 whose body is not an interaction response: %v: %.200s", err, body)
	}
	switch {
	case resp.Type == 6:
		return true, ""
	case resp.Type == 4 && resp.Data.Flags == 64 && strings.Contains(resp.Data.Content, "please try again"):
		return false, ""
	}
	return false, fmt.Sprintf("a 200 neither recorded nor asking to try again: %.200s", body)
}
