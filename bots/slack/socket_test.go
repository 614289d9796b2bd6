package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// socketSend queues an envelope on the fake's websocket, as Slack sends
// it: retry > 0 is Slack delivering it again after no acknowledgement.
func (h *harness) socketSend(envelope, typ, body string, retry int) {
	h.t.Helper()
	var p any
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		h.t.Fatal(err)
	}
	env := map[string]any{"envelope_id": envelope, "type": typ, "payload": p, "accepts_response_payload": true}
	if retry > 0 {
		env["retry_attempt"], env["retry_reason"] = retry, "timeout"
	}
	raw, _ := json.Marshal(env)
	h.fake.wsSend <- raw
}

// socketAcks waits for n acknowledgements of envelope and returns them.
func (h *harness) socketAcks(t *testing.T, envelope string, n int) []apiCall {
	t.Helper()
	var got []apiCall
	testenv.CheckFor(t, wait, tick, func() error {
		got = got[:0]
		for _, c := range h.fake.Calls("ws_ack") {
			if c.JSON["envelope_id"] == envelope {
				got = append(got, c)
			}
		}
		if len(got) < n {
			return fmt.Errorf("%d acks of %s, want %d", len(got), envelope, n)
		}
		return nil
	})
	return got
}

func unpayload(p string) string {
	s, _ := url.QueryUnescape(strings.TrimPrefix(p, "payload="))
	return s
}

// TestSocketModeRedeliveryHasOneEffect checks that an interaction Slack
// delivers again over Socket Mode (retry_attempt > 0, as after an
// acknowledgement it did not see) has the effect of one delivery: the
// form opens once, and an accepted form is acknowledged as accepted
// again, not refused as "no longer waits" because its own answer ended
// the question; a form with inline errors is checked again each time.
func TestSocketModeRedeliveryHasOneEffect(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{}, func(o *Options) { o.AppToken = "xapp-1-test"; o.SigningSecret = "" })
	attempts := testenv.Published(t, env.NATS.Conn, bridge.AnswerSubject("acme", "job-rd"))
	q := question("job-rd", "q-rd")
	one, nine := 1.0, 9.0
	q.Choices = nil
	q.Fields = []bridge.Field{{Name: "copies", Kind: bridge.FieldNumber, Integer: true, Min: &one, Max: &nine, Required: true}}
	publishQuestion(t, env, q)
	h.posted(t, "q-rd")
	ts := h.cardTS(t, q)

	click := unpayload(h.fake.click("U0KEV", "kevin", "trig-rd", "C0123", ts, "ask.acme.job-rd.q-rd.1", "answer", "answer", ""))
	h.socketSend("env-open", "interactive", click, 0)
	h.socketAcks(t, "env-open", 1)
	h.socketSend("env-open", "interactive", click, 1)
	h.socketSend("env-open-2", "interactive", click, 2) // a new envelope for the same click
	h.socketAcks(t, "env-open", 2)
	h.socketAcks(t, "env-open-2", 1)
	if n := len(h.fake.Calls("views.open")); n != 1 {
		t.Fatalf("views.open called %d times for one click delivered three times", n)
	}
	if rs := h.fake.Calls("response_url"); len(rs) != 0 {
		t.Fatalf("the clicker was told %s", rs[0].Body)
	}
	opened := h.fake.Calls("views.open")[0]

	// Inline errors each time the same wrong form comes.
	bad := unpayload(submission("U0KEV", "kevin", opened, "V1", "h1", map[string]map[string]any{
		"f.copies": {"type": "number_input", "value": "12"}}))
	for i, retry := range []int{0, 1} {
		h.socketSend("env-bad", "interactive", bad, retry)
		got := h.socketAcks(t, "env-bad", i+1)[i]
		p, _ := got.JSON["payload"].(map[string]any)
		errs, _ := p["errors"].(map[string]any)
		if p["response_action"] != "errors" || errs["f.copies"] != "must be at most 9" {
			t.Fatalf("delivery %d of a wrong form: %s", i+1, got.Body)
		}
	}

	good := unpayload(submission("U0KEV", "kevin", opened, "V1", "h1", map[string]map[string]any{
		"f.copies": {"type": "number_input", "value": "2"}}))
	h.socketSend("env-good", "interactive", good, 0)
	if ack := h.socketAcks(t, "env-good", 1)[0]; ack.JSON["payload"] != nil {
		t.Fatalf("accepted form acknowledged with %s", ack.Body)
	}
	if out := awaitOutcome(t, env, q); out.Outcome != bridge.OutcomeAnswered || out.Text != `The answer: {"copies":2}` {
		t.Fatalf("outcome %+v", out)
	}
	h.socketSend("env-good", "interactive", good, 1)
	if ack := h.socketAcks(t, "env-good", 2)[1]; ack.JSON["payload"] != nil {
		t.Fatalf("redelivered accepted form acknowledged with %s", ack.Body)
	}
	if n := attempts.Count(t); n != 1 {
		t.Fatalf("%d answer attempts, want 1", n)
	}
}

