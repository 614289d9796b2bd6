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

// fakeSlack is a loopback Slack Web API for the cluster run: it keeps
// every message posted, with its metadata, and lists them back through
// conversations.history and conversations.replies as Slack does, so that
// a replica taking over an unfinished post finds (adopts) the card a
// killed one left rather than posting it again (bots/slack/adopt.go).
// The run counts the cards each question got.
type fakeSlack struct {
	url string
	srv *http.Server

	mu   sync.Mutex
	seq  int
	msgs map[string][]slackMsg // by channel, in posting order
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

func startFakeSlack() (*fakeSlack, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake Slack: %w", err)
	}
	f := &fakeSlack{url: "http://" + ln.Addr().String() + "/api/", msgs: map[string][]slackMsg{}}
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
		f.mu.Lock()
		f.seq++
		ts := fmt.Sprintf("%d.%06d", time.Now().Unix(), f.seq%1000000)
		m := slackMsg{TS: ts, ThreadTS: r.Form.Get("thread_ts"), Text: r.Form.Get("text")}
		if md := r.Form.Get("metadata"); json.Valid([]byte(md)) {
			m.Metadata = json.RawMessage(md)
		}
		f.msgs[channel] = append(f.msgs[channel], m)
		f.mu.Unlock()
		resp = map[string]any{"ok": true, "channel": channel, "ts": ts, "message": m}
	case "chat.update":
		resp = map[string]any{"ok": true, "channel": channel, "ts": r.Form.Get("ts")}
	case "chat.postEphemeral":
		resp = map[string]any{"ok": true, "message_ts": "1.000001"}
	case "chat.getPermalink":
		resp = map[string]any{"ok": true, "permalink": "https://torture.slack.test/archives/" + channel}
	case "conversations.open":
		resp = map[string]any{"ok": true, "channel": map[string]any{"id": "D" + r.Form.Get("users")}}
	case "conversations.history", "conversations.replies":
		resp = map[string]any{"ok": true, "messages": f.list(channel, r.Form.Get("ts"), r.Form.Get("oldest")), "has_more": false}
	case "auth.test":
		resp = map[string]any{"ok": true, "user_id": "UTORTUREBOT", "team_id": "TTORTURE", "bot_id": "BTORTURE"}
	default:
		resp = map[string]any{"ok": true}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(resp)
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

// cards counts the question cards posted, by question key.
func (f *fakeSlack) cards() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for _, ms := range f.msgs {
		for _, m := range ms {
			var md slackMeta
			if json.Unmarshal(m.Metadata, &md) != nil || md.EventType != "askbridge_question" {
				continue
			}
			p := md.EventPayload
			out[fmt.Sprintf("%v/%v/%v@%v", p["tenant"], p["job_id"], p["question_id"], p["task_version"])]++
		}
	}
	return out
}
