package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// fuzzEnv is the whole Slack path the fuzz targets drive: the real core
// (NATS, store, runtime) with two questions asked and their cards posted to
// the loopback fake Slack, the adapter's routes, and synchronous counters
// of every answer attempt and cancel published on NATS.
type fuzzEnv struct {
	mux      *http.ServeMux
	nc       *nats.Conn
	attempts *nats.Subscription
	cancels  *nats.Subscription
	// blocks are the actions block ids of the posted cards.
	choiceBlock, fieldsBlock string
}

func startFuzzEnv(f *testing.F) *fuzzEnv {
	f.Helper()
	env := testenv.Start(f, testenv.Options{Roles: runtime.Roles{Operators: []string{"slack:U0KEV"}},
		Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C0123"}}})
	h := startBot(f, env.NATS, newFakeSlack(f))
	one, nine := 1.0, 9.0
	for _, q := range []*bridge.Question{
		{Tenant: "acme", JobID: "job-fz", QuestionID: "q-c", TaskVersion: 1, Question: "Which colour?", Choices: []string{"red", "blue"}, Timeout: "4h"},
		{Tenant: "acme", JobID: "job-fz", QuestionID: "q-f", TaskVersion: 1, Question: "How many, and when?", Timeout: "4h",
			Fields: []bridge.Field{{Name: "copies", Kind: bridge.FieldNumber, Integer: true, Min: &one, Max: &nine}, {Name: "on", Kind: bridge.FieldDate}}},
	} {
		if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.QuestionSubject(q.Tenant, q.JobID), "q-"+q.QuestionID, q); err != nil {
			f.Fatal(err)
		}
	}
	e := &fuzzEnv{mux: http.NewServeMux(), nc: env.NATS.Conn}
	testenv.CheckFor(f, testenv.Patience, 20*time.Millisecond, func() error {
		for _, c := range h.fake.Calls("chat.postMessage") {
			switch b := actionsBlock(c); b {
			case "ask.acme.job-fz.q-c.1":
				e.choiceBlock = b
			case "ask.acme.job-fz.q-f.1":
				e.fieldsBlock = b
			}
		}
		if e.choiceBlock == "" || e.fieldsBlock == "" {
			return fmt.Errorf("cards not posted yet")
		}
		return nil
	})
	h.bot.Routes(e.mux)
	var err error
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

// send serves one request signed with secret at `at` (no signature when
// secret is empty) and returns the status and body. It calls the routes
// directly, so a panic in a handler fails the fuzz target.
func (e *fuzzEnv) send(path, body, secret string, at time.Time) (int, []byte) {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if secret != "" {
		ts := strconv.FormatInt(at.Unix(), 10)
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", sign(secret, ts, body))
	}
	rec := httptest.NewRecorder()
	e.mux.ServeHTTP(rec, req)
	out, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, out
}

// published returns what was published on sub since the last call. The
// adapter publishes on the same connection and JetStream acknowledged each
// publish before the handler returned, so after a flush every message the
// request caused is already queued here.
func (e *fuzzEnv) published(t *testing.T, sub *nats.Subscription) []*nats.Msg {
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

// refusesForgeries: the body signed with another secret, or signed 10
// minutes ago, is refused with 401 and publishes nothing.
func (e *fuzzEnv) refusesForgeries(t *testing.T, path, body string) {
	t.Helper()
	for name, c := range map[string]struct {
		secret string
		at     time.Time
	}{"unsigned": {"", time.Now()}, "forged": {"not-the-signing-secret", time.Now()}, "stale": {testSecret, time.Now().Add(-10 * time.Minute)}} {
		code, out := e.send(path, body, c.secret, c.at)
		if code != http.StatusUnauthorized && !(code == http.StatusRequestEntityTooLarge && len(body) > maxBody) {
			t.Fatalf("%s request: HTTP %d %q, want 401", name, code, out)
		}
		if n := len(e.published(t, e.attempts)) + len(e.published(t, e.cancels)); n != 0 {
			t.Fatalf("%s request published %d messages", name, n)
		}
	}
}

// checkAttempt: an attempt is the clicker's, on its own subject, with the
// message id the runtime deduplicates on.
func checkAttempt(t *testing.T, m *nats.Msg, user, prefix string) bridge.AnswerAttempt {
	t.Helper()
	var at bridge.AnswerAttempt
	if err := json.Unmarshal(m.Data, &at); err != nil {
		t.Fatalf("attempt is not JSON: %v", err)
	}
	if !bridge.ValidSlackID(user) || at.By != "slack:"+user || at.Via != bridge.PlatformSlack {
		t.Fatalf("attempt by %q via %q for user %q", at.By, at.Via, user)
	}
	if !bridge.ValidToken(at.Tenant) || !bridge.ValidToken(at.JobID) || !bridge.ValidToken(at.QuestionID) ||
		m.Subject != bridge.AnswerSubject(at.Tenant, at.JobID) {
		t.Fatalf("attempt for %s/%s/%s on %s", at.Tenant, at.JobID, at.QuestionID, m.Subject)
	}
	if !strings.HasPrefix(at.AttemptID, prefix) || m.Header.Get("Nats-Msg-Id") != "attempt-"+at.AttemptID {
		t.Fatalf("attempt id %q, Nats-Msg-Id %q", at.AttemptID, m.Header.Get("Nats-Msg-Id"))
	}
	return at
}

// FuzzSlackInteractions drives POST /slack/interactions with the fuzzed
// payload, form-encoded and signed as Slack signs it. It never panics; a
// payload slack-go cannot parse gets 400 and publishes nothing; a parsed
// one gets 200 (with a JSON body or none) and publishes at most one
// attempt per action, each the clicker's own; the same body unsigned,
// forged or stale gets 401 and publishes nothing.
func FuzzSlackInteractions(f *testing.F) {
	fk := &fakeSlack{srv: &httptest.Server{URL: "http://127.0.0.1:1"}}
	const card = "ask.acme.job-fz.q-c.1"
	for _, p := range []string{
		fk.click("U0KEV", "kevin", "trig-1", "C0123", "1700000000.000001", card, "choice.1", "blue", ""),
		fk.click("U0KEV", "kevin", "trig-2", "C0123", "1700000000.000001", card, "select", "", "0"),
		fk.click("U0KEV", "kevin", "trig-3", "C0123", "1700000000.000001", card, "approve", "approve", ""),
		fk.click("U0KEV", "kevin", "trig-4", "C0123", "1700000000.000001", "ask.acme.job-fz.q-f.1", "answer", "answer", ""),
		fk.click("U0KEV", "kevin", "trig-5", "C0123", "1700000000.000001", card, "decline", "", ""),
		fk.click("u0kev", "kevin", "trig-6", "C0123", "1700000000.000001", card, "choice.0", "red", ""),
		fk.click("U0KEV", "kevin", "trig-7", "C0123", "1700000000.000001", "ask.acme.job-fz.q-c.01", "choice.0", "red", ""),
		fk.click("U0KEV", "kevin", "trig-8", "C0123", "1700000000.000001", card, "console", "console", ""),
		fk.click("U0KEV", "kevin", "trig-9", "C0123", "1700000000.000001", card, "console.job", "console.job", ""),
		payload(map[string]any{"type": "view_submission", "user": map[string]any{"id": "U0KEV", "name": "kevin"}, "team": map[string]any{"id": "T1"},
			"view": map[string]any{"id": "V1", "hash": "h1", "callback_id": "ask.answer", "private_metadata": "acme.job-fz.q-f.1|C0123|1700000000.000001",
				"state": map[string]any{"values": map[string]any{
					"f.copies": map[string]any{"v": map[string]any{"type": "number_input", "value": "3"}},
					"f.on":     map[string]any{"v": map[string]any{"type": "datepicker", "selected_date": "2026-10-20"}}}}}}),
		payload(map[string]any{"type": "view_submission", "user": map[string]any{"id": "U0KEV", "name": "kevin"},
			"view": map[string]any{"id": "V2", "hash": "h2", "callback_id": "ask.decline", "private_metadata": "acme.job-fz.q-c.1||",
				"state": map[string]any{"values": map[string]any{"reason": map[string]any{"v": map[string]any{"type": "plain_text_input", "value": "ask Ana"}}}}}}),
		payload(map[string]any{"type": "view_submission", "user": map[string]any{"id": "U0KEV"},
			"view": map[string]any{"id": "V3", "callback_id": "ask.deny", "private_metadata": "acme.job-fz.q-c.1|C0123|x"}}),
		payload(map[string]any{"type": "view_closed", "user": map[string]any{"id": "U0KEV"}}),
		payload(map[string]any{"type": "shortcut", "callback_id": "x", "trigger_id": "t", "user": map[string]any{"id": "U0KEV"}}),
	} {
		raw, err := url.QueryUnescape(strings.TrimPrefix(p, "payload="))
		if err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(raw))
	}
	for _, s := range []string{``, `{`, `null`, `[]`, `"x"`, `{"type":"block_actions","actions":[{}]}`, `{"type":"block_actions","user":{"id":"U1"},"actions":null}`,
		`{"type":"view_submission","user":{"id":"U1"},"view":{"callback_id":"ask.answer","private_metadata":"a.b.c.0||","state":{"values":{"answer":{"v":{"value":1}}}}}}`} {
		f.Add([]byte(s))
	}
	e := startFuzzEnv(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		body := "payload=" + url.QueryEscape(string(data))
		e.refusesForgeries(t, "/slack/interactions", body)

		var cb slack.InteractionCallback
		parsed := len(data) > 0 && json.Unmarshal(data, &cb) == nil
		code, out := e.send("/slack/interactions", body, testSecret, time.Now())
		attempts := e.published(t, e.attempts)
		switch {
		case len(body) > maxBody:
			if code != http.StatusRequestEntityTooLarge {
				t.Fatalf("%d-byte body: HTTP %d", len(body), code)
			}
		case !parsed:
			if code != http.StatusBadRequest || len(attempts) != 0 {
				t.Fatalf("unparseable payload: HTTP %d %q, %d attempts", code, out, len(attempts))
			}
		default:
			if code != http.StatusOK || (len(out) > 0 && !json.Valid(out)) {
				t.Fatalf("payload of type %q: HTTP %d %q", cb.Type, code, out)
			}
		}
		most := 0
		switch cb.Type {
		case slack.InteractionTypeBlockActions:
			most = len(cb.ActionCallback.BlockActions)
		case slack.InteractionTypeViewSubmission:
			most = 1
		}
		if len(attempts) > most {
			t.Fatalf("%d attempts for a %q interaction with %d actions", len(attempts), cb.Type, len(cb.ActionCallback.BlockActions))
		}
		for _, m := range attempts {
			checkAttempt(t, m, cb.User.ID, "slack-")
		}
		if n := len(e.published(t, e.cancels)); n != 0 {
			t.Fatalf("an interaction published %d cancels", n)
		}
	})
}

// FuzzSlackCommands drives POST /slack/commands with the fuzzed form body,
// signed as Slack signs it. It never panics; a body that is not a form, or
// names no user, gets 400 and publishes nothing; Slack's ssl_check gets an
// empty 200; any other command gets an ephemeral JSON reply, and publishes
// at most one answer attempt (for answer/decline) or one cancel (for
// cancel), as the user who typed it. Unsigned, forged or stale: 401.
func FuzzSlackCommands(f *testing.F) {
	form := func(user, text string) string {
		return url.Values{"command": {"/ask"}, "text": {text}, "user_id": {user}, "user_name": {"kevin"},
			"channel_id": {"C0123"}, "team_id": {"T1"}, "trigger_id": {"trig-" + text},
			"response_url": {"http://127.0.0.1:1/response/x"}}.Encode()
	}
	for _, text := range []string{"", "help", "list", "show q-c", "show job-fz/q-f", "answer q-c blue", "answer job-fz/q-f {\"copies\":3,\"on\":\"2026-10-20\"}",
		"answer q-f {\"copies\":12}", "decline q-c ask Ana", "cancel job-fz/q-c", "answer", "show job fz", "ANSWER q-c Blue", "frobnicate"} {
		f.Add(form("U0KEV", text))
	}
	for _, s := range []string{"", "ssl_check=1&token=x", "text=list", "text=list&user_id=", "user_id=u0kev&text=list", "%zz", "a=1;b=2",
		form("U0MALLORY", "answer q-c red")} {
		f.Add(s)
	}
	e := startFuzzEnv(f)
	f.Fuzz(func(t *testing.T, body string) {
		e.refusesForgeries(t, "/slack/commands", body)

		code, out := e.send("/slack/commands", body, testSecret, time.Now())
		attempts := e.published(t, e.attempts)
		cancels := e.published(t, e.cancels)
		vals, perr := url.ParseQuery(body)
		user := vals.Get("user_id")
		sub, _, _ := strings.Cut(strings.TrimSpace(vals.Get("text")), " ")
		sub = strings.ToLower(sub)
		switch {
		case len(body) > maxBody:
			if code != http.StatusRequestEntityTooLarge {
				t.Fatalf("%d-byte body: HTTP %d", len(body), code)
			}
		case perr != nil || (user == "" && vals.Get("ssl_check") != "1"):
			if code != http.StatusBadRequest {
				t.Fatalf("not a command (%v): HTTP %d %q", perr, code, out)
			}
		case vals.Get("ssl_check") == "1":
			if code != http.StatusOK || len(out) != 0 {
				t.Fatalf("ssl_check: HTTP %d %q", code, out)
			}
		default:
			var reply commandReply
			if code != http.StatusOK || json.Unmarshal(out, &reply) != nil || reply.ResponseType != slack.ResponseTypeEphemeral || reply.Text == "" {
				t.Fatalf("command %q: HTTP %d %q", vals.Get("text"), code, out)
			}
		}
		if len(attempts) > 1 || (len(attempts) == 1 && (code != http.StatusOK || (sub != "answer" && sub != "decline"))) {
			t.Fatalf("%q (HTTP %d) published %d attempts", vals.Get("text"), code, len(attempts))
		}
		for _, m := range attempts {
			checkAttempt(t, m, user, "slack-cmd-")
		}
		if len(cancels) > 1 || (len(cancels) == 1 && (code != http.StatusOK || sub != "cancel")) {
			t.Fatalf("%q (HTTP %d) published %d cancels", vals.Get("text"), code, len(cancels))
		}
		for _, m := range cancels {
			var c bridge.Cancel
			if err := json.Unmarshal(m.Data, &c); err != nil || c.By != "slack:"+user || m.Subject != bridge.CancelSubject(c.Tenant, c.JobID) {
				t.Fatalf("cancel %s on %s by user %q: %v", m.Data, m.Subject, user, err)
			}
		}
	})
}
