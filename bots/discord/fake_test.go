package discord

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAPI is the one loopback Discord REST API of this package's tests.
// discordgo's endpoints are package variables, so every bot of the test
// binary points at the same base; the fake keeps a separate Discord for
// each bot token, as Discord keeps a bot's messages and rate limits (the
// global one included) for that bot, and tells requests apart by the token
// each carries ("Authorization: Bot <token>"; discordgo sends it with
// interaction follow-ups too). Tests get their own token, so they run in
// parallel.
type fakeAPI struct {
	srv *httptest.Server

	mu   sync.Mutex
	bots map[string]*fakeDiscord // Authorization header → that bot's Discord
	n    int
}

func newFakeAPI() *fakeAPI {
	a := &fakeAPI{bots: map[string]*fakeDiscord{}}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		f := a.bots[r.Header.Get("Authorization")]
		a.mu.Unlock()
		if f == nil {
			apiErr(w, http.StatusUnauthorized, 0, "401: Unauthorized")
			return
		}
		f.handler.ServeHTTP(w, r)
	}))
	return a
}

func (a *fakeAPI) apiURL() string { return a.srv.URL + apiPrefix + "/" }

// newBot makes a bot token of the test's own and the empty Discord its
// requests reach, forgotten when the test ends. The token starts with
// testToken, so a test finding testToken in logs finds any bot's token.
func (a *fakeAPI) newBot(t testing.TB) *fakeDiscord {
	a.mu.Lock()
	a.n++
	token := fmt.Sprintf("%s-%d", testToken, a.n)
	f := newFakeDiscord(token)
	a.bots["Bot "+token] = f
	a.mu.Unlock()
	t.Cleanup(func() {
		a.mu.Lock()
		delete(a.bots, "Bot "+token)
		a.mu.Unlock()
	})
	return f
}

// fakeDiscord is one bot's Discord behind fakeAPI, speaking Discord's wire
// format (v10 paths, JSON error bodies with codes, 429 with retry_after in
// seconds) and recording every request it receives.
type fakeDiscord struct {
	token   string // the bot token its requests carry
	handler http.Handler

	mu       sync.Mutex
	reqs     []fakeReq
	msgs     map[string]map[string]any // message id → message
	nonces   map[string]string         // channel + nonce → message id
	threads  map[string]bool           // message ids with a thread
	archived map[string]bool           // archived threads (not locked)
	next     int64
	rules    []*failRule
	noDM     map[string]bool // users who do not accept DMs
	commands map[string][]map[string]any
}

type fakeReq struct {
	Method string
	Path   string // without the /api/v10 prefix
	Query  string
	Auth   string
	Body   []byte
	At     time.Time // when the fake received it
}

// JSON decodes the request body.
func (r fakeReq) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("request %s %s: body is not a JSON object: %v: %s", r.Method, r.Path, err, r.Body)
	}
	return m
}

// failRule makes requests matching method and path prefix fail.
type failRule struct {
	Method, Prefix string
	Status, Code   int
	RetryAfter     float64 // seconds, for 429
	Global         bool    // a 429 of the global rate limit
	Times          int     // how many requests fail; <0 for all
	// Lost: Discord does the request, and its answer is lost: the
	// connection drops (Status 0), or Status comes back instead.
	Lost bool
	// Hang: no answer comes until the caller gives up (its context ends).
	Hang bool
}

const apiPrefix = "/api/v10"

func newFakeDiscord(token string) *fakeDiscord {
	f := &fakeDiscord{token: token, msgs: map[string]map[string]any{}, nonces: map[string]string{},
		threads: map[string]bool{}, archived: map[string]bool{}, next: 1300000000000000000,
		noDM: map[string]bool{}, commands: map[string][]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+apiPrefix+"/channels/{cid}/messages", f.createMessage)
	mux.HandleFunc("GET "+apiPrefix+"/channels/{cid}/messages", f.listMessages)
	mux.HandleFunc("GET "+apiPrefix+"/channels/{cid}/messages/{mid}", f.getMessage)
	mux.HandleFunc("PATCH "+apiPrefix+"/channels/{cid}/messages/{mid}", f.editMessage)
	mux.HandleFunc("PATCH "+apiPrefix+"/channels/{cid}", f.editChannel)
	mux.HandleFunc("POST "+apiPrefix+"/channels/{cid}/messages/{mid}/threads", f.startThread)
	mux.HandleFunc("POST "+apiPrefix+"/users/@me/channels", f.openDM)
	mux.HandleFunc("PUT "+apiPrefix+"/applications/{app}/commands", f.putCommands)
	mux.HandleFunc("PUT "+apiPrefix+"/applications/{app}/guilds/{guild}/commands", f.putCommands)
	mux.HandleFunc("POST "+apiPrefix+"/webhooks/{app}/{token}", f.followup)
	f.handler = f.wrap(mux)
	return f
}

