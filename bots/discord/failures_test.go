package discord

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge/bots/apimetrics"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

func TestMissingPermissionsReportsAccessDenied(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/" + channelA + "/messages", Status: 403, Code: 50013, Times: -1})
	h.publishEvent(asked(colorQuestion()))
	d := h.waitDelivery()
	if d.OK || d.Failure == nil || d.Failure.Code != bridge.CodeAccessDenied || d.Failure.Retryable || d.Platform != "discord" ||
		d.QuestionID != "q-1" || d.TaskVersion != 3 || d.Message != nil {
		t.Fatalf("delivery = %+v (failure %+v)", d, d.Failure)
	}
	if !strings.Contains(d.Failure.OperatorMessage, channelA) || !strings.Contains(d.Failure.RequiredCapability, "Send Messages") {
		t.Fatalf("failure does not say what to fix: %+v", d.Failure)
	}
	if strings.Contains(d.Failure.OperatorMessage, "error 50013") {
		t.Fatalf("failure quotes Discord's response: %q", d.Failure.OperatorMessage)
	}
	// Not retried: one post only.
	h.markerEvent()
	if n := len(h.fake.requests("POST", "/channels/"+channelA+"/messages")); n != 1 {
		t.Fatalf("%d posts, want 1 (a permission error is not retried)", n)
	}
}

func TestFailureCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status, code int
		want         string
	}{
		{403, 50001, bridge.CodeAccessDenied},
		{404, 10003, bridge.CodeReferenceUnresolved},
		{401, 0, bridge.CodeAccessDenied},
		{400, 50035, bridge.CodeCapabilityUnavailable},
	} {
		t.Run(fmt.Sprint(tc.code), func(t *testing.T) {
			t.Parallel()
			h := start(t, harnessOptions{})
			h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/", Status: tc.status, Code: tc.code, Times: -1})
			h.publishEvent(asked(colorQuestion()))
			d := h.waitDelivery()
			if d.OK || d.Failure == nil || d.Failure.Code != tc.want {
				t.Fatalf("HTTP %d code %d: delivery %+v (failure %+v), want %s", tc.status, tc.code, d, d.Failure, tc.want)
			}
			if strings.Contains(d.Failure.OperatorMessage, testToken) {
				t.Fatal("the failure carries the token")
			}
		})
	}
}

func TestNonNumericChannelIsUnresolved(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := colorQuestion()
	q.Route = &bridge.Route{Discord: &bridge.DiscordRoute{ChannelID: "#general"}}
	h.publishEvent(asked(q))
	if d := h.waitDelivery(); d.OK || d.Failure.Code != bridge.CodeReferenceUnresolved {
		t.Fatalf("delivery = %+v", d)
	}
	if n := len(h.fake.requests("POST", "/channels/")); n != 0 {
		t.Fatalf("%d posts for a channel that is no id", n)
	}
}

func TestNoChannelNoReport(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{mutate: func(o *Options) { o.DefaultChannel = "" }})
	h.publishEvent(asked(colorQuestion())) // no Discord route, no default
	h.markerEvent()                        // routed: processed after the first
	for _, d := range h.deliveriesNow() {
		if d.JobID == "job-1" {
			t.Fatalf("a question not meant for Discord got a report: %+v", d)
		}
	}
	if n := len(h.fake.requests("POST", "/channels/"+channelA)); n != 0 {
		t.Fatalf("%d posts", n)
	}
}