// TestSocketModeLongCommandReplyIsDelivered checks an /ask reply too
// large for a Socket Mode acknowledgement (Slack drops one of 20 KB or
// more, and slack-go refuses to send it) still reaches the person: the
// command is acknowledged empty and the reply goes to its response_url,
// as long as the same reply over HTTP.
func TestSocketModeLongCommandReplyIsDelivered(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{}, func(o *Options) { o.AppToken = "xapp-1-test"; o.SigningSecret = "" })
	for i := range 20 {
		q := question(fmt.Sprintf("job-%02d-5f0c2d1e-8a7b-4c3d-9e1f-0a9dc2d1b7e4", i), fmt.Sprintf("q-%02d-75eaf712c0de4b1a", i))
		q.Question = "Keep " + strings.Repeat("<a> && <b> ", 20) + "as they are?"
		publishQuestion(t, env, q)
		h.posted(t, q.QuestionID)
	}
	h.socketSend("env-list", "slash_commands", `{"command":"/ask","text":"list","user_id":"U0KEV","user_name":"kevin","channel_id":"C0123","trigger_id":"trig-list","response_url":"`+h.fake.srv.URL+`/response/trig-list"}`, 0)
	if ack := h.socketAcks(t, "env-list", 1)[0]; ack.JSON["payload"] != nil {
		t.Fatalf("acknowledged with a payload of %d bytes", len(ack.Body))
	}
	text := h.ephemeral(t, 1)
	if !strings.HasPrefix(text, "*20 pending question(s) you may see:*") || strings.Count(text, "\n• ") != 20 {
		t.Fatalf("reply through response_url: %.300s", text)
	}
	// A short reply still travels in the acknowledgement.
	h.socketSend("env-help", "slash_commands", `{"command":"/ask","text":"help","user_id":"U0KEV","user_name":"kevin","channel_id":"C0123","trigger_id":"trig-help","response_url":"`+h.fake.srv.URL+`/response/trig-help"}`, 0)
	ack := h.socketAcks(t, "env-help", 1)[0]
	if p, _ := ack.JSON["payload"].(map[string]any); p["response_type"] != "ephemeral" || !strings.HasPrefix(fmt.Sprint(p["text"]), "*/ask*") {
		t.Fatalf("/ask help acknowledged with %s", ack.Body)
	}
}

