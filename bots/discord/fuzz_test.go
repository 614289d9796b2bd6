package discord

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

var fzActions = []string{actChoice, actSelect, actAnswer, actDecline, actApprove, actDeny, actConsole, actModalAnswer, actModalReason, actModalDeny}

// FuzzCustomID: parsing never panics; a parsed custom_id is canonical (the
// encoder makes exactly it again); and every id the encoder makes for valid
// parts fits Discord's 100 characters and parses back to those parts.
func FuzzCustomID(f *testing.F) {
	long := strings.Repeat("x", 64)
	for _, s := range []string{
		customID(actChoice, "acme", "job-1", "q-1", 3, 1), customID(actSelect, "acme", "job-1", "q-1", 3, 0),
		customID(actModalReason, "acme", "job-1", "q_1", 42, 0), customID(actChoice, long, long, long, 1<<40, 24),
		customID(actChoice, "acme", "job-1", "q-1", 1733011200000000000, 1), customID(actChoice, long, long, long, 1<<62, 24),
		customID(actModalDeny, "acme", "job-1", "ap-1", 1, 0), customID(actModalDeny, long, long, long, 7, 0), "ab:mn:acme:job-1:ap-1:1:0",
		"", "ab", "ab:c", "ab:zz:acme:job:q:1", "ab:c:acme:job:q:1", "ab:a:acme:job:q:1:0", "ab:c:acme:job:q:1:25",
		"ab:a:acme:job:q:01", "ab:a:acme:job:q:99999999999999999", "ab:a:acme:job:q:9007199254740993", "ab:a::job:q:1",
		"ab#:a:short:1", "ab#:a:AAAAAAAAAAAAAAAAAAAA:1", "xx:a:acme:job:q:1", "ab:a:acme:job:q:1:", "ab:c:acme:job-1:q-1:3:٣",
	} {
		f.Add(s, uint8(0), "acme", "job-1", "q-1", int64(3), uint8(1))
	}
	f.Fuzz(func(t *testing.T, s string, act uint8, tenant, job, question string, version int64, index uint8) {
		a, err := parseCustomID(s)
		if err == nil {
			tail := strconv.FormatInt(a.TaskVersion, 10)
			if takesIndex(a.Act) {
				tail += ":" + strconv.Itoa(a.Index)
			}
			var again string
			if a.Key == "" {
				again = customID(a.Act, a.Tenant, a.JobID, a.QuestionID, a.TaskVersion, a.Index)
				if !bridge.ValidToken(a.Tenant) || !bridge.ValidToken(a.JobID) || !bridge.ValidToken(a.QuestionID) {
					t.Fatalf("%q parsed with invalid tokens: %+v", s, a)
				}
			} else {
				again = strings.Join([]string{keyedPrefix, a.Act, a.Key, tail}, ":")
			}
			if again != s || a.TaskVersion < 0 || a.Index < 0 || a.Index >= maxChoices {
				t.Fatalf("%q parsed as %+v, which encodes as %q", s, a, again)
			}
		} else if a.Act != "" && !knownAction(a.Act) {
			t.Fatalf("%q refused, yet names the unknown action %q", s, a.Act)
		}

		do := fzActions[int(act)%len(fzActions)]
		id := customID(do, tenant, job, question, version, int(index))
		valid := bridge.ValidToken(tenant) && bridge.ValidToken(job) && bridge.ValidToken(question) &&
			version >= 0 && (!takesIndex(do) || int(index) < maxChoices)
		if !valid {
			return
		}
		got, err := parseCustomID(id)
		if err != nil || len(id) > maxCustomID {
			t.Fatalf("%q (%d characters) for valid parts is refused: %v", id, len(id), err)
		}
		want := action{Act: do, TaskVersion: version}
		if takesIndex(do) {
			want.Index = int(index)
		}
		if strings.HasPrefix(id, keyedPrefix+":") {
			want.Key = cardHash(tenant, job, question)
		} else {
			want.Tenant, want.JobID, want.QuestionID = tenant, job, question
		}
		if got != want {
			t.Fatalf("%q parsed as %+v, want %+v", id, got, want)
		}
	})
}

