package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

// Races: people and agents acting on one question at the same moment,
// across Slack, Discord, the console and the agent's own cancels, against
// the whole service. Each race ends in exactly one outcome, one resume,
// every loser told on the platform they used, and every card settled the
// same way.

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
	reply := func(rw http.ResponseWriter, status int, v any) {
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(status)
		_ = json.NewEncoder(rw).Encode(v)
	}
	smux := http.NewServeMux()
	smux.HandleFunc("/api/{method}", func(rw http.ResponseWriter, r *http.Request) {
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
		reply(rw, 200, resp)
	})
	smux.HandleFunc("/response/{id}", func(rw http.ResponseWriter, r *http.Request) {
		c := raceCall{Method: "response_url", Path: r.URL.Path}
		_ = json.NewDecoder(r.Body).Decode(&c.JSON)
		w.record(c)
		_, _ = io.WriteString(rw, "ok")
	})
	w.slack = httptest.NewServer(smux)
	t.Cleanup(w.slack.Close)

	dmux := http.NewServeMux()
	decode := func(r *http.Request) map[string]any {
		m := map[string]any{}
		_ = json.NewDecoder(r.Body).Decode(&m)
		return m
	}
	dmux.HandleFunc("POST /api/v10/channels/{cid}/messages", func(rw http.ResponseWriter, r *http.Request) {
		m := decode(r)
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
		m := decode(r)
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
			reply(rw, 404, map[string]any{"message": "Unknown Message", "code": 10008})
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write(out)
	})
	dmux.HandleFunc("GET /api/v10/channels/{cid}/messages", func(rw http.ResponseWriter, r *http.Request) {
		reply(rw, 200, []any{})
	})
	dmux.HandleFunc("POST /api/v10/channels/{cid}/messages/{mid}/threads", func(rw http.ResponseWriter, r *http.Request) {
		reply(rw, 201, map[string]any{"id": r.PathValue("mid"), "type": 11, "guild_id": "900", "parent_id": r.PathValue("cid")})
	})
	dmux.HandleFunc("POST /api/v10/users/@me/channels", func(rw http.ResponseWriter, r *http.Request) {
		m := decode(r)
		reply(rw, 200, map[string]any{"id": fmt.Sprint("77", m["recipient_id"]), "type": 1})
	})
	dmux.HandleFunc("PUT /api/v10/applications/{app}/commands", func(rw http.ResponseWriter, r *http.Request) {
		var cmds []map[string]any
		_ = json.NewDecoder(r.Body).Decode(&cmds)
		for i, c := range cmds {
			c["id"], c["application_id"], c["version"] = strconv.Itoa(900+i), r.PathValue("app"), "1"
		}
		reply(rw, 200, cmds)
	})
	dmux.HandleFunc("POST /api/v10/webhooks/{app}/{token}", func(rw http.ResponseWriter, r *http.Request) {
		m := decode(r)
		w.record(raceCall{Method: "discord.followup", Path: r.URL.Path, JSON: m})
		reply(rw, 200, map[string]any{"id": w.snowflake(), "channel_id": raceDiscordChan, "type": 0, "content": m["content"], "flags": m["flags"]})
	})
	w.discordToken, w.discordURL = discordAPI.add(t, dmux)
	return w
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

// race is one running service in a raceWorld.
type race struct {
	*raceWorld
	s      *service
	base   string
	ag     *agent.Client
	nc     *nats.Conn
	events *eventLog
	resume *resumeLog
}

