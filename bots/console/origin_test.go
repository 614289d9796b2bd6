package console

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/testenv"
)

func TestSameOrigin(t *testing.T) {
	t.Parallel()
	c := &Console{signer: Signer{PublicURL: "https://ask.example.com", Secret: []byte(testSecret)}}
	cases := []struct {
		name   string
		host   string
		origin string
		site   string
		want   bool
	}{
		{"no headers (non-browser client; the form token still applies)", "127.0.0.1:8080", "", "", true},
		{"same host", "127.0.0.1:8080", "http://127.0.0.1:8080", "same-origin", true},
		{"public URL behind a proxy", "10.0.0.5:8080", "https://ask.example.com", "same-origin", true},
		{"public host over plain http", "10.0.0.5:8080", "http://ask.example.com", "", false},
		{"user typed it", "127.0.0.1:8080", "", "none", true},
		{"opaque origin, same-origin fetch", "127.0.0.1:8080", "null", "same-origin", true},
		{"opaque origin alone", "127.0.0.1:8080", "null", "", false},
		{"cross-site", "127.0.0.1:8080", "https://evil.example", "cross-site", false},
		{"same-site subdomain", "ask.example.com", "https://evil.example.com", "same-site", false},
		{"foreign origin claiming same-origin", "127.0.0.1:8080", "https://evil.example", "same-origin", false},
		{"garbage origin", "127.0.0.1:8080", "::not a url", "", false},
	}
	for _, tc := range cases {
		r := httptest.NewRequest(http.MethodPost, "http://"+tc.host+"/console/q/a/b/c", nil)
		r.Host = tc.host
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if tc.site != "" {
			r.Header.Set("Sec-Fetch-Site", tc.site)
		}
		if got := c.sameOrigin(r); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestOutcomeCacheIsBounded(t *testing.T) {
	t.Parallel()
	oc := newOutcomeCache(3, time.Hour, nil, nil)
	for _, id := range []string{"a", "b", "c", "d"} {
		oc.put(id, &outcome{identity: id, at: time.Now()})
	}
	if _, ok := oc.get("a"); ok {
		t.Error("the oldest entry outlived the bound")
	}
	for _, id := range []string{"b", "c", "d"} {
		if o, ok := oc.get(id); !ok || o.identity != id {
			t.Errorf("entry %s lost", id)
		}
	}
	old := newOutcomeCache(10, time.Minute, nil, nil)
	old.put("x", &outcome{at: time.Now().Add(-2 * time.Minute)})
	if _, ok := old.get("x"); ok {
		t.Error("an expired entry is still served")
	}
	old.put("y", &outcome{at: time.Now()})
	if len(old.items) != 1 || len(old.order) != 1 {
		t.Errorf("expired entries not evicted: %d items, %d in order", len(old.items), len(old.order))
	}
}

func TestPanicBecomesAnErrorPage(t *testing.T) {
	t.Parallel()
	n := startNATS(t)
	logs := &testenv.LockedBuffer{}
	c, err := New(Options{NATS: n, Signer: Signer{Secret: []byte(testSecret)}, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h := c.wrap(func(http.ResponseWriter, *http.Request) { panic("boom at handler.go:42") })
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodGet, "/console/", nil))
	body := rec.Body.String()
	if rec.Code != http.StatusInternalServerError || !strings.Contains(body, "Something went wrong") || strings.Contains(body, "boom") || strings.Contains(body, "goroutine") {
		t.Errorf("status %d\n%s", rec.Code, body)
	}
	if !strings.Contains(logs.String(), "boom at handler.go:42") {
		t.Error("the panic was not logged")
	}
}
