package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbridge/askbridge/config"
)

const (
	raceSlackSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	raceConsoleKey  = "race-console-secret-0123456789"
	raceSlackChan   = "C0123"
	raceDiscordChan = "1000000000000000001"
	raceApp         = "555000111"
	raceKevinD      = "3000000000000000001" // kevin on Discord
)

// raceCall is one request a fake platform received.
type raceCall struct {
	Method string // Slack method, "response_url", or a Discord route
	Path   string
	Form   url.Values
	JSON   map[string]any
	TS     string // the ts the fake Slack gave a chat.postMessage
}

// raceWorld is a loopback Slack and Discord (behind discordAPI) that
// record what the service sends them.
type raceWorld struct {
	t            *testing.T
	slack        *httptest.Server
	discordToken string // the bot token that reaches this world's Discord
	discordURL   string
	pub          ed25519.PublicKey
	priv         ed25519.PrivateKey

	mu    sync.Mutex
	calls []raceCall
	seq   int64
	dmsgs map[string]map[string]any // Discord messages by id, as last written
	dsnow atomic.Int64
}

func newRaceWorld(t *testing.T) *raceWorld {
	w := &raceWorld{t: t, dmsgs: map[string]map[string]any{}}
	var err error
	w.pub, w.priv, err = ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	smux := http.NewServeMux()
	smux.HandleFunc("/api/{method}", w.slackAPI)
	smux.HandleFunc("/response/{id}", func(rw http.ResponseWriter, r *http.Request) {
		c := raceCall{Method: "response_url", Path: r.URL.Path}
		_ = json.NewDecoder(r.Body).Decode(&c.JSON)
		w.record(c)
		_, _ = io.WriteString(rw, "ok")
	})
	w.slack = httptest.NewServer(smux)
	t.Cleanup(w.slack.Close)
	w.discordToken, w.discordURL = discordAPI.add(t, w.discordMux())
	return w
}

// raceReply answers with v as JSON.
func raceReply(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	_ = json.NewEncoder(rw).Encode(v)
}

// raceDecode reads a JSON object from r's body.
func raceDecode(r *http.Request) map[string]any {
	m := map[string]any{}
	_ = json.NewDecoder(r.Body).Decode(&m)
	return m
}

// slackAPI is Slack's Web API: every call recorded, each message given a
// ts of its own.
func (w *raceWorld) slackAPI(rw http.ResponseWriter, r *http.Request) {
	c := raceCall{Method: r.PathValue("method"), Path: r.URL.Path}
	body, _ := io.ReadAll(r.Body)
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		_ = json.Unmarshal(body, &c.JSON)
	} else {
		c.Form, _ = url.ParseQuery(string(body))
	}
	w.mu.Lock()
	w.seq++
	ts := fmt.Sprintf("1700000000.%06d", w.seq)
	c.TS = ts
	w.calls = append(w.calls, c)
	w.mu.Unlock()
	var resp any
	switch c.Method {
	case "chat.postMessage":
		resp = map[string]any{"ok": true, "channel": c.Form.Get("channel"), "ts": ts, "message": map[string]any{"ts": ts}}
	case "chat.update":
		resp = map[string]any{"ok": true, "channel": c.Form.Get("channel"), "ts": c.Form.Get("ts")}
	case "chat.postEphemeral":
		resp = map[string]any{"ok": true, "message_ts": ts}
	case "conversations.open":
		resp = map[string]any{"ok": true, "channel": map[string]any{"id": "D" + strings.TrimPrefix(c.Form.Get("users"), "U")}}
	case "conversations.history", "conversations.replies":
		resp = map[string]any{"ok": true, "messages": []any{}, "has_more": false}
	case "views.open":
		resp = map[string]any{"ok": true, "view": map[string]any{"id": "V" + ts}}
	default:
		resp = map[string]any{"ok": true}
	}
	raceReply(rw, 200, resp)
}