func startRace(t *testing.T, extra ...func(*config.Config)) *race {
	w := newRaceWorld(t)
	s, _ := startTestService(t, func(c *config.Config) {
		w.configure(c)
		for _, set := range extra {
			set(c)
		}
	})
	r := &race{raceWorld: w, s: s, base: "http://" + s.Addr(), ag: agentFor(t, s)}
	nc, err := nats.Connect(s.natsURL(), s.nats.Admin())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	r.nc = nc
	r.events = &eventLog{}
	r.resume = &resumeLog{}
	rsub, err := nc.Subscribe(bridge.PrefixResume+".>", func(m *nats.Msg) {
		var res bridge.Resume
		if json.Unmarshal(m.Data, &res) == nil {
			r.resume.add(res)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rsub.Unsubscribe() })
	sub, err := nc.Subscribe(bridge.PrefixEvent+".>", func(m *nats.Msg) {
		var ev bridge.Event
		if json.Unmarshal(m.Data, &ev) == nil {
			r.events.add(ev)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return r
}

type resumeLog struct {
	mu  sync.Mutex
	out []bridge.Resume
}

func (l *resumeLog) add(res bridge.Resume) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.out = append(l.out, res)
}

// of lists the resumes of one question at one version.
func (l *resumeLog) of(job, question string, version int64) []bridge.Resume {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []bridge.Resume
	for _, res := range l.out {
		if res.JobID == job && res.QuestionID == question && res.TaskVersion == version {
			out = append(out, res)
		}
	}
	return out
}

type eventLog struct {
	mu  sync.Mutex
	evs []bridge.Event
}

func (l *eventLog) add(ev bridge.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, ev)
}

// of lists the events of one question (all versions), in order.
func (l *eventLog) of(job, question string) []bridge.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []bridge.Event
	for _, ev := range l.evs {
		if ev.JobID == job && ev.QuestionID == question {
			out = append(out, ev)
		}
	}
	return out
}

func raceQuestion(job, id string) *bridge.Question {
	return &bridge.Question{Tenant: "acme", JobID: job, QuestionID: id, TaskVersion: 1,
		Question: "Which colour should the report use?", Choices: []string{"red", "blue"}, Timeout: "4h",
		Route: &bridge.Route{Slack: &bridge.SlackRoute{Channel: raceSlackChan}, Discord: &bridge.DiscordRoute{ChannelID: raceDiscordChan}}}
}

// ask publishes q and waits for its cards on both platforms.
func (r *race) ask(q *bridge.Question) (slackTS, discordID string) {
	r.t.Helper()
	if err := r.ag.Publish(context.Background(), q); err != nil {
		r.t.Fatal(err)
	}
	return r.cards(q)
}

// cards waits for q's cards on both platforms.
func (r *race) cards(q *bridge.Question) (slackTS, discordID string) {
	r.t.Helper()
	block := fmt.Sprintf("ask.%s.%s.%s.%d", q.Tenant, q.JobID, q.QuestionID, q.TaskVersion)
	prefix := fmt.Sprintf("ab:c:%s:%s:%s:%d:", q.Tenant, q.JobID, q.QuestionID, q.TaskVersion)
	testenv.CheckFor(r.t, testenv.Patience, 20*time.Millisecond, func() error {
		slackTS, discordID = "", ""
		r.mu.Lock()
		for _, c := range r.calls {
			if c.Method == "chat.postMessage" && c.Form.Get("thread_ts") != "" && strings.Contains(c.Form.Get("blocks"), `"block_id":"`+block+`"`) {
				slackTS = c.TS
			}
		}
		for id, m := range r.dmsgs {
			if strings.Contains(fmt.Sprint(m["components"]), prefix) {
				discordID = id
			}
		}
		r.mu.Unlock()
		if slackTS == "" || discordID == "" {
			return fmt.Errorf("cards of %s: slack %q, discord %q", q.QuestionID, slackTS, discordID)
		}
		return nil
	})
	return slackTS, discordID
}

// signedSlack POSTs a signed Slack interaction payload; headers are added.
func (r *race) signedSlack(payload map[string]any, header map[string]string) (int, string) {
	raw, _ := json.Marshal(payload)
	body := "payload=" + url.QueryEscape(string(raw))
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	m := hmac.New(sha256.New, []byte(raceSlackSecret))
	fmt.Fprintf(m, "v0:%s:%s", ts, body)
	req, _ := http.NewRequest(http.MethodPost, r.base+"/slack/interactions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(m.Sum(nil)))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Errorf("slack interaction: %v", err)
		return 0, ""
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// slackClick is a block_actions payload: user clicks action on the card.
func (r *race) slackClick(user, trigger, cardTS, block, actionID, value string) map[string]any {
	return map[string]any{
		"type": "block_actions", "trigger_id": trigger, "response_url": r.slack.URL + "/response/" + trigger,
		"user":      map[string]any{"id": user, "username": strings.ToLower(user), "name": strings.ToLower(user), "team_id": "T1"},
		"team":      map[string]any{"id": "T1"},
		"container": map[string]any{"type": "message", "message_ts": cardTS, "channel_id": raceSlackChan},
		"channel":   map[string]any{"id": raceSlackChan},
		"message":   map[string]any{"ts": cardTS, "thread_ts": ""},
		"actions":   []any{map[string]any{"type": "button", "action_id": actionID, "block_id": block, "value": value, "action_ts": "1700000001.000001"}},
	}
}

// signedDiscord POSTs a signed Discord interaction and decodes the reply.
func (r *race) signedDiscord(in map[string]any) (int, map[string]any) {
	body, _ := json.Marshal(in)
	stamp := strconv.FormatInt(time.Now().Unix(), 10)
	req, _ := http.NewRequest(http.MethodPost, r.base+"/discord/interactions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Signature-Ed25519", hex.EncodeToString(ed25519.Sign(r.priv, append([]byte(stamp), body...))))
	req.Header.Set("X-Signature-Timestamp", stamp)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Errorf("discord interaction: %v", err)
		return 0, nil
	}
	defer resp.Body.Close()
	out := map[string]any{}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// discordInteraction is an interaction of kevin's in the guild.
func (r *race) discordInteraction(typ int, data map[string]any) map[string]any {
	id := r.snowflake()
	return map[string]any{"id": id, "application_id": raceApp, "type": typ, "token": "itoken-" + id, "version": 1,
		"guild_id": "900", "channel_id": raceDiscordChan,
		"member": map[string]any{"user": map[string]any{"id": raceKevinD, "username": "kevin"}, "roles": []string{}, "joined_at": "2026-01-01T00:00:00Z"},
		"data":   data}
}

func discordChoice(q *bridge.Question, i int) string {
	return fmt.Sprintf("ab:c:%s:%s:%s:%d:%d", q.Tenant, q.JobID, q.QuestionID, q.TaskVersion, i)
}

// told is what the service told a Slack clicker through a response_url.
func (r *race) told(trigger string) []string {
	var out []string
	for _, c := range r.Calls("response_url") {
		if strings.HasSuffix(c.Path, "/"+trigger) {
			s, _ := c.JSON["text"].(string)
			out = append(out, s)
		}
	}
	return out
}

// followups are the follow-up texts of one Discord interaction.
func (r *race) followups(interactionID string) []string {
	var out []string
	for _, c := range r.Calls("discord.followup") {
		if strings.HasSuffix(c.Path, "/itoken-"+interactionID) {
			s, _ := c.JSON["content"].(string)
			out = append(out, s)
		}
	}
	return out
}

// slackSettled waits for the Slack card at ts to be rewritten without
// controls, with an outcome line starting with want.
func (r *race) slackSettled(ts, want string) {
	r.t.Helper()
	testenv.CheckFor(r.t, testenv.Patience, 20*time.Millisecond, func() error {
		var seen []string
		for _, c := range r.Calls("chat.update") {
			if c.Form.Get("ts") != ts {
				continue
			}
			blocks := c.Form.Get("blocks")
			seen = append(seen, blocks)
			if strings.Contains(blocks, `"type":"actions"`) {
				continue
			}
			if strings.Contains(blocks, want) {
				return nil
			}
		}
		return fmt.Errorf("slack card %s not settled with %q; updates: %q", ts, want, seen)
	})
}

// discordSettled waits for the Discord card to be edited without
// components, its embed saying want.
func (r *race) discordSettled(id, want string) {
	r.t.Helper()
	testenv.CheckFor(r.t, testenv.Patience, 20*time.Millisecond, func() error {
		var seen []string
		for _, c := range r.Calls("discord.edit") {
			if !strings.HasSuffix(c.Path, "/"+id) {
				continue
			}
			s, _ := json.Marshal(c.JSON)
			seen = append(seen, string(s))
			if comps, _ := c.JSON["components"].([]any); len(comps) != 0 {
				continue
			}
			if strings.Contains(string(s), want) {
				return nil
			}
		}
		return fmt.Errorf("discord card %s not settled with %q; edits: %q", id, want, seen)
	})
}

// outcome waits for the outcome the agent reads for q, and checks the
// job's resume subject holds exactly one resume for it (tests use one
// question per job, or count the versions they expect).
func (r *race) outcome(q *bridge.Question, resumes uint64) *bridge.Resume {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := r.ag.Await(ctx, q.Tenant, q.JobID, q.QuestionID)
	if err != nil {
		r.t.Fatalf("await %s: %v", q.QuestionID, err)
	}
	if n := testenv.StreamCount(r.t, r.s.nats, "ASK_RESUMES", bridge.ResumeSubject(q.Tenant, q.JobID)); n != resumes {
		r.t.Errorf("job %s has %d resumes, want %d", q.JobID, n, resumes)
	}
	return out
}

// all runs fs at the same moment and waits for them.
func all(fs ...func()) {
	var start, done sync.WaitGroup
	start.Add(1)
	for _, f := range fs {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			f()
		}()
	}
	start.Done()
	done.Wait()
}

// loser checks the one refusal a person who lost a race was told, on
// their platform, in the runtime's words.
func loserText(t *testing.T, got []string, wantPrefix string) {
	t.Helper()
	if len(got) != 1 || !strings.HasPrefix(got[0], wantPrefix) {
		t.Errorf("the loser was told %q, want one text starting %q", got, wantPrefix)
	}
}

func TestRaceTwoSlackClicksAtOnce(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	q := raceQuestion("job-r1", "q-1")
	ts, did := r.ask(q)
	block := "ask.acme.job-r1.q-1.1"
	all(
		func() { r.signedSlack(r.slackClick("U0KEV", "trig-kev", ts, block, "choice.0", "red"), nil) },
		func() { r.signedSlack(r.slackClick("U0ANA", "trig-ana", ts, block, "choice.1", "blue"), nil) },
	)
	out := r.outcome(q, 1)
	if out.Outcome != bridge.OutcomeAnswered {
		t.Fatalf("outcome %+v", out)
	}
	winner, loserTrig, want := "u0kev", "trig-ana", "red"
	if out.By == "slack:U0ANA" {
		winner, loserTrig, want = "u0ana", "trig-kev", "blue"
	}
	if out.Text != "The answer: "+want {
		t.Fatalf("resume text %q for %s", out.Text, out.By)
	}
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		if len(r.told(loserTrig)) == 0 {
			return fmt.Errorf("the loser was told nothing")
		}
		return nil
	})
	loserText(t, r.told(loserTrig), "This question was already answered by "+out.By+" ("+winner+") at ")
	r.slackSettled(ts, "Answered by @"+winner+": "+want)
	r.discordSettled(did, want)
	evs := r.events.of("job-r1", "q-1")
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		evs = r.events.of("job-r1", "q-1")
		if types := eventTypes(evs); types != "asked,answered,refused" && types != "asked,refused,answered" {
			return fmt.Errorf("events %s", types)
		}
		return nil
	})
	if winnerTold := r.told(map[string]string{"trig-kev": "trig-ana", "trig-ana": "trig-kev"}[loserTrig]); len(winnerTold) != 0 {
		t.Errorf("the winner was told %q", winnerTold)
	}
}