// fzEnv is the whole Discord path: the real core with a question whose
// card the bot posted to the fake Discord API, the bot's routes, and
// synchronous counters of answer attempts and cancels published on NATS.
type fzEnv struct {
	mux      *http.ServeMux
	nc       *nats.Conn
	priv     ed25519.PrivateKey
	attempts *nats.Subscription
	cancels  *nats.Subscription
}

func startFzEnv(f *testing.F) *fzEnv {
	f.Helper()
	fake := api.newBot(f)
	env := testenv.Start(f, testenv.Options{Roles: runtime.Roles{Operators: []string{"discord:" + kevin.ID}},
		Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	bot, err := New(ctx, Options{NATS: env.NATS, BotToken: fake.token, PublicKey: hex.EncodeToString(pub), AppID: testApp,
		APIURL: api.apiURL(), DefaultChannel: channelA,
		Console: console.Signer{PublicURL: "https://askbridge.example.com", Secret: []byte("console-secret-0123456789")},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		cancel()
		f.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- bot.Run(ctx) }()
	f.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			f.Errorf("Run: %v", err)
		}
	})
	q := bridge.Question{Tenant: "acme", JobID: "job-fz", QuestionID: "q-c", TaskVersion: 1, Question: "Which colour?",
		Choices: []string{"red", "blue"}, Timeout: "4h"}
	free := bridge.Question{Tenant: "acme", JobID: "job-fz", QuestionID: "q-t", TaskVersion: 1, Question: "Anything to add?", Timeout: "4h"}
	approval := bridge.Question{Tenant: "acme", JobID: "job-fz", QuestionID: "q-ap", TaskVersion: 1, Kind: bridge.KindApproval,
		Question: "May I send the refund?", Proposal: &bridge.Proposal{ID: "p1", Action: "refund", Summary: []string{"Refund 40 EUR"}}, Timeout: "4h"}
	for _, q := range []*bridge.Question{&q, &free, &approval} {
		if err := env.Agent.Publish(context.Background(), q); err != nil {
			f.Fatal(err)
		}
	}
	testenv.CheckFor(f, testenv.Patience, 20*time.Millisecond, func() error {
		for _, id := range []string{"q-c", "q-t", "q-ap"} {
			if c, err := bot.loadCard(context.Background(), "acme", "job-fz", id, 1); err != nil || c == nil {
				return fmt.Errorf("card %s not posted yet (%v)", id, err)
			}
		}
		return nil
	})
	e := &fzEnv{mux: http.NewServeMux(), nc: env.NATS.Conn, priv: priv}
	bot.Routes(e.mux)
	if e.attempts, err = e.nc.SubscribeSync(bridge.PrefixAnswer + ".>"); err != nil {
		f.Fatal(err)
	}
	if e.cancels, err = e.nc.SubscribeSync(bridge.PrefixCancel + ".>"); err != nil {
		f.Fatal(err)
	}
	if err := e.nc.Flush(); err != nil {
		f.Fatal(err)
	}
	return e
}

// send serves one request signed as Discord signs it (Ed25519 over the
// timestamp and the body) with key at `at`, or unsigned when key is nil.
// It calls the routes directly, so a panic fails the fuzz target.
func (e *fzEnv) send(body []byte, key ed25519.PrivateKey, at time.Time) (int, []byte) {
	req := httptest.NewRequest(http.MethodPost, "/discord/interactions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != nil {
		stamp := strconv.FormatInt(at.Unix(), 10)
		req.Header.Set("X-Signature-Ed25519", hex.EncodeToString(ed25519.Sign(key, append([]byte(stamp), body...))))
		req.Header.Set("X-Signature-Timestamp", stamp)
	}
	rec := httptest.NewRecorder()
	e.mux.ServeHTTP(rec, req)
	out, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, out
}