// discordMux is Discord's API: messages kept by id, and the calls that
// post, edit or follow up recorded.
func (w *raceWorld) discordMux() *http.ServeMux {
	dmux := http.NewServeMux()
	dmux.HandleFunc("POST /api/v10/channels/{cid}/messages", func(rw http.ResponseWriter, r *http.Request) {
		m := raceDecode(r)
		id := w.snowflake()
		m["id"], m["channel_id"], m["type"] = id, r.PathValue("cid"), 0
		m["author"] = map[string]any{"id": "424242", "username": "askbridge", "bot": true}
		w.mu.Lock()
		w.dmsgs[id] = m
		w.calls = append(w.calls, raceCall{Method: "discord.post", Path: r.URL.Path, JSON: m})
		out, _ := json.Marshal(m)
		w.mu.Unlock()
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write(out)
	})
	dmux.HandleFunc("PATCH /api/v10/channels/{cid}/messages/{mid}", func(rw http.ResponseWriter, r *http.Request) {
		m := raceDecode(r)
		m["id"], m["channel_id"], m["type"] = r.PathValue("mid"), r.PathValue("cid"), 0
		w.mu.Lock()
		if old, ok := w.dmsgs[r.PathValue("mid")]; ok {
			for k, v := range m {
				old[k] = v
			}
		}
		w.calls = append(w.calls, raceCall{Method: "discord.edit", Path: r.URL.Path, JSON: m})
		out, _ := json.Marshal(m)
		w.mu.Unlock()
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write(out)
	})
	dmux.HandleFunc("GET /api/v10/channels/{cid}/messages/{mid}", func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		m, ok := w.dmsgs[r.PathValue("mid")]
		out, _ := json.Marshal(m)
		w.mu.Unlock()
		if !ok {
			raceReply(rw, 404, map[string]any{"message": "Unknown Message", "code": 10008})
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write(out)
	})
	dmux.HandleFunc("GET /api/v10/channels/{cid}/messages", func(rw http.ResponseWriter, r *http.Request) {
		raceReply(rw, 200, []any{})
	})
	dmux.HandleFunc("POST /api/v10/channels/{cid}/messages/{mid}/threads", func(rw http.ResponseWriter, r *http.Request) {
		raceReply(rw, 201, map[string]any{"id": r.PathValue("mid"), "type": 11, "guild_id": "900", "parent_id": r.PathValue("cid")})
	})
	dmux.HandleFunc("POST /api/v10/users/@me/channels", func(rw http.ResponseWriter, r *http.Request) {
		m := raceDecode(r)
		raceReply(rw, 200, map[string]any{"id": fmt.Sprint("77", m["recipient_id"]), "type": 1})
	})
	dmux.HandleFunc("PUT /api/v10/applications/{app}/commands", func(rw http.ResponseWriter, r *http.Request) {
		var cmds []map[string]any
		_ = json.NewDecoder(r.Body).Decode(&cmds)
		for i, c := range cmds {
			c["id"], c["application_id"], c["version"] = strconv.Itoa(900+i), r.PathValue("app"), "1"
		}
		raceReply(rw, 200, cmds)
	})
	dmux.HandleFunc("POST /api/v10/webhooks/{app}/{token}", func(rw http.ResponseWriter, r *http.Request) {
		m := raceDecode(r)
		w.record(raceCall{Method: "discord.followup", Path: r.URL.Path, JSON: m})
		raceReply(rw, 200, map[string]any{"id": w.snowflake(), "channel_id": raceDiscordChan, "type": 0, "content": m["content"], "flags": m["flags"]})
	})
	return dmux
}

func (w *raceWorld) record(c raceCall) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, c)
}

// snowflake is a Discord id made now, as Discord's clock would make it.
func (w *raceWorld) snowflake() string {
	ms := time.Now().UnixMilli() - 1420070400000
	return strconv.FormatInt(ms<<22|(w.dsnow.Add(1)&0x3fffff), 10)
}

func (w *raceWorld) Calls(method string) []raceCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []raceCall
	for _, c := range w.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// configure gives the service this world's settings.
func (w *raceWorld) configure(c *config.Config) {
	c.SlackBotToken, c.SlackSigningSecret, c.SlackAPIURL = "xoxb-race", raceSlackSecret, w.slack.URL+"/api/"
	c.SlackChannel = raceSlackChan
	c.DiscordBotToken, c.DiscordPublicKey, c.DiscordAppID = w.discordToken, hex.EncodeToString(w.pub), raceApp
	c.DiscordAPIURL, c.DiscordChannel = w.discordURL, raceDiscordChan
	c.ConsoleSecret, c.PublicURL = raceConsoleKey, "http://askbridge.test"
	c.Operators = []string{"slack:U0KEV", "slack:U0ANA", "discord:" + raceKevinD, "console:alice", "cli:kevin"}
	c.Admins = []string{"slack:U0ADM"}
}