func eventTypes(evs []bridge.Event) string {
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	return strings.Join(types, ",")
}

func TestRaceSlackAndDiscordAtOnce(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	q := raceQuestion("job-r2", "q-1")
	ts, did := r.ask(q)
	in := r.discordInteraction(3, map[string]any{"custom_id": discordChoice(q, 1), "component_type": 2})
	var dresp map[string]any
	all(
		func() {
			r.signedSlack(r.slackClick("U0ANA", "trig-ana", ts, "ask.acme.job-r2.q-1.1", "choice.0", "red"), nil)
		},
		func() { _, dresp = r.signedDiscord(in) },
	)
	if dresp["type"] != float64(6) {
		t.Errorf("discord click answered %v, want a deferred update", dresp)
	}
	out := r.outcome(q, 1)
	if out.Outcome != bridge.OutcomeAnswered {
		t.Fatalf("outcome %+v", out)
	}
	did2 := in["id"].(string)
	switch out.By {
	case "slack:U0ANA":
		if out.Text != "The answer: red" || out.Via != "slack" {
			t.Fatalf("resume %+v", out)
		}
		testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
			if len(r.followups(did2)) == 0 {
				return fmt.Errorf("discord loser told nothing")
			}
			return nil
		})
		loserText(t, r.followups(did2), "This question was already answered by slack:U0ANA (u0ana) at ")
		if n := len(r.told("trig-ana")); n != 0 {
			t.Errorf("the Slack winner was told %q", r.told("trig-ana"))
		}
		r.slackSettled(ts, "Answered by @u0ana: red")
		r.discordSettled(did, "red")
	case "discord:" + raceKevinD:
		if out.Text != "The answer: blue" || out.Via != "discord" {
			t.Fatalf("resume %+v", out)
		}
		testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
			if len(r.told("trig-ana")) == 0 {
				return fmt.Errorf("slack loser told nothing")
			}
			return nil
		})
		loserText(t, r.told("trig-ana"), "This question was already answered by discord:"+raceKevinD+" (kevin) at ")
		if n := len(r.followups(did2)); n != 0 {
			t.Errorf("the Discord winner was told %q", r.followups(did2))
		}
		r.slackSettled(ts, "Answered by @kevin: blue")
		r.discordSettled(did, "blue")
	default:
		t.Fatalf("answered by %s", out.By)
	}
	// The events stream holds one outcome and one refusal, to the loser.
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		evs := r.events.of("job-r2", "q-1")
		if types := eventTypes(evs); types != "asked,answered,refused" && types != "asked,refused,answered" {
			return fmt.Errorf("events %s", types)
		}
		for _, ev := range evs {
			if ev.Type == bridge.EventRefused && (ev.To == out.By || ev.Reason != bridge.RefusedNotPending) {
				return fmt.Errorf("refusal %+v", ev)
			}
		}
		return nil
	})
}

