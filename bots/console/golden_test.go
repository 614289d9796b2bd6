package console

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.png, the console's golden screenshots")

// goldenTolerance is the share of pixels a screenshot may differ in from
// its golden image (font hinting, anti-aliasing); goldenChannel how far a
// channel may move before its pixel counts as different.
const (
	goldenTolerance = 0.01
	goldenChannel   = 48
)

// fixedTimes is the moment every <time> shows in a screenshot: the test's
// questions are asked now, and a golden image cannot hold today's date.
// The tests check the times' words themselves.
const fixedTimes = `document.querySelectorAll("time").forEach(function (t) { t.textContent = "6 Dec 2026, 09:00 UTC"; }); true`

// unnamedControls lists the form controls with no label, aria-label or
// aria-labelledby, and the buttons and links with no text.
const unnamedControls = `Array.from(document.querySelectorAll("input:not([type=hidden]), select, textarea, button, a[href]")).filter(function (e) {
  if (e.matches("button, a")) { return e.textContent.trim() === "" && !e.getAttribute("aria-label"); }
  return !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.getAttribute("aria-labelledby");
}).map(function (e) { return e.outerHTML.slice(0, 80); })`

// golden compares a screenshot of the page with testdata/<name>.png, or
// writes it with -update.
func golden(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	// Each control a person can reach has a name a screen reader says.
	unnamed, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](unnamedControls))
	if err != nil || len(unnamed) > 0 {
		t.Errorf("%s: controls without a label: %v (%v)", name, unnamed, err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fixedTimes)); err != nil {
		t.Fatalf("%s: fix the times: %v", name, err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("%s: screenshot: %v", name, err)
	}
	path := filepath.Join("testdata", name+".png")
	if dir := os.Getenv("CONSOLE_SCREENSHOT_DIR"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, name+".png"), shot, 0o600)
	}
	if *update {
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: no golden image (run go test -run %s -update): %v", name, t.Name(), err)
	}
	if err := samePicture(want, shot); err != nil {
		got := filepath.Join(t.TempDir(), name+".png")
		_ = os.WriteFile(got, shot, 0o600)
		t.Errorf("%s: the page does not look as %s shows: %v (the page now: %s; -update rewrites the golden image)", name, path, err, got)
	}
}

// samePicture reports how two PNGs differ beyond the tolerance.
func samePicture(a, b []byte) error {
	ia, err := png.Decode(bytes.NewReader(a))
	if err != nil {
		return fmt.Errorf("golden image: %w", err)
	}
	ib, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("screenshot: %w", err)
	}
	if ia.Bounds() != ib.Bounds() {
		return fmt.Errorf("size %v, golden %v", ib.Bounds().Size(), ia.Bounds().Size())
	}
	r := ia.Bounds()
	differ := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if !near(ia, ib, x, y) {
				differ++
			}
		}
	}
	if share := float64(differ) / float64(r.Dx()*r.Dy()); share > goldenTolerance {
		return fmt.Errorf("%.2f%% of the pixels differ (at most %.2f%% may)", 100*share, 100*goldenTolerance)
	}
	return nil
}

func near(a, b image.Image, x, y int) bool {
	r1, g1, b1, _ := a.At(x, y).RGBA()
	r2, g2, b2, _ := b.At(x, y).RGBA()
	for _, d := range []int{int(r1>>8) - int(r2>>8), int(g1>>8) - int(g2>>8), int(b1>>8) - int(b2>>8)} {
		if d > goldenChannel || d < -goldenChannel {
			return false
		}
	}
	return true
}
