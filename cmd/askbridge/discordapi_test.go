package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// discordAPI is the one loopback Discord API of this test binary.
// discordgo's endpoints are package variables, which the Discord adapter
// points at ASK_DISCORD_API_URL, so every service a test starts with
// Discord names this one base; each test serves its own fake Discord
// behind it, reached through the bot token of its own that every request
// carries ("Authorization: Bot <token>"), and so tests run side by side.
var discordAPI = &discordRouter{bots: map[string]http.Handler{}}

type discordRouter struct {
	srv *httptest.Server

	mu   sync.Mutex
	bots map[string]http.Handler // Authorization header → the test's fake
	n    int
}

func (d *discordRouter) start() {
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		h := d.bots[r.Header.Get("Authorization")]
		d.mu.Unlock()
		if h == nil {
			// As Discord answers a request without a valid bot token.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"message": "401: Unauthorized", "code": 0}`))
			return
		}
		h.ServeHTTP(w, r)
	}))
}

// add serves the requests of a bot token of the test's own with h (its
// paths start with /api/v10/) until the test ends, and returns the token
// and the base to give the service (ASK_DISCORD_API_URL).
func (d *discordRouter) add(t *testing.T, h http.Handler) (token, apiURL string) {
	d.mu.Lock()
	d.n++
	token = fmt.Sprintf("test-discord-token-%d", d.n)
	d.bots["Bot "+token] = h
	d.mu.Unlock()
	t.Cleanup(func() {
		d.mu.Lock()
		delete(d.bots, "Bot "+token)
		d.mu.Unlock()
	})
	return token, d.srv.URL + "/api/v10/"
}