// resumedOnce waits for the one resume of q at version and returns it.
func (r *race) resumedOnce(q *bridge.Question, version int64) bridge.Resume {
	r.t.Helper()
	var got []bridge.Resume
	testenv.CheckFor(r.t, testenv.Patience, 20*time.Millisecond, func() error {
		if got = r.resume.of(q.JobID, q.QuestionID, version); len(got) == 0 {
			return fmt.Errorf("no resume of %s v%d", q.QuestionID, version)
		}
		return nil
	})
	// The outbox publishes in order: a later row seen means any duplicate
	// of this one would have been seen before it. Flush and look again.
	if err := r.nc.Flush(); err != nil {
		r.t.Fatal(err)
	}
	if got = r.resume.of(q.JobID, q.QuestionID, version); len(got) != 1 {
		r.t.Errorf("%d resumes of %s v%d: %+v", len(got), q.QuestionID, version, got)
	}
	return got[0]
}

// waitTold waits for the Slack clicker of trigger to be told something.
func (r *race) waitTold(trigger string) []string {
	r.t.Helper()
	testenv.CheckFor(r.t, testenv.Patience, 20*time.Millisecond, func() error {
		if len(r.told(trigger)) == 0 {
			return fmt.Errorf("the clicker of %s was told nothing", trigger)
		}
		return nil
	})
	return r.told(trigger)
}

