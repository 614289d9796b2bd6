package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/internal/bench"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestBenchSlackAnswers429: with limits the bench's fake Slack refuses a
// chat.postMessage over a channel's pace with Slack's own 429 (status,
// Retry-After in seconds, {"ok":false,"error":"ratelimited"}), which
// slack-go reads as a rate limit with its wait; a call before the
// instant the 429 named is counted as an early retry, one after it is
// taken; other channels and other methods are not limited.
func TestBenchSlackAnswers429(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	limits := bench.NewSlackLimits(time.Second, 2, clock)
	fake, err := startBenchSlack(benchSlackOptions{countOnly: true, limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.close()

	post := func(method, channel string) (int, http.Header, string) {
		t.Helper()
		form := url.Values{"channel": {channel}, "text": {"hello"}, "token": {"xoxb-test"}}
		resp, err := http.PostForm(fake.url+"/api/"+method, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(body)
	}
	for i := range 2 {
		if code, _, body := post("chat.postMessage", "C1"); code != http.StatusOK || !strings.Contains(body, `"ok":true`) {
			t.Fatalf("post %d of the burst: %d %s", i, code, body)
		}
	}
	code, h, body := post("chat.postMessage", "C1")
	if code != http.StatusTooManyRequests || h.Get("Retry-After") != "1" || body != slackRateLimited || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Fatalf("over the limit: %d, Retry-After %q, Content-Type %q, body %s; want 429, 1, JSON %s", code, h.Get("Retry-After"), h.Get("Content-Type"), body, slackRateLimited)
	}
	if st := limits.Stats(); st.Limited != 1 || st.EarlyRetries != 0 {
		t.Fatalf("after one 429: %+v", st)
	}

	// slack-go reads the same answer as a rate limit with its wait.
	api := slack.New("xoxb-test", slack.OptionAPIURL(fake.url+"/api/"))
	_, _, err = api.PostMessage("C1", slack.MsgOptionText("hello", false))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != time.Second {
		t.Fatalf("slack-go read %v, want a RateLimitedError of 1s", err)
	}
	if st := limits.Stats(); st.EarlyRetries != 1 || st.EarlyChannels != 1 {
		t.Fatalf("a call before the Retry-After: %+v, want one early retry in one channel", st)
	}
	if code, _, _ := post("chat.postMessage", "C2"); code != http.StatusOK {
		t.Fatalf("another channel answered %d", code)
	}
	if code, _, _ := post("conversations.replies", "C1"); code != http.StatusOK {
		t.Fatalf("another method answered %d", code)
	}
	advance(time.Second)
	if code, _, body := post("chat.postMessage", "C1"); code != http.StatusOK {
		t.Fatalf("at the instant the 429 named: %d %s", code, body)
	}
	if st := limits.Stats(); st.EarlyRetries != 1 || st.Limited != 2 || st.Accepted != 4 {
		t.Fatalf("at the end: %+v, want 1 early retry, 2 refused, 4 taken", st)
	}
}

// askReportLines reads the bench's summary into label → value.
func askReportLines(report string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(report, "\n") {
		label, value, ok := strings.Cut(line, "  ")
		if ok && !strings.HasPrefix(line, "|") {
			out[label] = strings.TrimSpace(value)
		}
	}
	return out
}

// leadingNumber is the number a report value starts with.
func leadingNumber(t *testing.T, v string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(strings.Fields(v + " x")[0], 64)
	if err != nil {
		t.Fatalf("%q does not start with a number", v)
	}
	return f
}

func runBench(t *testing.T, args ...string) map[string]string {
	t.Helper()
	var out bytes.Buffer
	errOut := &testenv.LockedBuffer{}
	c := &cli{stdout: &out, stderr: errOut}
	if code := c.bench(context.Background(), args); code != exitOK {
		t.Fatalf("bench %v exited %d:\n%s\n%s", args, code, out.String(), errOut.String())
	}
	lines := askReportLines(out.String())
	for _, want := range []string{"questions/s, first publish to last card", "ask→card p50 / p99 / max", "JetStream writes a question",
		"baseline: JetStream publishes/s (sync interval)", "baseline: slack-go chat.postMessage/s, bare fake", "baseline: SQLite single-row commits/s"} {
		if lines[want] == "" {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(out.String(), "| questions | channels |") {
		t.Errorf("report lacks its markdown row:\n%s", out.String())
	}
	return lines
}

// TestBenchAsk: --ask shows every question's card once, and reports a
// rate, latencies, baselines and the service's own CPU and memory (a
// child process) that are numbers above zero.
func TestBenchAsk(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the service and the baselines")
	}
	r := runBench(t, "--ask", "200", "--child", "--sync", "interval", "--concurrency", "8")
	if r["cards shown"] != "all 200 (failed 0, not shown 0, second cards 0)" {
		t.Errorf("cards shown: %q", r["cards shown"])
	}
	for _, label := range []string{"questions/s, first publish to last card", "JetStream writes a question", "chat.postMessage accepted",
		"baseline: JetStream publishes/s (sync interval)", "baseline: slack-go chat.postMessage/s, bare fake", "baseline: SQLite single-row commits/s",
		"service CPU a question (user + system)", "service RSS at the end"} {
		if v := leadingNumber(t, r[label]); v <= 0 {
			t.Errorf("%s: %q, want above zero", label, r[label])
		}
	}
	p := strings.Split(r["ask→card p50 / p99 / max"], " / ")
	if len(p) != 3 {
		t.Fatalf("ask→card: %q", r["ask→card p50 / p99 / max"])
	}
	var lat [3]time.Duration
	for i, s := range p {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("ask→card %q: %q is not a positive duration", r["ask→card p50 / p99 / max"], s)
		}
		lat[i] = d
	}
	if lat[0] > lat[1] || lat[1] > lat[2] {
		t.Errorf("ask→card p50 / p99 / max out of order: %v", lat)
	}
	if _, ok := r["429s received"]; ok {
		t.Errorf("a run without limits reports 429s: %q", r["429s received"])
	}
}

// TestBenchAskSlackLimits: a burst over a few channels at Slack's pace is
// shown completely, and the report says how many 429s the service got
// and how many calls came early.
func TestBenchAskSlackLimits(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the service at Slack's pace for several seconds")
	}
	r := runBench(t, "--ask", "8", "--channels", "2", "--slack-limits", "--sync", "interval")
	if r["cards shown"] != "all 8 (failed 0, not shown 0, second cards 0)" {
		t.Errorf("cards shown: %q", r["cards shown"])
	}
	if !strings.Contains(r["fake Slack"], "Slack's rate limits") || !strings.HasSuffix(r["fake Slack"], "channels: 2") {
		t.Errorf("fake Slack: %q", r["fake Slack"])
	}
	// Two channels of four questions each: their posts (a card each, and
	// whatever else the adapter posts) 2 at once, then 1 a second.
	posts := int(leadingNumber(t, r["chat.postMessage accepted"]))
	if want := fmt.Sprintf("%v (the busiest channel's posts at its limit)", time.Duration(posts/2-2)*time.Second); posts < 8 || posts%2 != 0 || r["Slack's pace alone"] != want {
		t.Errorf("Slack's pace alone: %q with %d posts, want %q", r["Slack's pace alone"], posts, want)
	}
	leadingNumber(t, r["429s received"])
	if e := r["early retries (a call before its Retry-After)"]; !strings.HasSuffix(e, "of 2 channels)") {
		t.Errorf("early retries: %q", e)
	}
}

// TestBenchAskFlags: flags that do not fit --ask, or fit only it, are
// refused with a message naming them, before anything starts.
func TestBenchAskFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--ask", "10", "--duration", "5s"}, "--duration applies to the answer path"},
		{[]string{"--ask", "10", "--memprofile", "x"}, "--memprofile applies to the answer path"},
		{[]string{"--ask", "10", "--pending", "10"}, "--pending and --ask are two different measurements"},
		{[]string{"--channels", "50"}, "--channels applies to --ask only"},
		{[]string{"--slack-limits"}, "--slack-limits applies to --ask only"},
		{[]string{"--ask", "10", "--channels", "-1"}, "--channels must be 0 or more"},
		{[]string{"--ask", "10", "--slack-limits", "--slack-burst", "0"}, "--slack-burst and --concurrency 1 or more"},
		{[]string{"--ask", "10", "--child", "--cpuprofile", "x"}, "with --child the service runs in another"},
	}
	for _, tc := range cases {
		errOut := &testenv.LockedBuffer{}
		c := &cli{stdout: io.Discard, stderr: errOut}
		if code := c.bench(context.Background(), tc.args); code != exitConfig || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("bench %v: exit %d, %q; want a usage mistake (2) saying %q", tc.args, code, errOut.String(), tc.want)
		}
	}
	for _, tc := range []struct {
		o    benchOptions
		want int
	}{
		{benchOptions{ask: 1000, concurrency: 32, slackBurst: 2}, 256},
		{benchOptions{ask: 1000, concurrency: 32, slackLimits: true, slackBurst: 2}, 1000},
		{benchOptions{ask: 1000, concurrency: 64, slackLimits: true, slackBurst: 2, set: map[string]bool{"concurrency": true}}, 64},
	} {
		if got, err := askInFlight(tc.o); err != nil || got != tc.want {
			t.Errorf("in flight for %+v: %d, %v; want %d", tc.o, got, err, tc.want)
		}
	}
}
