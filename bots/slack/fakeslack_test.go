package slack

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// apiCall is one request the fake Slack received.
type apiCall struct {
	Method string // Web API method, "response_url", or "ws_ack"
	Form   url.Values
	JSON   map[string]any
	Body   []byte
	Auth   string
	At     time.Time
}

// Str returns a form value or a top-level JSON string.
func (c apiCall) Str(key string) string {
	if v := c.Form.Get(key); v != "" {
		return v
	}
	if s, ok := c.JSON[key].(string); ok {
		return s
	}
	return ""
}

// scripted is a canned response for the next call of a method.
type scripted struct {
	status int
	header map[string]string
	body   string
	// done: the call is carried out first (a post is stored), then
	// answered with the script, or not at all when drop: Slack did it
	// but the caller never heard.
	done, drop bool
	// hang: the call gets no answer until its caller gives up (a
	// request in flight when the adapter stops).
	hang bool
	// channel: only a call to this channel takes the script ("": any).
	channel string
}

// fakeSlack is a loopback Slack Web API speaking Slack's wire format. It
// records every request; tests assert on what the real slack-go client sent.
type fakeSlack struct {
	t      testing.TB
	srv    *httptest.Server
	mu     sync.Mutex
	calls  []apiCall
	script map[string][]scripted
	seq    int
	// Socket Mode: envelopes to send once a client connects, and acks received.
	wsSend chan []byte
	// msgs are the messages in the fake workspace: posted, or held by a
	// test (a post a crashed replica made); conversations.history and
	// conversations.replies read them.
	msgs []fakeMsg
}

// fakeMsg is one message Slack holds.
type fakeMsg struct {
	Channel, TS, Thread, Text string
	Metadata                  map[string]any // {event_type, event_payload}, nil when none
}

// hold puts a message in the fake workspace as if it had been posted
// earlier, without recording a call.
func (f *fakeSlack) hold(m fakeMsg) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, m)
}

// message returns the message at ts, as the fake workspace holds it.
func (f *fakeSlack) message(ts string) (fakeMsg, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.msgs {
		if m.TS == ts {
			return m, true
		}
	}
	return fakeMsg{}, false
}

// tsParts splits a Slack ts into seconds and microseconds for ordering.
func tsParts(ts string) (int64, int64) {
	sec, frac, _ := strings.Cut(ts, ".")
	s, _ := strconv.ParseInt(sec, 10, 64)
	frac = (frac + "000000")[:6]
	u, _ := strconv.ParseInt(frac, 10, 64)
	return s, u
}

func tsLess(a, b string) bool {
	as, au := tsParts(a)
	bs, bu := tsParts(b)
	return as < bs || (as == bs && au < bu)
}