// TestRaceAnswerAndCancel: a click and the agent's cancel at once. One of
// them ends the question; the cards say which; a refused click is told it
// was cancelled.
func TestRaceAnswerAndCancel(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	for i := range 3 {
		job := fmt.Sprintf("job-rc%d", i)
		q := raceQuestion(job, "q-1")
		ts, did := r.ask(q)
		trig := "trig-c" + strconv.Itoa(i)
		all(
			func() {
				r.signedSlack(r.slackClick("U0ANA", trig, ts, "ask.acme."+job+".q-1.1", "choice.1", "blue"), nil)
			},
			func() {
				c := bridge.Cancel{Tenant: "acme", JobID: job, Reason: "the customer called back"}
				if err := bridge.Publish(context.Background(), r.s.nats.JS, bridge.CancelSubject("acme", job), "cancel-"+job, c); err != nil {
					t.Error(err)
				}
			},
		)
		res := r.resumedOnce(q, 1)
		switch res.Outcome {
		case bridge.OutcomeAnswered:
			if res.Text != "The answer: blue" || res.By != "slack:U0ANA" {
				t.Fatalf("resume %+v", res)
			}
			r.slackSettled(ts, "Answered by @u0ana: blue")
			r.discordSettled(did, "Answered by")
		case bridge.OutcomeCanceled:
			loserText(t, r.waitTold(trig), "This question was cancelled at ")
			r.slackSettled(ts, "Cancelled")
			r.discordSettled(did, "Cancelled")
		default:
			t.Fatalf("resume %+v", res)
		}
		t.Logf("race %d: %s", i, res.Outcome)
	}
}

// TestRaceAnswerAndTimeout: clicks on Slack and Discord at the question's
// deadline, and just after it.
func TestRaceAnswerAndTimeout(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	for i, after := range []time.Duration{-400 * time.Millisecond, 0, 300 * time.Millisecond} {
		job := fmt.Sprintf("job-rt%d", i)
		q := raceQuestion(job, "q-1")
		q.Timeout = "2s"
		// The default ladder's rounds, at a quarter, half and three
		// quarters of two seconds, each re-surface the question in its
		// Slack thread; paced at Slack's one message a second per
		// channel they hold the next job's card past this one's timeout.
		// The race here is the answer's and the timeout's alone.
		q.Escalation, q.EscalationReason = &bridge.Escalation{Off: true}, "a two-second question needs no reminders"
		ts, did := r.ask(q)
		var deadline time.Time
		testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
			for _, ev := range r.events.of(q.JobID, q.QuestionID) {
				if ev.Type == bridge.EventAsked {
					deadline = ev.Deadline
					return nil
				}
			}
			return fmt.Errorf("no asked event")
		})
		time.Sleep(time.Until(deadline.Add(after))) // the race is at the deadline
		in := r.discordInteraction(3, map[string]any{"custom_id": discordChoice(q, 0), "component_type": 2})
		trig := "trig-t" + strconv.Itoa(i)
		var sent [2]time.Time // when each click's request was answered: its attempt published
		all(
			func() {
				r.signedSlack(r.slackClick("U0ANA", trig, ts, "ask.acme."+job+".q-1.1", "choice.1", "blue"), nil)
				sent[0] = time.Now()
			},
			func() { r.signedDiscord(in); sent[1] = time.Now() },
		)
		res := r.resumedOnce(q, 1)
		id := in["id"].(string)
		if early := sent[0].Before(deadline) || sent[1].Before(deadline); early && res.Outcome != bridge.OutcomeAnswered {
			t.Errorf("an answer published before the deadline lost to the timeout: %+v", res)
		}
		switch res.Outcome {
		case bridge.OutcomeTimedOut:
			if res.Text != "Nobody answered within 0:00:02." {
				t.Errorf("resume %+v", res)
			}
			loserText(t, r.waitTold(trig), "This question timed out at ")
			testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
				if len(r.followups(id)) == 0 {
					return fmt.Errorf("discord clicker told nothing")
				}
				return nil
			})
			loserText(t, r.followups(id), "This question timed out at ")
			r.slackSettled(ts, "Nobody answered within 0:00:02")
			r.discordSettled(did, "Nobody answered within 0:00:02")
		case bridge.OutcomeAnswered:
			// The loser of the two clicks is told who answered.
			if res.By == "slack:U0ANA" {
				testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
					if len(r.followups(id)) == 0 {
						return fmt.Errorf("discord loser told nothing")
					}
					return nil
				})
				loserText(t, r.followups(id), "This question was already answered by slack:U0ANA (u0ana) at ")
			} else {
				loserText(t, r.waitTold(trig), "This question was already answered by discord:"+raceKevinD+" (kevin) at ")
			}
			r.slackSettled(ts, "Answered by")
			r.discordSettled(did, "Answered by")
		default:
			t.Fatalf("resume %+v", res)
		}
		t.Logf("%v after the deadline: %s by %s", after, res.Outcome, res.By)
	}
}

