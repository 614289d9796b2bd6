package slack

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge/bots/apimetrics"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/runtime"
)

// TestRateLimitHonoursRetryAfter: a 429 is retried after its Retry-After,
// and after a second when it names none (Slack always sends the header;
// a proxy in front of it may not), never reported as a failure.
func TestRateLimitHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		header map[string]string
	}{
		{"Retry-After: 1", map[string]string{"Retry-After": "1"}},
		{"no Retry-After", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := plainNATS(t)
			fake := newFakeSlack(t)
			fake.fail("chat.postMessage", 429, tc.header, `{"ok":false,"error":"ratelimited"}`)
			reg := prometheus.NewRegistry()
			startBot(t, n, fake, func(o *Options) { o.Registerer = reg })
			deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
			q := question("job-rl", "q-rl")
			publishEvent(t, n, askedEvent(q))
			d := deliveredTS(t, n, deliveries, "q-rl")
			if !d.OK {
				t.Fatalf("not delivered after a 429: %+v", d.Failure)
			}
			posts := fake.Calls("chat.postMessage")
			if len(posts) < 2 {
				t.Fatalf("%d posts", len(posts))
			}
			if gap := posts[1].At.Sub(posts[0].At); gap < time.Second {
				t.Fatalf("retried %v after the 429, want at least 1s", gap)
			}
			// Slack did not post on a 429: nothing to look for before the retry.
			if got := len(fake.Calls("conversations.history")) + len(fake.Calls("conversations.replies")); got != 0 {
				t.Fatalf("%d lookups after a 429, want none", got)
			}
			// /metrics: every post succeeded in the end (the thread parent and the
			// card), one of them after one rate-limited try.
			calls := float64(len(fake.Calls("chat.postMessage")) - 1)
			for _, c := range []struct {
				name   string
				labels map[string]string
				want   float64
			}{
				{"askbridge_platform_api_retries_total", map[string]string{"platform": "slack", "op": "chat.postMessage", "reason": "rate_limited"}, 1},
				{"askbridge_platform_api_calls_total", map[string]string{"platform": "slack", "op": "chat.postMessage", "result": "ok"}, calls},
				{"askbridge_platform_api_call_seconds", map[string]string{"platform": "slack", "op": "chat.postMessage"}, calls},
			} {
				if got, ok := apimetrics.Value(reg, c.name, c.labels); !ok || got != c.want {
					t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
				}
			}
			if n, _ := apimetrics.Value(reg, "askbridge_platform_api_calls_total", map[string]string{"platform": "slack", "op": "chat.postMessage", "result": "error"}); n != 0 {
				t.Error("a post that succeeded on its second try was counted as an error")
			}
		})
	}
}

func TestBoundedRetriesThenSourceUnreliable(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	for range 40 {
		fake.fail("chat.postMessage", 503, nil, "upstream down")
	}
	h := startBot(t, n, fake)
	h.bot.retry.Tries = 2
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	q := question("job-503", "q-503")
	q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0999", ThreadTS: "1600000000.000001"}}
	ev := askedEvent(q)
	// Last delivery: the failure is reported instead of retried forever.
	if err := h.bot.handleEvent(context.Background(), &ev, engine.Delivery{Attempt: 1, Last: true}); err != nil {
		t.Fatal(err)
	}
	d := deliveredTS(t, n, deliveries, "q-503")
	if d.OK || d.Failure == nil || d.Failure.Code != bridge.CodeSourceUnreliable || !d.Failure.Retryable {
		t.Fatalf("delivery: %+v %+v", d, d.Failure)
	}
	if got := len(fake.Calls("chat.postMessage")); got != 2 {
		t.Fatalf("%d tries, want the bounded 2", got)
	}
}