func TestRateLimitIsBounded(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	h := start(t, harnessOptions{mutate: func(o *Options) { o.Registerer = reg }})
	// Two 429s, then success: retried after Discord's retry_after.
	h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/" + channelA + "/messages", Status: 429, RetryAfter: 0.05, Times: 2})
	h.publishEvent(asked(colorQuestion()))
	d := h.waitDelivery()
	if !d.OK {
		t.Fatalf("delivery after two 429s = %+v (failure %+v)", d, d.Failure)
	}
	if n := len(h.fake.requests("POST", "/channels/"+channelA+"/messages")); n != 4 { // 3 posts, 1 thread start
		t.Fatalf("%d requests, want 3 posts and a thread start", n)
	}
	// /metrics: one post that succeeded after two rate-limited tries.
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"askbridge_platform_api_retries_total", map[string]string{"platform": "discord", "op": "post question", "reason": "rate_limited"}, 2},
		{"askbridge_platform_api_calls_total", map[string]string{"platform": "discord", "op": "post question", "result": "ok"}, 1},
		{"askbridge_platform_api_call_seconds", map[string]string{"platform": "discord", "op": "post question"}, 1},
	} {
		if got, ok := apimetrics.Value(reg, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
}

func TestRateLimitForeverEndsInAFailure(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/" + channelA + "/messages", Status: 429, RetryAfter: 0.01, Times: -1})
	h.publishEvent(asked(colorQuestion()))
	var d bridge.Delivery
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		ds := h.deliveriesNow()
		if len(ds) == 0 {
			return fmt.Errorf("no report yet (%d posts so far)", len(h.fake.requests("POST", "/channels/")))
		}
		d = ds[0]
		return nil
	})
	if d.OK || d.Failure.Code != bridge.CodeSourceUnreliable || !d.Failure.Retryable {
		t.Fatalf("delivery = %+v (failure %+v)", d, d.Failure)
	}
	// Bounded: (1 + rateLimitRetries) posts per try, maxEventAttempts tries.
	if n, most := len(h.fake.requests("POST", "/channels/")), (1+rateLimitRetries)*maxEventAttempts; n > most {
		t.Fatalf("%d posts, want at most %d", n, most)
	}
}

// TestLongRetryAfterIsNotWaited checks a 429 asking for a longer wait
// than the bot sleeps in a call does not hold the other events, and that
// the event is tried again no sooner than Discord asked: a try before
// retry_after would be refused again (and counts against the bot), and
// retries spent that way would fail the question though Discord only
// asked to wait.
func TestLongRetryAfterIsNotWaited(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{tweak: func(b *Bot) { b.rateLimitWait = 50 * time.Millisecond }})
	const channelB = "1000000000000000002"
	h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/" + channelA + "/messages", Status: 429, RetryAfter: 1.5, Times: 1})
	h.publishEvent(asked(colorQuestion()))
	other := colorQuestion()
	other.JobID, other.Question = "job-2", "Which font should the report use?"
	other.Route = &bridge.Route{Discord: &bridge.DiscordRoute{ChannelID: channelB}}
	h.publishEvent(asked(other))
	// The wait is not slept in the call: the next event goes meanwhile.
	h.posted(channelB, 1)
	card := h.posted(channelA, 1)
	var posts []fakeReq
	for _, r := range h.fake.requests("POST", "/channels/"+channelA+"/messages") {
		if strings.HasSuffix(r.Path, "/messages") {
			posts = append(posts, r)
		}
	}
	if len(posts) < 2 {
		t.Fatalf("%d posts in %s, want the rate-limited one and its retry", len(posts), channelA)
	}
	if gap := posts[1].At.Sub(posts[0].At); gap < 1500*time.Millisecond {
		t.Fatalf("the card was posted again %v after a 429 asking to wait 1.5s", gap)
	}
	if n := len(posts); n != 2 {
		t.Fatalf("%d posts in %s, want 2 (one refused, one after retry_after)", n, channelA)
	}
	if d := h.waitDelivery(); !d.OK || card == nil {
		t.Fatalf("delivery = %+v", d)
	}
}

// TestGlobalRateLimitHoldsEveryRoute checks a 429 of Discord's global rate
// limit holds the bot's requests on every route, not only the one that got
// it, until its retry_after has passed; then both cards are posted. (The
// other job's event comes after the 429: events of two jobs are handled
// side by side, and a request already on its way is not held.)
func TestGlobalRateLimitHoldsEveryRoute(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{tweak: func(b *Bot) { b.rateLimitWait = 50 * time.Millisecond }})
	const channelB = "1000000000000000002"
	h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/" + channelA + "/messages", Status: 429, RetryAfter: 1.5, Global: true, Times: 1})
	h.publishEvent(asked(colorQuestion()))
	// The bot has read the 429 (and holds every route) once it puts the
	// event off; the fake records the post before it answers.
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if !strings.Contains(h.logs.String(), "discord: event deferred") {
			return fmt.Errorf("the rate-limited post is not put off yet")
		}
		return nil
	})
	other := colorQuestion()
	other.JobID, other.Question = "job-2", "Which font should the report use?"
	other.Route = &bridge.Route{Discord: &bridge.DiscordRoute{ChannelID: channelB}}
	h.publishEvent(asked(other))
	h.posted(channelA, 1)
	h.posted(channelB, 1)
	limited := h.fake.requests("POST", "/channels/"+channelA+"/messages")[0]
	for _, r := range h.fake.requests("", "") {
		if r.At.After(limited.At) && r.At.Sub(limited.At) < 1500*time.Millisecond {
			t.Errorf("%s %s sent %v after a global 429 asking to wait 1.5s", r.Method, r.Path, r.At.Sub(limited.At))
		}
	}
}