// TestRaceAnswerAndReask: a click on the version 1 card while the agent
// asks the same question at version 2.
func TestRaceAnswerAndReask(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	q := raceQuestion("job-rv", "q-1")
	ts, did := r.ask(q)
	q2 := raceQuestion("job-rv", "q-1")
	q2.TaskVersion = 2
	q2.Question = "Which colour should the new report use?"
	all(
		func() {
			r.signedSlack(r.slackClick("U0ANA", "trig-v", ts, "ask.acme.job-rv.q-1.1", "choice.1", "blue"), nil)
		},
		func() {
			if err := r.ag.Publish(context.Background(), q2); err != nil {
				t.Error(err)
			}
		},
	)
	res := r.resumedOnce(q, 1)
	switch res.Outcome {
	case bridge.OutcomeCanceled:
		if res.Text != "The question was superseded by task version 2." {
			t.Errorf("resume %+v", res)
		}
		loserText(t, r.waitTold("trig-v"), "This answer is stale: the question belongs to task version 1, which a newer version of the task replaced at ")
		r.slackSettled(ts, "Superseded by task version 2")
		r.discordSettled(did, "Superseded by task version 2")
	case bridge.OutcomeAnswered:
		r.slackSettled(ts, "Answered by @u0ana: blue")
		r.discordSettled(did, "Answered by")
	default:
		t.Fatalf("resume %+v", res)
	}
	// Version 2 waits with its own cards either way, and takes an answer.
	ts2, did2 := r.cards(q2)
	if ts2 == ts || did2 == did {
		t.Fatalf("version 2 shown on version 1's cards")
	}
	in := r.discordInteraction(3, map[string]any{"custom_id": discordChoice(q2, 0), "component_type": 2})
	r.signedDiscord(in)
	if res2 := r.resumedOnce(q2, 2); res2.Outcome != bridge.OutcomeAnswered || res2.Text != "The answer: red" {
		t.Fatalf("version 2 resume %+v", res2)
	}
	r.slackSettled(ts2, "Answered by @kevin: red")
	r.discordSettled(did2, "Answered by")
	t.Logf("version 1: %s", res.Outcome)
}

// slackSubmit is a view_submission of the modal opened by views.open call
// opened, with a reason typed in.
func (r *race) slackSubmit(user string, opened raceCall, viewID, hash, reason string) map[string]any {
	view, _ := opened.JSON["view"].(map[string]any)
	v := map[string]any{}
	for k, x := range view {
		v[k] = x
	}
	v["id"], v["hash"], v["team_id"] = viewID, hash, "T1"
	v["state"] = map[string]any{"values": map[string]any{"reason": map[string]any{"v": map[string]any{"type": "plain_text_input", "value": reason}}}}
	return map[string]any{"type": "view_submission", "user": map[string]any{"id": user, "username": strings.ToLower(user), "name": strings.ToLower(user), "team_id": "T1"},
		"team": map[string]any{"id": "T1"}, "view": v}
}

// consoleForm opens the console page of q for identity and returns the
// page's URL and the decline form's hidden inputs.
func (r *race) consoleForm(identity string, q *bridge.Question) (string, url.Values) {
	r.t.Helper()
	signer := console.Signer{PublicURL: "http://askbridge.test", Secret: []byte(raceConsoleKey)}
	link := strings.TrimPrefix(signer.QuestionURL(identity, q.Tenant, q.JobID, q.QuestionID, time.Hour), "http://askbridge.test")
	resp, err := http.Get(r.base + link)
	if err != nil {
		r.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		r.t.Fatalf("console page: %d %s", resp.StatusCode, body)
	}
	form := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)"`).FindAllStringSubmatch(string(body), -1) {
		if form.Get(m[1]) == "" {
			form.Set(m[1], m[2])
		}
	}
	if form.Get("nonce") == "" || form.Get("csrf") == "" {
		r.t.Fatalf("no form on the console page: %s", body)
	}
	return link, form
}