func TestPermanentErrorsAreTypedDeliveryFailures(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"channel_not_found": bridge.CodeReferenceUnresolved,
		"not_in_channel":    bridge.CodeAccessDenied,
		"missing_scope":     bridge.CodeCapabilityUnavailable,
		"invalid_auth":      bridge.CodeCapabilityUnavailable,
		"account_inactive":  bridge.CodeCapabilityUnavailable,
	}
	n := plainNATS(t)
	fake := newFakeSlack(t)
	startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	i := 0
	for code, want := range cases {
		i++
		id := fmt.Sprintf("q-perm-%d", i)
		fake.fail("chat.postMessage", 200, nil, `{"ok":false,"error":"`+code+`"}`)
		q := question("job-perm-"+strconv.Itoa(i), id)
		q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0NOPE", ThreadTS: "1600000000.000001"}}
		publishEvent(t, n, askedEvent(q))
		d := deliveredTS(t, n, deliveries, id)
		if d.OK || d.Failure == nil || d.Failure.Code != want || d.Failure.Retryable || d.Failure.Dependency != "slack" ||
			d.Failure.Operation != "chat.postMessage" || !strings.Contains(d.Failure.OperatorMessage, code) {
			t.Errorf("%s: %+v", code, d.Failure)
		}
		if strings.Contains(d.Failure.OperatorMessage, "xoxb") {
			t.Errorf("%s: token in the failure", code)
		}
	}
}

// TestFailureDetails checks the failures that name more than Slack's code:
// the scope a missing_scope needs, a thread_ts Slack does not know, a
// route channel askbridge would not send to, and Slack's rate_limited
// answer taken as a rate limit to wait out, not a refusal.
func TestFailureDetails(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	cases := []struct {
		body, channel, code, capability, message string
		retryable                                bool
	}{
		{`{"ok":false,"error":"missing_scope","needed":"chat:write","provided":"commands,im:write"}`, "C0777", bridge.CodeCapabilityUnavailable, "slack:chat:write",
			"Slack refused chat.postMessage in channel C0777: missing_scope (the app needs the scope chat:write; its token has commands,im:write)", false},
		{`{"ok":false,"error":"invalid_thread_ts"}`, "C0777", bridge.CodeReferenceUnresolved, "",
			"Slack refused chat.postMessage in channel C0777: invalid_thread_ts", false},
		{"", "general", bridge.CodeReferenceUnresolved, "",
			`"general" is not a Slack channel id (such as C0123); askbridge did not send the message.`, false},
	}
	for i, c := range cases {
		id := fmt.Sprintf("q-detail-%d", i)
		if c.body != "" {
			fake.fail("chat.postMessage", 200, nil, c.body)
		}
		q := question("job-detail-"+strconv.Itoa(i), id)
		q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: c.channel, ThreadTS: "1600000000.000001"}}
		publishEvent(t, n, askedEvent(q))
		d := deliveredTS(t, n, deliveries, id)
		if d.OK || d.Failure == nil || d.Failure.Code != c.code || d.Failure.RequiredCapability != c.capability ||
			d.Failure.OperatorMessage != c.message || d.Failure.Retryable != c.retryable {
			t.Errorf("%s: %+v", id, d.Failure)
		}
	}
	// rate_limited in a 200: tried again, and shown.
	fake.fail("chat.postMessage", 200, nil, `{"ok":false,"error":"rate_limited"}`)
	q := question("job-detail-rl", "q-detail-rl")
	q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0777", ThreadTS: "1600000000.000001"}}
	publishEvent(t, n, askedEvent(q))
	if d := deliveredTS(t, n, deliveries, "q-detail-rl"); !d.OK {
		t.Errorf("after rate_limited: %+v %+v", d, d.Failure)
	}
}

func TestChannelNotFoundFailsTheJob(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	h.fake.fail("chat.postMessage", 200, nil, `{"ok":false,"error":"channel_not_found"}`)
	q := question("job-cnf", "q-cnf")
	q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0GONE", ThreadTS: "1600000000.000001"}}
	publishQuestion(t, env, q)
	out := awaitOutcome(t, env, q)
	if out.Outcome != bridge.OutcomeFailed || out.Failure == nil || out.Failure.Code != bridge.CodeReferenceUnresolved {
		t.Fatalf("resume: %+v failure %+v", out, out.Failure)
	}
}