// TestSocketModeRefusedAppTokenIsNamed checks an app token Slack refuses
// (invalid_auth) is reported naming ASK_SLACK_APP_TOKEN, never the token,
// rather than as a stop to reconnect from every few seconds.
func TestSocketModeRefusedAppTokenIsNamed(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	for range 3 {
		fake.fail("apps.connections.open", 200, nil, `{"ok":false,"error":"invalid_auth"}`)
	}
	logs := &testenv.LockedBuffer{}
	startBot(t, n, fake, func(o *Options) {
		o.AppToken, o.SigningSecret = "xapp-1-secret-app-token", ""
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	testenv.CheckFor(t, wait, tick, func() error {
		if !strings.Contains(logs.String(), "Slack refused the app token (invalid_auth); check ASK_SLACK_APP_TOKEN") {
			return fmt.Errorf("logs:\n%s", logs.String())
		}
		return nil
	})
	if strings.Contains(logs.String(), "xapp-1-secret-app-token") {
		t.Fatalf("the token is in the logs:\n%s", logs.String())
	}
}

// TestSocketModeConnectionErrorSaysWhy checks a Socket Mode connection
// that fails is logged with Slack's reason and when it is tried again,
// and that the next attempt connects.
func TestSocketModeConnectionErrorSaysWhy(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	fake.fail("apps.connections.open", 200, nil, `{"ok":false,"error":"internal_error"}`)
	logs := &testenv.LockedBuffer{}
	startBot(t, n, fake, func(o *Options) {
		o.AppToken, o.SigningSecret = "xapp-1-secret-app-token", ""
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	testenv.CheckFor(t, wait, tick, func() error {
		if !strings.Contains(logs.String(), `level=WARN msg="slack: socket mode connection error" err=internal_error attempt=1 retry_in=`) ||
			!strings.Contains(logs.String(), `msg="slack: socket mode connected"`) {
			return fmt.Errorf("logs:\n%s", logs.String())
		}
		return nil
	})
	if strings.Contains(logs.String(), "xapp-1-secret-app-token") {
		t.Fatalf("the token is in the logs:\n%s", logs.String())
	}
}

// TestSocketModeConnectionErrorCutsTheTicket checks a connection error
// that quotes the websocket URL is logged without its ticket.
func TestSocketModeConnectionErrorCutsTheTicket(t *testing.T) {
	t.Parallel()
	logs := &testenv.LockedBuffer{}
	b := &Bot{log: slog.New(slog.NewTextHandler(logs, nil))}
	b.connectionError(context.Background(), socketmode.Event{Type: socketmode.EventTypeConnectionError, Data: &slack.ConnectionErrorEvent{
		Attempt: 3, Backoff: 2 * time.Second, ErrorObj: errors.New("dial wss://wss.slack.test/link/?ticket=Sekr3t-ticket&app_id=A1: connection reset"),
	}})
	want := `level=WARN msg="slack: socket mode connection error" err="dial wss://wss.slack.test/link/?ticket=[redacted]&app_id=A1: connection reset" attempt=3 retry_in=2s`
	if !strings.Contains(logs.String(), want) || strings.Contains(logs.String(), "Sekr3t") {
		t.Fatalf("logs:\n%s\nwant %s", logs, want)
	}
}

// TestInteractionKeyOfForms checks a form submission's key names its view
// and the values submitted (the same values, the same key; any value
// changed, another key), and that making it costs every answer given in a
// form a few allocations, not a JSON encoding of the whole state (19
// allocations and 5.8 KB for four inputs).
// It runs alone (no t.Parallel): testing.AllocsPerRun counts the
// allocations of every goroutine in the process.
func TestInteractionKeyOfForms(t *testing.T) {
	form := func(edit func(map[string]map[string]slack.BlockAction)) *slack.InteractionCallback {
		cb := &slack.InteractionCallback{Type: slack.InteractionTypeViewSubmission}
		cb.View.ID, cb.View.Hash = "V0123", "1700000000.abcd"
		v := map[string]map[string]slack.BlockAction{
			"f.title":  {"in": {Type: "plain_text_input", Value: "Quarterly report"}},
			"f.copies": {"in": {Type: "number_input", Value: "3"}},
			"f.colour": {"in": {Type: "static_select", SelectedOption: slack.OptionBlockObject{Value: "1"}}},
			"f.parts":  {"in": {Type: "checkboxes", SelectedOptions: []slack.OptionBlockObject{{Value: "0"}, {Value: "2"}}}},
			"f.on":     {"in": {Type: "datepicker", SelectedDate: "2026-10-21"}},
			"f.at":     {"in": {Type: "datetimepicker", SelectedDateTime: 1792540800}},
		}
		if edit != nil {
			edit(v)
		}
		cb.View.State = &slack.ViewState{Values: v}
		return cb
	}
	base := interactionKey(form(nil))
	if base == "" || base != interactionKey(form(nil)) {
		t.Fatalf("keys of one submission: %q, %q", base, interactionKey(form(nil)))
	}
	set := func(block string, a slack.BlockAction) func(map[string]map[string]slack.BlockAction) {
		return func(v map[string]map[string]slack.BlockAction) { v[block] = map[string]slack.BlockAction{"in": a} }
	}
	for name, edit := range map[string]func(map[string]map[string]slack.BlockAction){
		"text":       set("f.title", slack.BlockAction{Type: "plain_text_input", Value: "Quarterly repor"}),
		"number":     set("f.copies", slack.BlockAction{Type: "number_input", Value: "4"}),
		"select":     set("f.colour", slack.BlockAction{Type: "static_select", SelectedOption: slack.OptionBlockObject{Value: "0"}}),
		"checkboxes": set("f.parts", slack.BlockAction{Type: "checkboxes", SelectedOptions: []slack.OptionBlockObject{{Value: "0"}}}),
		"date":       set("f.on", slack.BlockAction{Type: "datepicker", SelectedDate: "2026-10-22"}),
		"date time":  set("f.at", slack.BlockAction{Type: "datetimepicker", SelectedDateTime: 1792540860}),
		"value moved": func(v map[string]map[string]slack.BlockAction) {
			v["f.title"] = map[string]slack.BlockAction{"in": {Type: "plain_text_input", Value: "Quarterly report3"}}
			v["f.copies"] = map[string]slack.BlockAction{"in": {Type: "number_input"}}
		},
		"input added": set("f.notes", slack.BlockAction{Type: "plain_text_input"}),
	} {
		if k := interactionKey(form(edit)); k == base {
			t.Errorf("%s changed: same key %q", name, k)
		}
	}
	cb := form(nil)
	if n := testing.AllocsPerRun(100, func() { interactionKey(cb) }); n > 4 {
		t.Errorf("the key of a six-input form costs %v allocations", n)
	}
}

// TestSocketModeUnrecordedAnswerIsNotAcknowledged checks a submit whose
// attempt could not be published is not acknowledged over Socket Mode
// (Slack then shows the failure and delivers it again), and Slack's
// redelivery, once JetStream takes answers again, is recorded and
// acknowledged.
func TestSocketModeUnrecordedAnswerIsNotAcknowledged(t *testing.T) {
	t.Parallel()
	logs := &testenv.LockedBuffer{}
	env, h := e2e(t, runtime.Roles{}, func(o *Options) {
		o.AppToken, o.SigningSecret = "xapp-1-test", ""
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	q := question("job-un", "q-un")
	q.Choices = nil
	q.Fields = []bridge.Field{{Name: "note", Kind: bridge.FieldText}}
	publishQuestion(t, env, q)
	h.posted(t, "q-un")
	ts := h.cardTS(t, q)
	h.socketSend("env-open", "interactive", unpayload(h.fake.click("U0KEV", "kevin", "trig-un", "C0123", ts, "ask.acme.job-un.q-un.1", "answer", "answer", "")), 0)
	h.socketAcks(t, "env-open", 1)
	opened := h.fake.Calls("views.open")[0]
	ctx := context.Background()
	st, err := env.NATS.JS.Stream(ctx, bridge.StreamAnswers)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.Subjects = []string{"elsewhere.>"} // no stream takes answers
	if _, err := env.NATS.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	good := unpayload(submission("U0KEV", "kevin", opened, "V1", "h1", map[string]map[string]any{
		"note": {"type": "plain_text_input", "value": "ship it"}}))
	h.socketSend("env-sub", "interactive", good, 0)
	testenv.CheckFor(t, wait, tick, func() error {
		if !strings.Contains(logs.String(), "socket mode interaction not acknowledged") {
			return fmt.Errorf("the submit was not handled yet")
		}
		return nil
	})
	if acks := h.socketAcksNow("env-sub"); len(acks) != 0 {
		t.Fatalf("an unrecorded submit was acknowledged: %s", acks[0].Body)
	}
	if err := bridge.EnsureStreams(ctx, env.NATS.JS, bridge.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	h.socketSend("env-sub", "interactive", good, 1)
	if ack := h.socketAcks(t, "env-sub", 1)[0]; ack.JSON["payload"] != nil {
		t.Fatalf("the redelivered submit was acknowledged with %s", ack.Body)
	}
	if out := awaitOutcome(t, env, q); out.Outcome != bridge.OutcomeAnswered {
		t.Fatalf("outcome %+v", out)
	}
}

// socketAcksNow lists the acknowledgements of envelope sent so far.
func (h *harness) socketAcksNow(envelope string) []apiCall {
	var got []apiCall
	for _, c := range h.fake.Calls("ws_ack") {
		if c.JSON["envelope_id"] == envelope {
			got = append(got, c)
		}
	}
	return got
}

func TestSocketMode(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{}, func(o *Options) { o.AppToken = "xapp-1-test"; o.SigningSecret = "" })
	q := question("job-sm", "q-sm")
	one := 1.0
	q.Choices = nil
	q.Fields = []bridge.Field{{Name: "copies", Kind: bridge.FieldNumber, Integer: true, Min: &one, Required: true}}
	qb := question("job-sm", "q-sm2")
	publishQuestion(t, env, q)
	publishQuestion(t, env, qb)
	cardB := h.posted(t, "q-sm2")
	h.posted(t, "q-sm")
	testenv.CheckFor(t, wait, tick, func() error {
		if len(h.fake.Calls("apps.connections.open")) == 0 {
			return fmt.Errorf("apps.connections.open not called")
		}
		return nil
	})
	if c := h.fake.Calls("apps.connections.open")[0]; c.Auth != "Bearer xapp-1-test" {
		t.Fatalf("apps.connections.open with %q", c.Auth)
	}
	// The HTTP endpoints are off without a signing secret.
	if resp, _ := h.interact("payload=%7B%7D"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("HTTP interactions without a signing secret: %d", resp.StatusCode)
	}
	send := func(envelope, typ, body string) {
		var p any
		_ = json.Unmarshal([]byte(body), &p)
		raw, _ := json.Marshal(map[string]any{"envelope_id": envelope, "type": typ, "payload": p, "accepts_response_payload": true})
		h.fake.wsSend <- raw
	}
	acked := func(envelope string) apiCall {
		var got apiCall
		testenv.CheckFor(t, wait, tick, func() error {
			for _, c := range h.fake.Calls("ws_ack") {
				if c.JSON["envelope_id"] == envelope {
					got = c
					return nil
				}
			}
			return fmt.Errorf("no ack for %s", envelope)
		})
		return got
	}
	unpayload := func(p string) string { s, _ := url.QueryUnescape(strings.TrimPrefix(p, "payload=")); return s }
	tsB := h.cardTS(t, qb)
	send("env-1", "interactive", unpayload(h.fake.click("U0KEV", "kevin", "trig-sm", "C0123", tsB, actionsBlock(cardB), "choice.1", "blue", "")))
	acked("env-1")
	if out := awaitOutcome(t, env, qb); out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: blue" {
		t.Fatalf("socket mode click resume: %+v", out)
	}
	// A modal's inline errors travel in the ack payload.
	tsA := h.cardTS(t, q)
	send("env-2", "interactive", unpayload(h.fake.click("U0KEV", "kevin", "trig-sm2", "C0123", tsA, "ask.acme.job-sm.q-sm.1", "answer", "answer", "")))
	acked("env-2")
	var opened apiCall
	testenv.CheckFor(t, wait, tick, func() error {
		if o := h.fake.Calls("views.open"); len(o) > 0 {
			opened = o[0]
			return nil
		}
		return fmt.Errorf("no views.open")
	})
	send("env-3", "interactive", unpayload(submission("U0KEV", "kevin", opened, "V1", "h1", map[string]map[string]any{
		"f.copies": {"type": "number_input", "value": "0"}})))
	ack := acked("env-3")
	p, _ := ack.JSON["payload"].(map[string]any)
	if p["response_action"] != "errors" || p["errors"].(map[string]any)["f.copies"] != "must be at least 1" {
		t.Fatalf("socket mode inline errors: %s", ack.Body)
	}
	// /ask over the websocket: the reply is the ack's payload.
	send("env-4", "slash_commands", `{"command":"/ask","text":"show q-sm","user_id":"U0KEV","user_name":"kevin","channel_id":"C0123","trigger_id":"trig-cmd"}`)
	ack = acked("env-4")
	p, _ = ack.JSON["payload"].(map[string]any)
	if p["response_type"] != "ephemeral" || !strings.Contains(fmt.Sprint(p["text"]), "Fields: copies (number)") {
		t.Fatalf("socket mode /ask: %s", ack.Body)
	}
}
