// Package browser starts headless Chromium for the tests that look at the
// console as a person does (chromedp); it skips them where none is
// installed.
package browser

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Find returns Chromium's path, or skips the test when no browser is
// installed.
func Find(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium installed (apt-get install -y chromium): skipping the browser test")
	return ""
}

// Start starts headless Chromium with a fresh profile, sized like a
// phone, for the test's life; its context has run once, so a caller may
// derive timeouts from it.
func Start(t testing.TB) context.Context {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(Find(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")),
		chromedp.WindowSize(412, 1400),
	)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		// Closed, Chromium removes its temporary directories; killed, as
		// a plain cancel does, it leaves them in $TMPDIR, a few a test.
		closing, stop := context.WithTimeout(ctx, 10*time.Second)
		defer stop()
		if err := chromedp.Cancel(closing); err != nil {
			t.Logf("closing chromium: %v", err)
		}
		cancel()
	})
	// The first Run starts the browser; it must not run under a timeout.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}
