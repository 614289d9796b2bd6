package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askbridge/askbridge/internal/bench"
)

// benchSlack is a loopback Slack Web API that accepts everything and keeps
// the cards posted, so the bench can click what a person would. With
// limits it refuses chat.postMessage over Slack's pace as Slack does.
type benchSlack struct {
	benchSlackOptions
	url  string
	srv  *http.Server
	seq  atomic.Int64
	mu   sync.Mutex
	list []benchCard
	// posted counts cards (countOnly), posts every chat.postMessage
	// accepted.
	posted, posts atomic.Int64
	// sample is the first card accepted with onCard set, for the
	// baseline to post the same message.
	sample atomic.Pointer[benchSample]
}

// benchSample is a posted card's blocks (JSON) and text.
type benchSample struct{ blocks, text string }

type benchSlackOptions struct {
	// countOnly counts posted cards without keeping them: a million
	// kept cards would weigh more than the service measured.
	countOnly bool
	// limits, when set, rate-limits chat.postMessage per channel.
	limits *bench.SlackLimits
	// onCard, when set, is called with the job of each card accepted, as
	// it arrives.
	onCard func(job string)
}

func startBenchSlack(o benchSlackOptions) (*benchSlack, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &benchSlack{benchSlackOptions: o, url: "http://" + ln.Addr().String()}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 5 * time.Second}
	go f.srv.Serve(ln)
	return f, nil
}

func (f *benchSlack) close() { f.srv.Close() }

// slackRateLimited is the body of Slack's HTTP 429.
const slackRateLimited = `{"ok":false,"error":"ratelimited"}`

func (f *benchSlack) serve(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	_ = r.ParseForm()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	channel := r.Form.Get("channel")
	if method == "chat.postMessage" && f.limits != nil {
		if wait, _ := f.limits.Take(channel); wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(wait))
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, slackRateLimited)
			return
		}
	}
	ts := fmt.Sprintf("1700000000.%06d", f.seq.Add(1))
	if method == "chat.postMessage" {
		f.posts.Add(1)
		switch {
		case f.onCard != nil:
			if job, ok := cardJob(r.Form.Get("metadata"), r.Form.Get("blocks")); ok {
				f.sample.CompareAndSwap(nil, &benchSample{blocks: r.Form.Get("blocks"), text: r.Form.Get("text")})
				f.onCard(job)
			}
		case f.countOnly:
			// A thread's parent message has no buttons; count cards only.
			if strings.Contains(r.Form.Get("blocks"), `"action_id":"choice.`) {
				f.posted.Add(1)
			}
		default:
			f.keep(channel, ts, r.Form.Get("blocks"), r.Form.Get("text"))
		}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": channel, "ts": ts,
		"message": map[string]any{"ts": ts}, "permalink": "https://bench.slack.com/archives/" + channel})
}

// cardJob says whether a posted message is a question's card (not a job's
// thread parent) and names its job: from the message metadata the card
// carries, else from its blocks' ids (ask.<tenant>.<job>...).
func cardJob(metadata, blocks string) (string, bool) {
	var m struct {
		EventType    string `json:"event_type"`
		EventPayload struct {
			JobID string `json:"job_id"`
		} `json:"event_payload"`
	}
	if metadata != "" && json.Unmarshal([]byte(metadata), &m) == nil && m.EventType != "" {
		return m.EventPayload.JobID, m.EventType == "askbridge_question" && m.EventPayload.JobID != ""
	}
	_, rest, ok := strings.Cut(blocks, `"block_id":"ask.`)
	if !ok {
		return "", false
	}
	parts := strings.SplitN(rest, ".", 3)
	if len(parts) < 3 {
		return "", false
	}
	return parts[1], true
}

// keep records a card's first choice button.
func (f *benchSlack) keep(channel, ts, blocks, text string) {
	var bs []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	if json.Unmarshal([]byte(blocks), &bs) != nil {
		return
	}
	for _, b := range bs {
		if b.Type != "actions" || !strings.HasPrefix(b.BlockID, "ask.") {
			continue
		}
		for _, e := range b.Elements {
			if strings.HasPrefix(e.ActionID, "choice.") {
				parts := strings.Split(b.BlockID, ".")
				if len(parts) < 3 {
					return
				}
				f.mu.Lock()
				f.list = append(f.list, benchCard{job: parts[2], channel: channel, ts: ts, blockID: b.BlockID, actionID: e.ActionID, value: e.Value,
					text: text, blocks: json.RawMessage(blocks), n: len(f.list)})
				f.mu.Unlock()
				return
			}
		}
	}
}

func (f *benchSlack) cards() int {
	if f.countOnly {
		return int(f.posted.Load())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.list)
}

func (f *benchSlack) takeCards() []benchCard {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.list)
}