// history serves conversations.history and conversations.replies as Slack
// does: top-level messages newest first, or a thread (the parent and its
// replies) oldest first; oldest and latest bound the ts (exclusive unless
// inclusive), limit and cursor page, and metadata is included only with
// include_all_metadata.
func (f *fakeSlack) history(method string, c apiCall) map[string]any {
	channel, thread := c.Str("channel"), c.Str("ts")
	oldest, latest := c.Str("oldest"), c.Str("latest")
	inclusive := c.Str("inclusive") == "1" || c.Str("inclusive") == "true"
	withMeta := c.Str("include_all_metadata") == "1" || c.Str("include_all_metadata") == "true"
	limit, _ := strconv.Atoi(c.Str("limit"))
	if limit <= 0 {
		limit = 100
	}
	from, _ := strconv.Atoi(strings.TrimPrefix(c.Str("cursor"), "next_"))
	f.mu.Lock()
	var sel []fakeMsg
	found := false
	for _, m := range f.msgs {
		if m.Channel != channel {
			continue
		}
		if method == "conversations.replies" {
			if m.TS == thread {
				found = true
			}
			if m.TS != thread && m.Thread != thread {
				continue
			}
		} else if m.Thread != "" && m.Thread != m.TS {
			continue // replies are not in a channel's history
		}
		if oldest != "" && (tsLess(m.TS, oldest) || (!inclusive && m.TS == oldest)) {
			continue
		}
		if latest != "" && (tsLess(latest, m.TS) || (!inclusive && m.TS == latest)) {
			continue
		}
		sel = append(sel, m)
	}
	f.mu.Unlock()
	if method == "conversations.replies" && !found {
		return map[string]any{"ok": false, "error": "thread_not_found"}
	}
	sort.Slice(sel, func(i, j int) bool {
		if method == "conversations.history" {
			return tsLess(sel[j].TS, sel[i].TS)
		}
		return tsLess(sel[i].TS, sel[j].TS)
	})
	from = min(max(from, 0), len(sel))
	page := sel[from:min(from+limit, len(sel))]
	out := []map[string]any{}
	for _, m := range page {
		j := map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "bot_id": "B0ASK", "app_id": "A1"}
		if m.Thread != "" {
			j["thread_ts"] = m.Thread
		}
		if withMeta && m.Metadata != nil {
			j["metadata"] = m.Metadata
		}
		out = append(out, j)
	}
	next := ""
	if from+limit < len(sel) {
		next = "next_" + strconv.Itoa(from+limit)
	}
	return map[string]any{"ok": true, "messages": out, "has_more": next != "", "pin_count": 0,
		"response_metadata": map[string]any{"next_cursor": next}}
}

func newFakeSlack(t testing.TB) *fakeSlack {
	f := &fakeSlack{t: t, script: map[string][]scripted{}, wsSend: make(chan []byte, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", f.api)
	mux.HandleFunc("/response/", f.response)
	mux.HandleFunc("/ws", f.websocket)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSlack) APIURL() string { return f.srv.URL + "/api/" }

// fail scripts the next call of method to answer with status and body.
func (f *fakeSlack) fail(method string, status int, header map[string]string, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script[method] = append(f.script[method], scripted{status: status, header: header, body: body})
}

// failIn is fail for the next call of method to channel only.
func (f *fakeSlack) failIn(method, channel string, status int, header map[string]string, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script[method] = append(f.script[method], scripted{status: status, header: header, body: body, channel: channel})
}

// failAfter scripts the next call of method to be carried out (a post is
// stored, with its ts) and then answered with status and body.
func (f *fakeSlack) failAfter(method string, status int, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script[method] = append(f.script[method], scripted{status: status, body: body, done: true})
}

// dropAfter scripts the next call of method to be carried out and then
// its connection closed with no answer.
func (f *fakeSlack) dropAfter(method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script[method] = append(f.script[method], scripted{done: true, drop: true})
}

// hangNext scripts the next call of method to get no answer until the
// caller gives up on it.
func (f *fakeSlack) hangNext(method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script[method] = append(f.script[method], scripted{hang: true})
}

// marked returns the messages the fake workspace holds with metadata meta.
func (f *fakeSlack) marked(meta map[string]any) []fakeMsg {
	want, _ := json.Marshal(meta)
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeMsg
	for _, m := range f.msgs {
		if got, _ := json.Marshal(m.Metadata); m.Metadata != nil && string(got) == string(want) {
			out = append(out, m)
		}
	}
	return out
}

func (f *fakeSlack) record(c apiCall) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

// Calls returns the recorded calls of method ("" for all).
func (f *fakeSlack) Calls(method string) []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []apiCall
	for _, c := range f.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeSlack) api(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	body, _ := io.ReadAll(r.Body)
	c := apiCall{Method: method, Body: body, Auth: r.Header.Get("Authorization"), At: time.Now()}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		_ = json.Unmarshal(body, &c.JSON)
		c.Form = url.Values{}
	} else {
		form, _ := url.ParseQuery(string(body))
		for k, v := range r.URL.Query() {
			form[k] = v
		}
		c.Form = form
	}
	f.record(c)
	f.mu.Lock()
	var s *scripted
	for i, x := range f.script[method] {
		if x.channel == "" || x.channel == c.Str("channel") {
			s = &x
			f.script[method] = slices.Delete(f.script[method], i, i+1)
			break
		}
	}
	f.seq++
	n := f.seq
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if s != nil {
		if s.hang {
			<-r.Context().Done()
			return
		}
		if s.done {
			f.serve(method, c, n)
		}
		if s.drop {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				f.t.Errorf("fake slack: hijack: %v", err)
				return
			}
			_ = conn.Close()
			return
		}
		for k, v := range s.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(s.status)
		_, _ = io.WriteString(w, s.body)
		return
	}
	_ = json.NewEncoder(w).Encode(f.serve(method, c, n))
}