// TestRaceFormsAfterAButtonAnswer: forms opened while the question waited
// (Slack's decline modal, Discord's decline modal, the console's page),
// submitted after someone answered with a button. None of them answers;
// each person is told who answered, where they are.
func TestRaceFormsAfterAButtonAnswer(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	q := raceQuestion("job-rf", "q-1")
	ts, did := r.ask(q)
	block := "ask.acme.job-rf.q-1.1"

	// Three people open their forms.
	r.signedSlack(r.slackClick("U0ANA", "trig-open", ts, block, "decline", "decline"), nil)
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		if len(r.Calls("views.open")) == 0 {
			return fmt.Errorf("no modal opened")
		}
		return nil
	})
	opened := r.Calls("views.open")[0]
	open := r.discordInteraction(3, map[string]any{"custom_id": "ab:d:acme:job-rf:q-1:1", "component_type": 2})
	_, modal := r.signedDiscord(open)
	if modal["type"] != float64(9) {
		t.Fatalf("discord decline: %v, want a modal", modal)
	}
	modalID, _ := modal["data"].(map[string]any)["custom_id"].(string)
	link, form := r.consoleForm("console:alice", q)

	// Kevin answers with a button on Discord.
	r.signedDiscord(r.discordInteraction(3, map[string]any{"custom_id": discordChoice(q, 1), "component_type": 2}))
	res := r.resumedOnce(q, 1)
	if res.Outcome != bridge.OutcomeAnswered || res.By != "discord:"+raceKevinD {
		t.Fatalf("resume %+v", res)
	}
	answeredBy := "This question was already answered by discord:" + raceKevinD + " (kevin) at "

	// Ana submits her Slack decline form.
	status, body := r.signedSlack(r.slackSubmit("U0ANA", opened, "V1", "h1", "ask someone else"), nil)
	var inline struct {
		ResponseAction string            `json:"response_action"`
		Errors         map[string]string `json:"errors"`
	}
	_ = json.Unmarshal([]byte(body), &inline)
	if status != http.StatusOK {
		t.Fatalf("slack submission: %d %s", status, body)
	}
	switch {
	case inline.ResponseAction == "errors":
		if got := inline.Errors["reason"]; !strings.HasPrefix(got, answeredBy) {
			t.Errorf("the Slack form says %q, want who answered (%q...)", got, answeredBy)
		}
	default:
		// Closed: the refusal comes as an ephemeral message in the thread.
		testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
			for _, c := range r.Calls("chat.postEphemeral") {
				if c.Form.Get("user") == "U0ANA" && strings.HasPrefix(c.Form.Get("text"), answeredBy) {
					return nil
				}
			}
			return fmt.Errorf("ana was not told who answered: %v", r.Calls("chat.postEphemeral"))
		})
	}

	// Kevin submits a Discord decline form opened from another card.
	sub := r.discordInteraction(5, map[string]any{"custom_id": modalID, "components": []any{
		map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": "reason", "value": "not mine"}}}}})
	_, dresp := r.signedDiscord(sub)
	if dresp["type"] == float64(4) {
		content, _ := dresp["data"].(map[string]any)["content"].(string)
		if !strings.HasPrefix(content, answeredBy) {
			t.Errorf("the Discord form says %q, want who answered", content)
		}
	} else {
		testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
			if len(r.followups(sub["id"].(string))) == 0 {
				return fmt.Errorf("discord form submitter told nothing (response %v)", dresp)
			}
			return nil
		})
		loserText(t, r.followups(sub["id"].(string)), answeredBy)
	}

	// Alice posts the console form.
	form.Set("action", "decline")
	form.Set("comment", "ask Ana")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(r.base+link, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("console post: %d", resp.StatusCode)
	}
	page, err := http.Get(r.base + resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if !strings.Contains(string(pb), `<h2 id="outcome-h">Answered</h2>`) || strings.Contains(string(pb), `name="nonce"`) {
		t.Errorf("the console page after the post does not show the answer, or still offers a form: %s", pb)
	}
	// And it says the decline was not taken, and why, as a refusal.
	if !regexp.MustCompile(`id="refusal"><p>` + regexp.QuoteMeta(answeredBy) + `<time datetime="\S+Z">[^<]+</time>\.</p>`).Match(pb) {
		t.Errorf("the console page does not say the decline was refused because kevin answered: %s", pb)
	}

	// One outcome: no other resume, every card settled as answered.
	if got := r.resume.of(q.JobID, q.QuestionID, 1); len(got) != 1 {
		t.Errorf("%d resumes", len(got))
	}
	r.slackSettled(ts, "Answered by @kevin: blue")
	r.discordSettled(did, "Answered by")
	for _, ev := range r.events.of(q.JobID, q.QuestionID) {
		if ev.Type == bridge.EventDeclined {
			t.Errorf("a decline was taken after the answer: %+v", ev)
		}
	}
}

// TestRaceSameInteractionTwice: Slack retries a click (the same payload,
// X-Slack-Retry-Num) while the first delivery is still being handled, and
// Discord's interaction of one id arrives twice at once. Each is one
// attempt: one resume, nobody told that they were beaten by themselves.
func TestRaceSameInteractionTwice(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	q := raceQuestion("job-rs", "q-1")
	ts, did := r.ask(q)
	click := r.slackClick("U0ANA", "trig-retry", ts, "ask.acme.job-rs.q-1.1", "choice.1", "blue")
	var codes [3]int
	all(
		func() { codes[0], _ = r.signedSlack(click, nil) },
		func() {
			codes[1], _ = r.signedSlack(click, map[string]string{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
		},
		func() {
			codes[2], _ = r.signedSlack(click, map[string]string{"X-Slack-Retry-Num": "2", "X-Slack-Retry-Reason": "http_timeout"})
		},
	)
	if codes != [3]int{200, 200, 200} {
		t.Errorf("slack deliveries answered %v", codes)
	}
	res := r.resumedOnce(q, 1)
	if res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: blue" || res.By != "slack:U0ANA" {
		t.Fatalf("resume %+v", res)
	}
	r.slackSettled(ts, "Answered by @u0ana: blue")
	r.discordSettled(did, "Answered by")

	q2 := raceQuestion("job-rs", "q-2")
	ts2, did2 := r.ask(q2)
	in := r.discordInteraction(3, map[string]any{"custom_id": discordChoice(q2, 0), "component_type": 2})
	var resps [2]map[string]any
	all(
		func() { _, resps[0] = r.signedDiscord(in) },
		func() { _, resps[1] = r.signedDiscord(in) },
	)
	// An interaction is marked handled once handled (a retry of one cut
	// off midway must publish its attempt): a copy that arrives meanwhile
	// is handled too, and publishes the same attempt, which JetStream
	// keeps once; one that arrives after is told it was handled.
	deferred := 0
	for _, resp := range resps {
		data, _ := resp["data"].(map[string]any)
		switch {
		case resp["type"] == float64(6):
			deferred++
		case resp["type"] != float64(4) || !strings.Contains(fmt.Sprint(data["content"]), "already handled"):
			t.Errorf("discord response %v, want a deferred update or 'already handled'", resp)
		}
	}
	if deferred == 0 {
		t.Errorf("discord responses %v, want a deferred update", resps)
	}
	res2 := r.resumedOnce(q2, 1)
	if res2.Outcome != bridge.OutcomeAnswered || res2.Text != "The answer: red" || res2.By != "discord:"+raceKevinD {
		t.Fatalf("resume %+v", res2)
	}
	r.slackSettled(ts2, "Answered by @kevin: red")
	r.discordSettled(did2, "Answered by")

	// Nobody was told anything: no refusal, no "already answered" to
	// themselves, on either platform.
	for _, ev := range append(r.events.of("job-rs", "q-1"), r.events.of("job-rs", "q-2")...) {
		if ev.Type == bridge.EventRefused {
			t.Errorf("refused: %+v", ev)
		}
	}
	if got := r.told("trig-retry"); len(got) != 0 {
		t.Errorf("the Slack clicker was told %q", got)
	}
	if got := r.followups(in["id"].(string)); len(got) != 0 {
		t.Errorf("the Discord clicker was told %q", got)
	}
}

// TestRaceCLIAndSlackAtOnce: `askbridge answer` and a Slack click at
// once. The CLI's exit code and text say whether it won; the Slack loser
// is told privately.
func TestRaceCLIAndSlackAtOnce(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	q := raceQuestion("job-rcli", "q-1")
	ts, did := r.ask(q)
	kevin, out, errOut := testCLI(r.s, "cli:kevin")
	var code int
	all(
		func() { code = kevin.answer(context.Background(), []string{"job-rcli", "q-1", "red"}) },
		func() {
			r.signedSlack(r.slackClick("U0ANA", "trig-cli", ts, "ask.acme.job-rcli.q-1.1", "choice.1", "blue"), nil)
		},
	)
	res := r.resumedOnce(q, 1)
	switch res.By {
	case "cli:kevin":
		if code != exitOK || out.String() != "Answered: The answer: red\n" || res.Text != "The answer: red" {
			t.Errorf("cli won: exit %d, %q %q; resume %+v", code, out, errOut, res)
		}
		loserText(t, r.waitTold("trig-cli"), "This question was already answered by cli:kevin at ")
		r.slackSettled(ts, "Answered by")
		r.discordSettled(did, "red")
	case "slack:U0ANA":
		if code != exitError || !regexp.MustCompile(`^askbridge: refused: This question was already answered by slack:U0ANA \(u0ana\) at \S+Z\.\n$`).MatchString(errOut.String()) {
			t.Errorf("cli lost: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if got := r.told("trig-cli"); len(got) != 0 {
			t.Errorf("the Slack winner was told %q", got)
		}
		r.slackSettled(ts, "Answered by @u0ana: blue")
		r.discordSettled(did, "blue")
	default:
		t.Fatalf("resume %+v", res)
	}
	t.Logf("won by %s", res.By)
}

// slackCommand POSTs a signed /ask command of user's.
func (r *race) slackCommand(user, text, trigger string) (int, string) {
	form := url.Values{"command": {"/ask"}, "text": {text}, "user_id": {user}, "user_name": {strings.ToLower(user)},
		"channel_id": {raceSlackChan}, "team_id": {"T1"}, "trigger_id": {trigger},
		"response_url": {r.slack.URL + "/response/" + trigger}}
	body := form.Encode()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	m := hmac.New(sha256.New, []byte(raceSlackSecret))
	fmt.Fprintf(m, "v0:%s:%s", ts, body)
	req, _ := http.NewRequest(http.MethodPost, r.base+"/slack/commands", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(m.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Errorf("slack command: %v", err)
		return 0, ""
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// TestRacePersonsCancelAndAnswer: an admin's /ask cancel on Slack and a
// click on Discord at once. Whoever lost is told, where they acted.
func TestRacePersonsCancelAndAnswer(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	for i := range 3 {
		job := fmt.Sprintf("job-rpc%d", i)
		q := raceQuestion(job, "q-1")
		ts, did := r.ask(q)
		in := r.discordInteraction(3, map[string]any{"custom_id": discordChoice(q, 1), "component_type": 2})
		trig := "trig-pc" + strconv.Itoa(i)
		var reply string
		all(
			func() { _, reply = r.slackCommand("U0ADM", "cancel "+job+"/q-1", trig) },
			func() { r.signedDiscord(in) },
		)
		res := r.resumedOnce(q, 1)
		switch res.Outcome {
		case bridge.OutcomeCanceled:
			testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
				if len(r.followups(in["id"].(string))) == 0 {
					return fmt.Errorf("discord loser told nothing")
				}
				return nil
			})
			loserText(t, r.followups(in["id"].(string)), "This question was cancelled at ")
			r.slackSettled(ts, "Cancelled")
			r.discordSettled(did, "Cancelled")
		case bridge.OutcomeAnswered:
			if strings.Contains(reply, "no longer waits (answered)") {
				break // the command saw it answered before sending anything
			}
			loserText(t, r.waitTold(trig), "Nothing was cancelled: this question was already answered by discord:"+raceKevinD+" (kevin) at ")
			r.slackSettled(ts, "Answered by @kevin: blue")
			r.discordSettled(did, "blue")
		default:
			t.Fatalf("resume %+v", res)
		}
		t.Logf("race %d: %s (command reply %s)", i, res.Outcome, reply)
	}
}