func (f *fakeDiscord) failOn(r failRule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, &r)
}

// clearRules drops every fail rule.
func (f *fakeDiscord) clearRules() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
}

// forgetNonces forgets the nonces of the messages made so far, as
// Discord does after a few minutes: a post with one of them makes a new
// message.
func (f *fakeDiscord) forgetNonces() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nonces = map[string]string{}
}

func (f *fakeDiscord) blockDMs(user string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noDM[user] = true
}

// requests returns the recorded requests matching method and a path prefix.
func (f *fakeDiscord) requests(method, prefix string) []fakeReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeReq
	for _, r := range f.reqs {
		if (method == "" || r.Method == method) && strings.HasPrefix(r.Path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// message returns a copy of a stored message.
func (f *fakeDiscord) message(id string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.msgs[id]
	if !ok {
		return nil
	}
	data, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return out
}

func apiErr(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"message": msg, "code": code})
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// wrap records the request and applies fail rules; fakeAPI has checked
// its bot token.
func (f *fakeDiscord) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		path := strings.TrimPrefix(r.URL.Path, apiPrefix)
		f.mu.Lock()
		f.reqs = append(f.reqs, fakeReq{Method: r.Method, Path: path, Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization"), Body: body, At: time.Now()})
		var rule *failRule
		for _, fr := range f.rules {
			if fr.Method == r.Method && strings.HasPrefix(path, fr.Prefix) && fr.Times != 0 {
				rule = fr
				if fr.Times > 0 {
					fr.Times--
				}
				break
			}
		}
		f.mu.Unlock()
		if rule != nil && rule.Hang {
			<-r.Context().Done()
			return
		}
		if rule != nil && rule.Lost {
			next.ServeHTTP(httptest.NewRecorder(), r)
			if rule.Status != 0 {
				apiErr(w, rule.Status, rule.Code, fmt.Sprintf("error %d", rule.Code))
				return
			}
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
		if rule != nil {
			if rule.Status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", fmt.Sprint(math.Ceil(rule.RetryAfter)))
				if rule.Global {
					// As Discord: no bucket headers, the scope says global.
					w.Header().Set("X-RateLimit-Global", "true")
					w.Header().Set("X-RateLimit-Scope", "global")
				} else {
					// As Discord: the route's bucket headers come along.
					w.Header().Set("X-RateLimit-Scope", "user")
					w.Header().Set("X-RateLimit-Limit", "5")
					w.Header().Set("X-RateLimit-Remaining", "0")
					w.Header().Set("X-RateLimit-Reset-After", fmt.Sprint(rule.RetryAfter))
					w.Header().Set("X-RateLimit-Bucket", "fakebucket")
				}
				reply(w, 429, map[string]any{"message": "You are being rate limited.", "retry_after": rule.RetryAfter, "global": rule.Global})
				return
			}
			apiErr(w, rule.Status, rule.Code, fmt.Sprintf("error %d", rule.Code))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// newID makes a snowflake of the current time, as Discord does.
func (f *fakeDiscord) newID() string {
	now, _ := strconv.ParseInt(snowflakeAt(time.Now()), 10, 64)
	f.next = max(f.next+1, now)
	return fmt.Sprint(f.next)
}

// listMessages is GET /channels/{id}/messages with after and limit: the
// channel's messages made after the snowflake after, newest first.
func (f *fakeDiscord) listMessages(w http.ResponseWriter, r *http.Request) {
	cid := r.PathValue("cid")
	after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || limit < 1 || limit > 100 {
		limit = 50
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []int64
	for id, m := range f.msgs {
		n, _ := strconv.ParseInt(id, 10, 64)
		if m["channel_id"] == cid && n > after {
			ids = append(ids, n)
		}
	}
	slices.Sort(ids)
	if len(ids) > limit {
		ids = ids[:limit] // the oldest after the id, as Discord pages forward
	}
	out := []any{}
	for i := len(ids) - 1; i >= 0; i-- {
		out = append(out, f.msgs[strconv.FormatInt(ids[i], 10)])
	}
	reply(w, 200, out)
}

func (f *fakeDiscord) createMessage(w http.ResponseWriter, r *http.Request) {
	cid := r.PathValue("cid")
	m, ok := readJSON(w, r)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.HasPrefix(cid, "77") && f.noDM[strings.TrimPrefix(cid, "77")] {
		apiErr(w, 403, 50007, "Cannot send messages to this user")
		return
	}
	delete(f.archived, cid) // sending in an archived thread unarchives it
	if n, _ := m["nonce"].(string); n != "" && m["enforce_nonce"] == true {
		if id, ok := f.nonces[cid+"/"+n]; ok {
			reply(w, 200, f.msgs[id])
			return
		}
	}
	id := f.newID()
	m["id"], m["channel_id"], m["type"] = id, cid, 0
	m["author"] = map[string]any{"id": "424242", "username": "askbridge", "bot": true}
	if m["components"] == nil {
		m["components"] = []any{}
	}
	f.msgs[id] = m
	if n, _ := m["nonce"].(string); n != "" {
		f.nonces[cid+"/"+n] = id
	}
	reply(w, 200, m)
}

func (f *fakeDiscord) getMessage(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.msgs[r.PathValue("mid")]
	if !ok || m["channel_id"] != r.PathValue("cid") {
		apiErr(w, 404, 10008, "Unknown Message")
		return
	}
	reply(w, 200, m)
}

func (f *fakeDiscord) editMessage(w http.ResponseWriter, r *http.Request) {
	patch, ok := readJSON(w, r)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.msgs[r.PathValue("mid")]
	if !ok || m["channel_id"] != r.PathValue("cid") {
		apiErr(w, 404, 10008, "Unknown Message")
		return
	}
	if f.archived[r.PathValue("cid")] {
		apiErr(w, 400, 50083, "Thread is archived")
		return
	}
	for _, k := range []string{"content", "embeds", "components", "flags"} {
		if v, ok := patch[k]; ok {
			m[k] = v
		}
	}
	reply(w, 200, m)
}

// editChannel takes what the bot sends a thread: {"archived": false}.
func (f *fakeDiscord) editChannel(w http.ResponseWriter, r *http.Request) {
	patch, ok := readJSON(w, r)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cid := r.PathValue("cid")
	if !f.threads[cid] {
		apiErr(w, 404, 10003, "Unknown Channel")
		return
	}
	if a, ok := patch["archived"].(bool); ok {
		f.archived[cid] = a
	}
	reply(w, 200, map[string]any{"id": cid, "type": 11, "thread_metadata": map[string]any{"archived": f.archived[cid]}})
}

// archive archives a thread, as Discord does after a week without a message.
func (f *fakeDiscord) archive(thread string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.archived[thread] = true
}

func (f *fakeDiscord) startThread(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	defer f.mu.Unlock()
	mid, cid := r.PathValue("mid"), r.PathValue("cid")
	if m, ok := f.msgs[mid]; !ok || m["channel_id"] != cid {
		apiErr(w, 404, 10008, "Unknown Message")
		return
	}
	if f.threads[mid] {
		apiErr(w, 400, 160004, "A thread has already been created for this message")
		return
	}
	f.threads[mid] = true
	reply(w, 201, map[string]any{"id": mid, "type": 11, "guild_id": "900", "parent_id": cid, "name": body["name"]})
}

func (f *fakeDiscord) openDM(w http.ResponseWriter, r *http.Request) {
	var body struct {
		RecipientID string `json:"recipient_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.RecipientID == "" {
		apiErr(w, 400, 50035, "Invalid Form Body")
		return
	}
	reply(w, 200, map[string]any{"id": "77" + body.RecipientID, "type": 1,
		"recipients": []any{map[string]any{"id": body.RecipientID, "username": "user" + body.RecipientID}}})
}

func (f *fakeDiscord) putCommands(w http.ResponseWriter, r *http.Request) {
	var cmds []map[string]any
	if err := json.NewDecoder(r.Body).Decode(&cmds); err != nil {
		apiErr(w, 400, 50035, "Invalid Form Body")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range cmds {
		c["id"] = f.newID()
		c["application_id"] = r.PathValue("app")
		c["version"] = f.newID()
	}
	f.commands[r.PathValue("guild")] = cmds
	reply(w, 200, cmds)
}

func (f *fakeDiscord) followup(w http.ResponseWriter, r *http.Request) {
	m, ok := readJSON(w, r)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.HasPrefix(r.PathValue("token"), "expired") {
		apiErr(w, 404, 10015, "Unknown Webhook")
		return
	}
	id := f.newID()
	m["id"], m["webhook_id"] = id, r.PathValue("app")
	reply(w, 200, m)
}

// readJSON decodes a request's JSON object, or answers 400 as Discord does.
func readJSON(w http.ResponseWriter, r *http.Request) (map[string]any, bool) {
	var m map[string]any
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		apiErr(w, 400, 50109, "The request body contains invalid JSON.")
		return nil, false
	}
	return m, true
}