// serve carries out call c, the fake's n-th, and returns Slack's answer.
func (f *fakeSlack) serve(method string, c apiCall, n int) any {
	// Slack's ts: the time it took the message, unique in the channel.
	ts := fmt.Sprintf("%d.%06d", time.Now().Unix(), n)
	var resp any
	switch method {
	case "chat.postMessage":
		m := fakeMsg{Channel: c.Str("channel"), TS: ts, Thread: c.Str("thread_ts"), Text: c.Str("text")}
		if raw := c.Str("metadata"); raw != "" {
			_ = json.Unmarshal([]byte(raw), &m.Metadata)
		}
		f.hold(m)
		resp = map[string]any{"ok": true, "channel": c.Str("channel"), "ts": ts, "message": map[string]any{"ts": ts}}
	case "conversations.history", "conversations.replies":
		resp = f.history(method, c)
	case "chat.update":
		resp = map[string]any{"ok": true, "channel": c.Str("channel"), "ts": c.Str("ts"), "text": c.Str("text")}
	case "chat.postEphemeral":
		resp = map[string]any{"ok": true, "message_ts": ts}
	case "views.open":
		resp = map[string]any{"ok": true, "view": map[string]any{"id": "V" + strconv.Itoa(n), "hash": "h" + strconv.Itoa(n)}}
	case "conversations.open":
		resp = map[string]any{"ok": true, "channel": map[string]any{"id": "D" + strings.TrimPrefix(c.Str("users"), "U")}}
	case "chat.getPermalink":
		resp = map[string]any{"ok": true, "channel": c.Str("channel"),
			"permalink": "https://acme.slack.com/archives/" + c.Str("channel") + "/p" + strings.ReplaceAll(c.Str("message_ts"), ".", "")}
	case "apps.connections.open":
		resp = map[string]any{"ok": true, "url": "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/ws"}
	default:
		resp = map[string]any{"ok": false, "error": "unknown_method"}
	}
	return resp
}

// response records a POST to an interaction's response_url.
func (f *fakeSlack) response(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c := apiCall{Method: "response_url", Body: body, At: time.Now()}
	_ = json.Unmarshal(body, &c.JSON)
	f.record(c)
	_, _ = io.WriteString(w, "ok")
}

// socketPing is how often the fake pings a Socket Mode connection, as
// Slack does: slack-go reconnects when no ping came for 30 s, and an
// envelope sent as it does is lost.
const socketPing = 10 * time.Second

// websocket is Socket Mode: hello, then the queued envelopes and a ping
// every socketPing; acks are recorded.
func (f *fakeSlack) websocket(w http.ResponseWriter, r *http.Request) {
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	if err := conn.WriteJSON(map[string]any{"type": "hello", "num_connections": 1,
		"connection_info": map[string]any{"app_id": "A1"}}); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, data, err := conn.ReadMessage()
			if err != nil {
				return
			}
			c := apiCall{Method: "ws_ack", Body: data, At: time.Now()}
			_ = json.Unmarshal(data, &c.JSON)
			f.record(c)
		}
	}()
	ping := time.NewTicker(socketPing)
	defer ping.Stop()
	for {
		select {
		case env := <-f.wsSend:
			if err := conn.WriteMessage(websocket.TextMessage, env); err != nil {
				return
			}
		case <-ping.C:
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(socketPing)); err != nil {
				return
			}
		case <-done:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// --- signed requests, as Slack sends them ---
