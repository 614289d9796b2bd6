package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

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
	testenv.CheckFor(r.t, testenv.Patience, 20*time.Millisecond, func() error {
		var err error
		slackTS, discordID, err = r.shown(q)
		return err
	})
	return slackTS, discordID
}

// shown is q's cards on both platforms, or an error naming the one missing.
func (r *race) shown(q *bridge.Question) (slackTS, discordID string, err error) {
	block := fmt.Sprintf("ask.%s.%s.%s.%d", q.Tenant, q.JobID, q.QuestionID, q.TaskVersion)
	prefix := fmt.Sprintf("ab:c:%s:%s:%s:%d:", q.Tenant, q.JobID, q.QuestionID, q.TaskVersion)
	r.mu.Lock()
	defer r.mu.Unlock()
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
	if slackTS == "" || discordID == "" {
		return "", "", fmt.Errorf("cards of %s: slack %q, discord %q", q.QuestionID, slackTS, discordID)
	}
	return slackTS, discordID, nil
}

// askShortly asks a question of job with a timeout of two seconds and no
// reminders, and waits for its cards. A question that times out before
// both its cards are shown (a loaded machine) is asked again, in a job of
// its own, with twice the timeout, up to half a minute: a race at the
// deadline needs cards to click.
func (r *race) askShortly(job string) (q *bridge.Question, timeout time.Duration, slackTS, discordID string) {
	r.t.Helper()
	for timeout = 2 * time.Second; ; timeout *= 2 {
		q = raceQuestion(fmt.Sprintf("%s-%ds", job, timeout/time.Second), "q-1")
		q.Timeout = timeout.String()
		// The default ladder's rounds, at a quarter, half and three
		// quarters of the timeout, each re-surface the question in its
		// Slack thread; paced at Slack's one message a second per
		// channel they hold the next job's card past this one's timeout.
		q.Escalation, q.EscalationReason = &bridge.Escalation{Off: true}, "a question of seconds needs no reminders"
		if err := r.ag.Publish(context.Background(), q); err != nil {
			r.t.Fatal(err)
		}
		var shownErr error
		testenv.CheckFor(r.t, testenv.Patience, 20*time.Millisecond, func() error {
			if slackTS, discordID, shownErr = r.shown(q); shownErr == nil || r.ended(q) {
				return nil
			}
			return shownErr
		})
		if shownErr == nil {
			return q, timeout, slackTS, discordID
		}
		if timeout >= 30*time.Second {
			r.t.Fatalf("%s timed out after %v before its cards were shown: %v", q.JobID, timeout, shownErr)
		}
		r.t.Logf("%s timed out after %v before its cards were shown (%v); asking again with twice the timeout", q.JobID, timeout, shownErr)
	}
}

// ended says whether an event ended q.
func (r *race) ended(q *bridge.Question) bool {
	for _, ev := range r.events.of(q.JobID, q.QuestionID) {
		switch ev.Type {
		case bridge.EventAnswered, bridge.EventDeclined, bridge.EventTimedOut, bridge.EventCancelled, bridge.EventSuperseded, bridge.EventDeliveryFailed:
			return true
		}
	}
	return false
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

// openDiscordModal sends kevin's click on a card's form button (its
// component data) until Discord is answered with the form, and returns
// that answer. Told to try again (see openSlackModal), he clicks again.
func (r *race) openDiscordModal(data map[string]any) map[string]any {
	r.t.Helper()
	for range 5 {
		_, reply := r.signedDiscord(r.discordInteraction(3, data))
		if reply["type"] == float64(9) {
			return reply
		}
		told, _ := reply["data"].(map[string]any)
		if told["content"] != formTryAgain {
			r.t.Fatalf("discord form button: %v, want a modal", reply)
		}
	}
	r.t.Fatalf("kevin was told to try again five times: the Discord form never opened")
	return nil
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
