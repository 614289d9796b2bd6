package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// The loopback Slack and Discord APIs TestEdgeLoad's service talks to.

// edgeFakeSlack is a loopback Slack Web API answering every method the
// adapter calls with Slack's JSON shapes, and response_url posts.
func edgeFakeSlack(t *testing.T) *httptest.Server {
	var seq atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/api/{method}", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		ts := fmt.Sprintf("1700000000.%06d", seq.Add(1))
		var resp any
		switch r.PathValue("method") {
		case "chat.postMessage":
			resp = map[string]any{"ok": true, "channel": r.Form.Get("channel"), "ts": ts, "message": map[string]any{"ts": ts}}
		case "chat.update":
			resp = map[string]any{"ok": true, "channel": r.Form.Get("channel"), "ts": r.Form.Get("ts")}
		case "chat.postEphemeral":
			resp = map[string]any{"ok": true, "message_ts": ts}
		case "conversations.open":
			resp = map[string]any{"ok": true, "channel": map[string]any{"id": "D" + strings.TrimPrefix(r.Form.Get("users"), "U")}}
		case "chat.getPermalink":
			resp = map[string]any{"ok": true, "channel": r.Form.Get("channel"), "permalink": "https://acme.slack.com/archives/C0123/p1"}
		default:
			resp = map[string]any{"ok": true}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	})
	mux.HandleFunc("/response/", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "ok")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// edgeFakeDiscord is a loopback Discord REST API (behind discordAPI):
// messages (kept, so the test can read the card's custom ids), threads,
// DMs, commands, follow-ups.
type edgeFakeDiscord struct {
	token, url string // the bot token that reaches it, and its base
	mu         sync.Mutex
	next       int64
	msgs       map[string]map[string]any
}

func newEdgeFakeDiscord(t *testing.T) *edgeFakeDiscord {
	f := &edgeFakeDiscord{next: 1500000000000000000, msgs: map[string]map[string]any{}}
	reply := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	decode := func(r *http.Request) map[string]any {
		m := map[string]any{}
		_ = json.NewDecoder(r.Body).Decode(&m)
		return m
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v10/channels/{cid}/messages", func(w http.ResponseWriter, r *http.Request) {
		m := decode(r)
		f.mu.Lock()
		f.next++
		id := strconv.FormatInt(f.next, 10)
		m["id"], m["channel_id"], m["type"] = id, r.PathValue("cid"), 0
		m["author"] = map[string]any{"id": "424242", "username": "askbridge", "bot": true}
		f.msgs[id] = m
		f.mu.Unlock()
		reply(w, 200, m)
	})
	mux.HandleFunc("PATCH /api/v10/channels/{cid}/messages/{mid}", func(w http.ResponseWriter, r *http.Request) {
		m := decode(r)
		m["id"], m["channel_id"], m["type"] = r.PathValue("mid"), r.PathValue("cid"), 0
		reply(w, 200, m)
	})
	mux.HandleFunc("GET /api/v10/channels/{cid}/messages/{mid}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		m, ok := f.msgs[r.PathValue("mid")]
		f.mu.Unlock()
		if !ok {
			reply(w, 404, map[string]any{"message": "Unknown Message", "code": 10008})
			return
		}
		reply(w, 200, m)
	})
	mux.HandleFunc("POST /api/v10/channels/{cid}/messages/{mid}/threads", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 201, map[string]any{"id": r.PathValue("mid"), "type": 11, "guild_id": "900", "parent_id": r.PathValue("cid")})
	})
	mux.HandleFunc("POST /api/v10/users/@me/channels", func(w http.ResponseWriter, r *http.Request) {
		m := decode(r)
		reply(w, 200, map[string]any{"id": fmt.Sprint("77", m["recipient_id"]), "type": 1})
	})
	mux.HandleFunc("PUT /api/v10/applications/{app}/commands", func(w http.ResponseWriter, r *http.Request) {
		var cmds []map[string]any
		_ = json.NewDecoder(r.Body).Decode(&cmds)
		for i, c := range cmds {
			c["id"], c["application_id"], c["version"] = strconv.Itoa(900+i), r.PathValue("app"), "1"
		}
		reply(w, 200, cmds)
	})
	mux.HandleFunc("POST /api/v10/webhooks/{app}/{token}", func(w http.ResponseWriter, r *http.Request) {
		m := decode(r)
		m["id"], m["channel_id"], m["type"] = "1600000000000000001", "1000000000000000001", 0
		reply(w, 200, m)
	})
	f.token, f.url = discordAPI.add(t, mux)
	return f
}

// customIDs returns the custom_ids of the components of every message posted.
func (f *edgeFakeDiscord) customIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range f.msgs {
		rows, _ := m["components"].([]any)
		for _, r := range rows {
			row, _ := r.(map[string]any)
			cs, _ := row["components"].([]any)
			for _, c := range cs {
				if id, _ := c.(map[string]any)["custom_id"].(string); id != "" {
					out = append(out, id)
				}
			}
		}
	}
	return out
}

// connTrace is what a request's connection went through, told when the
// request fails: a connection closed unanswered (EOF) says whether it was
// a kept-alive one, how long it had been idle, and whether the request
// was written whole.
type connTrace struct {
	mu       sync.Mutex
	got      bool
	info     httptrace.GotConnInfo
	local    string
	wrote    bool
	wroteErr error
}

// traceConn returns req with its connection traced.
func traceConn(req *http.Request) (*http.Request, *connTrace) {
	c := &connTrace{}
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.got, c.info = true, info
			if info.Conn != nil {
				c.local = info.Conn.LocalAddr().String()
			}
		},
		WroteRequest: func(w httptrace.WroteRequestInfo) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.wrote, c.wroteErr = true, w.Err
		},
	}
	return req.WithContext(httptrace.WithClientTrace(req.Context(), trace)), c
}

func (c *connTrace) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.got {
		return "no connection"
	}
	s := fmt.Sprintf("connection from %s, reused %v, idle %v for %v", c.local, c.info.Reused, c.info.WasIdle, c.info.IdleTime)
	switch {
	case !c.wrote:
		s += ", request not written"
	case c.wroteErr != nil:
		s += fmt.Sprintf(", writing the request failed: %v", c.wroteErr)
	default:
		s += ", request written whole"
	}
	return s
}