// published returns what was published on sub since the last call: the
// bot publishes on the same connection and waits for JetStream's ack, so
// after a flush everything a request caused is queued here.
func (e *fzEnv) published(t *testing.T, sub *nats.Subscription) []*nats.Msg {
	t.Helper()
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	var out []*nats.Msg
	for {
		n, _, err := sub.Pending()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return out
		}
		m, err := sub.NextMsg(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
}

// FuzzDiscordInteractions drives POST /discord/interactions with the fuzzed
// body, Ed25519-signed as Discord signs it. It never panics; a body that is
// not an interaction gets 400 and publishes nothing; a PING gets the PONG;
// anything else gets 200 with an interaction response and publishes at
// most one attempt (or, for a command, one cancel), as the interaction's
// own user, bound to its id. Unsigned, signed with another key, or signed
// 10 minutes ago: 401 and nothing published.
func FuzzDiscordInteractions(f *testing.F) {
	member := map[string]any{"user": map[string]any{"id": kevin.ID, "username": "kevin"}, "roles": []string{}, "joined_at": "2026-01-01T00:00:00Z"}
	in := func(id string, typ int, data map[string]any) []byte {
		raw, _ := json.Marshal(map[string]any{"id": id, "application_id": testApp, "type": typ, "token": "itoken-" + id, "version": 1,
			"guild_id": "900", "channel_id": channelA, "locale": "en-US", "member": member, "data": data})
		return raw
	}
	choice := customID(actChoice, "acme", "job-fz", "q-c", 1, 1)
	for _, b := range [][]byte{
		[]byte(`{"id":"1","application_id":"555000111","type":1,"token":"t","version":1}`),
		in("1400000000000000001", 3, map[string]any{"custom_id": choice, "component_type": 2}),
		in("1400000000000000002", 3, map[string]any{"custom_id": customID(actSelect, "acme", "job-fz", "q-c", 1, 0), "component_type": 3, "values": []string{"0"}}),
		in("1400000000000000003", 3, map[string]any{"custom_id": customID(actDecline, "acme", "job-fz", "q-c", 1, 0), "component_type": 2}),
		in("1400000000000000004", 3, map[string]any{"custom_id": customID(actConsole, "acme", "job-fz", "q-c", 1, 0), "component_type": 2}),
		in("1400000000000000005", 5, map[string]any{"custom_id": customID(actModalAnswer, "acme", "job-fz", "q-t", 1, 0),
			"components": []any{map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": "answer", "value": "ship it"}}}}}),
		in("1400000000000000006", 5, map[string]any{"custom_id": customID(actModalReason, "acme", "job-fz", "q-c", 1, 0),
			"components": []any{map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": "reason", "value": "ask Ana"}}}}}),
		in("1400000000000000012", 3, map[string]any{"custom_id": customID(actDeny, "acme", "job-fz", "q-ap", 1, 0), "component_type": 2}),
		in("1400000000000000013", 5, map[string]any{"custom_id": customID(actModalDeny, "acme", "job-fz", "q-ap", 1, 0),
			"components": []any{map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": "reason", "value": "too much"}}}}}),
		in("1400000000000000014", 5, map[string]any{"custom_id": customID(actModalDeny, "acme", "job-fz", "q-ap", 1, 0),
			"components": []any{map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": "reason", "value": " "}}}}}),
		in("1400000000000000015", 5, map[string]any{"custom_id": customID(actModalDeny, "acme", "job-fz", "q-ap", 1, 0), "components": []any{}}),
		in("1400000000000000007", 2, map[string]any{"id": "777", "name": "ask", "type": 1, "options": []any{map[string]any{"name": "list", "type": 1}}}),
		in("1400000000000000008", 2, map[string]any{"id": "777", "name": "ask", "type": 1, "options": []any{map[string]any{"name": "answer", "type": 1,
			"options": []any{map[string]any{"name": "tenant", "type": 3, "value": "acme"}, map[string]any{"name": "job", "type": 3, "value": "job-fz"},
				map[string]any{"name": "question", "type": 3, "value": "q-c"}, map[string]any{"name": "answer", "type": 3, "value": "red"}}}}}),
		in("1400000000000000009", 2, map[string]any{"id": "777", "name": "ask", "type": 1, "options": []any{map[string]any{"name": "cancel", "type": 1,
			"options": []any{map[string]any{"name": "tenant", "type": 3, "value": "acme"}, map[string]any{"name": "job", "type": 3, "value": "job-fz"},
				map[string]any{"name": "question", "type": 3, "value": "q-c"}}}}}),
		in("1400000000000000010", 3, map[string]any{"custom_id": "ab:c:acme:job-fz:q-c:01:0", "component_type": 2}),
		in("1400000000000000011", 4, map[string]any{"name": "ask"}),
		in("x", 3, map[string]any{"custom_id": choice}),
		[]byte(`{"type": 3, "data": 17`), []byte(`{"type": 3, "id": "12", "token": "x", "data": "not an object"}`),
		[]byte(`{"type":3,"id":"13","token":"x","user":{"id":"3000000000000000001"},"data":{"custom_id":"` + choice + `","values":[null]}}`),
		[]byte(`null`), []byte(``), []byte(`{"type":5,"id":"14","token":"x","member":{"user":null},"data":{"components":[{"type":1,"components":[{"type":4}]}]}}`),
	} {
		f.Add(b)
	}
	e := startFzEnv(f)
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	f.Fuzz(func(t *testing.T, body []byte) {
		for name, c := range map[string]struct {
			key ed25519.PrivateKey
			at  time.Time
		}{"unsigned": {nil, time.Now()}, "another key": {other, time.Now()}, "stale": {e.priv, time.Now().Add(-10 * time.Minute)}} {
			want := http.StatusUnauthorized
			if len(body) > maxBodyBytes {
				want = http.StatusRequestEntityTooLarge // the size is checked before the signature
			}
			if code, out := e.send(body, c.key, c.at); code != want {
				t.Fatalf("%s: HTTP %d %q, want %d", name, code, out, want)
			}
			if n := len(e.published(t, e.attempts)) + len(e.published(t, e.cancels)); n != 0 {
				t.Fatalf("%s request published %d messages", name, n)
			}
		}

		code, out := e.send(body, e.priv, time.Now())
		attempts, cancels := e.published(t, e.attempts), e.published(t, e.cancels)
		var in discordgo.Interaction
		perr := json.Unmarshal(body, &in)
		switch {
		case len(body) > maxBodyBytes:
			if code != http.StatusRequestEntityTooLarge {
				t.Fatalf("%d-byte body: HTTP %d, want 413", len(body), code)
			}
		case perr != nil:
			if code != http.StatusBadRequest {
				t.Fatalf("not an interaction (%v): HTTP %d %q", perr, code, out)
			}
		case in.Type == discordgo.InteractionPing:
			if code != http.StatusOK || string(out) != `{"type":1}` {
				t.Fatalf("PING: HTTP %d %q", code, out)
			}
		case !bridge.ValidSnowflake(in.ID) || in.Token == "":
			if code != http.StatusBadRequest {
				t.Fatalf("interaction without id or token: HTTP %d %q", code, out)
			}
		default:
			var resp struct {
				Type discordgo.InteractionResponseType `json:"type"`
			}
			if code != http.StatusOK || json.Unmarshal(out, &resp) != nil || resp.Type == 0 {
				t.Fatalf("interaction type %d: HTTP %d %q", in.Type, code, out)
			}
		}
		if code != http.StatusOK && len(attempts)+len(cancels) != 0 {
			t.Fatalf("HTTP %d, yet %d attempts and %d cancels published", code, len(attempts), len(cancels))
		}
		if len(attempts)+len(cancels) > 1 || (len(cancels) == 1 && in.Type != discordgo.InteractionApplicationCommand) {
			t.Fatalf("interaction type %d published %d attempts and %d cancels", in.Type, len(attempts), len(cancels))
		}
		var user string
		if in.Member != nil && in.Member.User != nil {
			user = in.Member.User.ID
		} else if in.User != nil {
			user = in.User.ID
		}
		for _, m := range attempts {
			var at bridge.AnswerAttempt
			if err := json.Unmarshal(m.Data, &at); err != nil {
				t.Fatalf("attempt is not JSON: %v", err)
			}
			if at.By != "discord:"+user || !bridge.ValidSnowflake(user) || at.AttemptID != attemptID(&in) ||
				m.Header.Get("Nats-Msg-Id") != "attempt-"+at.AttemptID || m.Subject != bridge.AnswerSubject(at.Tenant, at.JobID) {
				t.Fatalf("attempt %s on %s (id %q) for interaction %s by %q", m.Data, m.Subject, m.Header.Get("Nats-Msg-Id"), in.ID, user)
			}
		}
		for _, m := range cancels {
			var c bridge.Cancel
			if err := json.Unmarshal(m.Data, &c); err != nil || c.By != "discord:"+user || m.Subject != bridge.CancelSubject(c.Tenant, c.JobID) {
				t.Fatalf("cancel %s on %s for user %q: %v", m.Data, m.Subject, user, err)
			}
		}
	})
}
