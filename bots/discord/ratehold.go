package discord

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rateHold keeps the bot's requests from going out while Discord says to
// wait, without sleeping on them: a request made while a hold lasts is
// answered here, without reaching Discord, with the 429 Discord would
// send (the time left in retry_after), so the bot waits or retries its
// event later as for any 429 (see call and process).
//
//   - A 429 marked global (X-RateLimit-Global, or X-RateLimit-Scope:
//     global) holds every route for its Retry-After; discordgo holds
//     nothing, as a global 429 has no X-RateLimit-Reset-After. Follow-ups
//     on interactions go on: Discord does not count them.
//   - Any other 429 holds its route (method and path). Its bucket headers
//     are taken off before discordgo reads them: discordgo would sleep the
//     route's next request until the reset, however long, and hold every
//     event behind it.
type rateHold struct {
	next http.RoundTripper

	mu     sync.Mutex
	global time.Time
	routes map[string]time.Time
}

func routeKey(r *http.Request) string { return r.Method + " " + r.URL.Path }

func (h *rateHold) RoundTrip(r *http.Request) (*http.Response, error) {
	interaction := strings.Contains(r.URL.Path, "/webhooks/")
	key := routeKey(r)
	now := time.Now()
	h.mu.Lock()
	until := h.routes[key]
	if !interaction && h.global.After(until) {
		until = h.global
	}
	for k, t := range h.routes { // forget the holds that are over
		if !t.After(now) {
			delete(h.routes, k)
		}
	}
	h.mu.Unlock()
	if wait := until.Sub(now); wait > 0 {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return heldResponse(r, wait), nil
	}
	resp, err := h.next.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests {
		return resp, err
	}
	// The body's retry_after is exact; the Retry-After header is rounded
	// up to whole seconds.
	secs, perr := strconv.ParseFloat(strings.TrimSpace(resp.Header.Get("Retry-After")), 64)
	raw, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	var body struct {
		RetryAfter *float64 `json:"retry_after"`
	}
	if rerr == nil && json.Unmarshal(raw, &body) == nil && body.RetryAfter != nil {
		secs, perr = *body.RetryAfter, nil
	}
	global := resp.Header.Get("X-RateLimit-Global") != "" || strings.EqualFold(resp.Header.Get("X-RateLimit-Scope"), "global")
	for _, k := range []string{"X-RateLimit-Remaining", "X-RateLimit-Reset", "X-RateLimit-Reset-After"} {
		resp.Header.Del(k)
	}
	if perr != nil || secs <= 0 {
		return resp, nil
	}
	until = time.Now().Add(time.Duration(secs * float64(time.Second)))
	h.mu.Lock()
	if global {
		if until.After(h.global) {
			h.global = until
		}
	} else {
		if h.routes == nil {
			h.routes = map[string]time.Time{}
		}
		if until.After(h.routes[key]) {
			h.routes[key] = until
		}
	}
	h.mu.Unlock()
	return resp, nil
}

// heldResponse is the 429 a held request gets.
func heldResponse(r *http.Request, wait time.Duration) *http.Response {
	body := fmt.Sprintf(`{"message":"You are being rate limited.","retry_after":%.3f,"global":false}`, wait.Seconds())
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Retry-After", strconv.FormatInt(int64(wait/time.Second)+1, 10))
	return &http.Response{
		Status: "429 Too Many Requests", StatusCode: http.StatusTooManyRequests,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r,
	}
}