// TestGlobalRateLimitLetsFollowUpsGo checks a refusal's follow-up, on an
// interaction endpoint Discord keeps out of the global rate limit, is not
// held by it.
func TestGlobalRateLimitLetsFollowUpsGo(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{tweak: func(b *Bot) { b.rateLimitWait = 50 * time.Millisecond }})
	h.publishEvent(asked(colorQuestion()))
	msg := h.posted(channelA, 1)
	h.interact(h.click(stranger, findComponent(t, msg, "red")["custom_id"].(string)))
	at := h.waitAttempts(1)[0]
	h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/", Status: 429, RetryAfter: 30, Global: true, Times: 1})
	dm := colorQuestion()
	h.publishEvent(bridge.Event{Type: bridge.EventReminded, EventID: "ob-global", Tenant: "acme", JobID: "job-1", QuestionID: "q-1",
		TaskVersion: 3, Step: bridge.TargetAnswerers, Targets: []string{"discord:" + kevin.ID}, Question: &dm})
	h.refuse(at, bridge.RefusedForbidden, "You can't answer this question: it asks discord:"+kevin.ID+".")
	if f := h.fake.followups(t, at.ReplyTo["token"], 1)[0].JSON(t); f["flags"] != float64(64) {
		t.Fatalf("follow-up = %v", f)
	}
}

// TestRouteRateLimitDoesNotStallOtherEvents checks a 429 on one route
// asking for a long wait holds that route only: the next event for the
// same route is put off (not slept on, holding every event behind it),
// and an event for another route goes at once.
func TestRouteRateLimitDoesNotStallOtherEvents(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{tweak: func(b *Bot) { b.rateLimitWait = 50 * time.Millisecond }})
	const channelB = "1000000000000000002"
	// The wait asked for is long enough that, however busy the machine,
	// the other channel's card goes well before it ends: what is checked
	// is the order of the posts, never how long one took.
	const retryAfter = 8
	h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/" + channelA + "/messages", Status: 429, RetryAfter: retryAfter, Times: 1})
	h.publishEvent(asked(colorQuestion()))
	same := colorQuestion()
	same.JobID, same.Question = "job-2", "Which size should the cover be?"
	h.publishEvent(asked(same))
	other := colorQuestion()
	other.JobID, other.Question = "job-3", "Which font should the report use?"
	other.Route = &bridge.Route{Discord: &bridge.DiscordRoute{ChannelID: channelB}}
	h.publishEvent(asked(other))
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if len(h.fake.cardPosts(other.Question)) == 0 {
			return fmt.Errorf("the card for %s is not posted", channelB)
		}
		return nil
	})
	otherPosted := h.fake.cardPosts(other.Question)[0].At
	h.waitCard(same.Question)
	h.waitCard(colorQuestion().Question)
	var posts []fakeReq
	for _, r := range h.fake.requests("POST", "/channels/"+channelA+"/messages") {
		if strings.HasSuffix(r.Path, "/messages") {
			posts = append(posts, r)
		}
	}
	for _, r := range posts[1:] {
		if gap := r.At.Sub(posts[0].At); gap < retryAfter*time.Second {
			t.Errorf("a post in %s %v after a 429 asking to wait %d s", channelA, gap, retryAfter)
		}
		if !otherPosted.Before(r.At) {
			t.Errorf("the card for %s was posted only after %s's wait for its 429 ended: it waited behind it", channelB, channelA)
		}
	}
}
