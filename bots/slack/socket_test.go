package slack

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
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
	checkFor(t, wait, tick, func() error {
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
