package discord

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// globalHold keeps the bot's requests from going out while Discord's
// global rate limit lasts. A 429 marked global (X-RateLimit-Global, or
// X-RateLimit-Scope: global) holds every route for its Retry-After;
// discordgo holds only the route that got it, and only when the 429 has
// X-RateLimit-Reset-After, which a global one has not. A request made
// while the hold lasts is answered here, without reaching Discord, with
// the 429 Discord would send (the time left in retry_after), so the bot
// waits or retries its event later as for any 429. Follow-ups on
// interactions go on: Discord does not count them.
type globalHold struct {
	next  http.RoundTripper
	until atomic.Int64 // Unix nanoseconds
}

func (g *globalHold) RoundTrip(r *http.Request) (*http.Response, error) {
	// Interaction endpoints (the bot's follow-ups) are not bound to the
	// global rate limit.
	interaction := strings.Contains(r.URL.Path, "/webhooks/")
	if wait := time.Until(time.Unix(0, g.until.Load())); wait > 0 && !interaction {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return heldResponse(r, wait), nil
	}
	resp, err := g.next.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests {
		return resp, err
	}
	if resp.Header.Get("X-RateLimit-Global") == "" && !strings.EqualFold(resp.Header.Get("X-RateLimit-Scope"), "global") {
		return resp, nil
	}
	secs, perr := strconv.ParseFloat(strings.TrimSpace(resp.Header.Get("Retry-After")), 64)
	if perr == nil && secs > 0 {
		until := time.Now().Add(time.Duration(secs * float64(time.Second))).UnixNano()
		for {
			cur := g.until.Load()
			if cur >= until || g.until.CompareAndSwap(cur, until) {
				break
			}
		}
	}
	return resp, nil
}

// heldResponse is the 429 a held request gets.
func heldResponse(r *http.Request, wait time.Duration) *http.Response {
	body := fmt.Sprintf(`{"message":"You are being rate limited.","retry_after":%.3f,"global":true}`, wait.Seconds())
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Retry-After", strconv.FormatInt(int64(wait.Round(time.Second)/time.Second)+1, 10))
	h.Set("X-RateLimit-Global", "true")
	h.Set("X-RateLimit-Scope", "global")
	return &http.Response{
		Status: "429 Too Many Requests", StatusCode: http.StatusTooManyRequests,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r,
	}
}
