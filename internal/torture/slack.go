package torture

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// fakeSlack is a loopback Slack Web API: it keeps every message posted,
// with its metadata, and lists them back through conversations.history
// and conversations.replies as Slack does, so that a replica taking over
// an unfinished post finds (adopts) the card a killed one left rather than
// posting it again (bots/slack/adopt.go). It records when each question's
// card was posted and the buttons it carries, which the run's person
// clicks; the check counts the cards each question got and how late.
type fakeSlack struct {
	url string
	srv *http.Server
	// onCard is told of each question card posted (its first and later
	// ones); it must not block.
	onCard func(card)

	mu    sync.Mutex
	seq   int
	msgs  map[string][]slackMsg // by channel, in posting order
	cards map[string][]card     // by question key, in posting order
	// lookups counts conversations.history and .replies calls, each a
	// try looking for a card an earlier one may have posted, and
	// lastLookup is when the last came.
	lookups    int
	lastLookup time.Time
}

type slackMsg struct {
	TS       string          `json:"ts"`
	ThreadTS string          `json:"thread_ts,omitempty"`
	Text     string          `json:"text"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// slackMeta is the metadata askbridge marks its messages with.
type slackMeta struct {
	EventType    string         `json:"event_type"`
	EventPayload map[string]any `json:"event_payload"`
}

// card is one question card as posted: where, when, and its actions
// block's buttons as a person sees them.
type card struct {
	key                 string // the question, as question.key
	channel, ts, thread string
	at                  time.Time
	blockID             string
	// buttons maps a button's value (a choice's text) to its action id.
	buttons map[string]string
}

// slackBlock is as much of a Block Kit block as a click needs.
type slackBlock struct {
	Type     string `json:"type"`
	BlockID  string `json:"block_id"`
	Elements []struct {
		Type     string `json:"type"`
		ActionID string `json:"action_id"`
		Value    string `json:"value"`
	} `json:"elements"`
}

func startFakeSlack(onCard func(card)) (*fakeSlack, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake Slack: %w", err)
	}
	f := &fakeSlack{url: "http://" + ln.Addr().String() + "/api/", onCard: onCard,
		msgs: map[string][]slackMsg{}, cards: map[string][]card{}}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

func (f *fakeSlack) close() { _ = f.srv.Close() }

func (f *fakeSlack) serve(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	channel := r.Form.Get("channel")
	var resp map[string]any
	switch method {
	case "chat.postMessage":
		resp = f.post(channel, r)
	case "chat.update":
		resp = map[string]any{"ok": true, "channel": channel, "ts": r.Form.Get("ts")}
	case "chat.postEphemeral":
		resp = map[string]any{"ok": true, "message_ts": "1.000001"}
	case "chat.getPermalink":
		resp = map[string]any{"ok": true, "permalink": "https://torture.slack.test/archives/" + channel}
	case "conversations.open":
		resp = map[string]any{"ok": true, "channel": map[string]any{"id": "D" + r.Form.Get("users")}}
	case "conversations.history", "conversations.replies":
		f.mu.Lock()
		f.lookups++
		f.lastLookup = time.Now()
		f.mu.Unlock()
		resp = map[string]any{"ok": true, "messages": f.list(channel, r.Form.Get("ts"), r.Form.Get("oldest")), "has_more": false}
	case "auth.test":
		resp = map[string]any{"ok": true, "user_id": "UTORTUREBOT", "team_id": "TTORTURE", "bot_id": "BTORTURE"}
	default:
		// response_url posts, views.open and the rest.
		resp = map[string]any{"ok": true}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(resp)
}

// post keeps a chat.postMessage, and records it as a card when its
// metadata names a question.
func (f *fakeSlack) post(channel string, r *http.Request) map[string]any {
	f.mu.Lock()
	f.seq++
	ts := fmt.Sprintf("%d.%06d", time.Now().Unix(), f.seq%1000000)
	m := slackMsg{TS: ts, ThreadTS: r.Form.Get("thread_ts"), Text: r.Form.Get("text")}
	if md := r.Form.Get("metadata"); json.Valid([]byte(md)) {
		m.Metadata = json.RawMessage(md)
	}
	f.msgs[channel] = append(f.msgs[channel], m)
	c, isCard := cardOf(channel, m, r.Form.Get("blocks"))
	if isCard {
		f.cards[c.key] = append(f.cards[c.key], c)
	}
	f.mu.Unlock()
	if isCard && f.onCard != nil {
		f.onCard(c)
	}
	return map[string]any{"ok": true, "channel": channel, "ts": ts, "message": m}
}

// cardOf reads a posted message as a question card: its metadata names
// the question, its actions block holds the buttons.
func cardOf(channel string, m slackMsg, blocks string) (card, bool) {
	var md slackMeta
	if json.Unmarshal(m.Metadata, &md) != nil || md.EventType != "askbridge_question" {
		return card{}, false
	}
	p := md.EventPayload
	c := card{
		key:     fmt.Sprintf("%v/%v/%v@%v", p["tenant"], p["job_id"], p["question_id"], p["task_version"]),
		channel: channel, ts: m.TS, thread: m.ThreadTS, at: time.Now(), buttons: map[string]string{},
	}
	var bs []slackBlock
	_ = json.Unmarshal([]byte(blocks), &bs)
	for _, b := range bs {
		if b.Type != "actions" {
			continue
		}
		for _, e := range b.Elements {
			if e.Type == "button" && e.Value != "" {
				c.blockID = b.BlockID
				c.buttons[e.Value] = e.ActionID
			}
		}
	}
	return c, true
}

// list is a channel's messages from oldest on, newest first as Slack
// lists them; with thread set, that thread's parent and replies.
func (f *fakeSlack) list(channel, thread, oldest string) []slackMsg {
	from, _ := strconv.ParseFloat(oldest, 64)
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []slackMsg
	ms := f.msgs[channel]
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if ts, _ := strconv.ParseFloat(m.TS, 64); ts < from {
			continue
		}
		if thread != "" && m.TS != thread && m.ThreadTS != thread {
			continue
		}
		out = append(out, m)
	}
	return out
}

// lookedUp returns how many lookups came, and when the last did.
func (f *fakeSlack) lookedUp() (int, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lookups, f.lastLookup
}

// posted returns the question cards posted, by question key, in posting
// order.
func (f *fakeSlack) posted() map[string][]card {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string][]card, len(f.cards))
	for k, cs := range f.cards {
		out[k] = append([]card(nil), cs...)
	}
	return out
}
