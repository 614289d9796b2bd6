package console

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// inZone runs the tab's pages in an IANA time zone, as a reader there
// sees them.
func inZone(zone string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone})
		return err
	})
}

// TestBrowserShowsTimesInTheReadersZone: the server writes each <time>
// in UTC; a reader in Tokyo sees it in Tokyo's time (UTC+9, no summer
// time), zone named.
func TestBrowserShowsTimesInTheReadersZone(t *testing.T) {
	t.Parallel()
	browser := startBrowser(t)
	h, env := inboxEnv(t)
	q := inboxQuestions()[0]
	ask(t, h, env, q)
	ctx, cancel := context.WithTimeout(browser, 90*time.Second)
	defer cancel()
	browse(t, h, ctx, "open the question in Tokyo", inZone("Asia/Tokyo"),
		chromedp.Navigate(h.questionURL("console:olivia", q)), chromedp.WaitVisible(chromedp.CSS("body[data-live-ready]")))
	times, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](
		`Array.from(document.querySelectorAll("time[datetime]")).map(function (t) { return [t.getAttribute("datetime"), t.textContent]; })`))
	if err != nil || len(times) < 2 {
		t.Fatalf("the page's times: %q (%v)", times, err)
	}
	tokyo := time.FixedZone("Tokyo", 9*3600)
	for _, tm := range times {
		at, err := time.Parse(time.RFC3339, tm[0])
		if err != nil {
			t.Fatalf("datetime %q: %v", tm[0], err)
		}
		local := at.In(tokyo)
		if text := tm[1]; !strings.HasPrefix(text, strconv.Itoa(local.Day())+" ") || !strings.Contains(text, local.Format("15:04")) ||
			!strings.Contains(text, "GMT+9") || strings.Contains(text, "UTC") {
			t.Errorf("<time datetime=%q> reads %q; in Tokyo it is %s", tm[0], text, local.Format("2 Jan 2006, 15:04 GMT+9"))
		}
	}
}

// TestBrowserAnswersByKeyboard: Tab reaches the answer before any other
// control, typing fills it, a live update (bob asks dana to answer too,
// from his own page) leaves the focus and the half-typed answer where
// they are, and Enter sends it.
func TestBrowserAnswersByKeyboard(t *testing.T) {
	t.Parallel()
	browser := startBrowser(t)
	h, env := inboxEnv(t)
	q := bridge.Question{Tenant: "acme", JobID: "job-k", QuestionID: "q-name", TaskVersion: 1,
		Question: "What should the new dashboard be called?", Answerers: []string{"console:olivia"},
		Fields: []bridge.Field{{Name: "name", Kind: bridge.FieldText, Label: "Name", Required: true}}}
	resumes := env.Record(t, bridge.StreamResumes, bridge.ResumeSubject(q.Tenant, q.JobID))
	ask(t, h, env, q)
	ctx, cancel := context.WithTimeout(browser, 90*time.Second)
	defer cancel()
	olivia, cancelOlivia := chromedp.NewContext(ctx)
	defer cancelOlivia()
	bob, cancelBob := chromedp.NewContext(ctx)
	defer cancelBob()

	browse(t, h, olivia, "open the question", chromedp.Navigate(h.questionURL("console:olivia", q)),
		chromedp.WaitVisible(chromedp.CSS("body[data-live-open]")))
	if _, err := chromedp.Run(olivia, chromedp.Evaluate[bool](`window.askbridgeNotReloaded = true; true`)); err != nil {
		t.Fatal(err)
	}
	focused := func() string {
		t.Helper()
		s, err := chromedp.Run(olivia, chromedp.Evaluate[string](`(document.activeElement.tagName + "#" + document.activeElement.id).toLowerCase()`))
		if err != nil {
			t.Fatalf("focus: %v", err)
		}
		return s
	}
	var passed []string
	for focused() != "input#f-name" {
		if len(passed) == 30 {
			t.Fatalf("30 Tabs never reached the answer; they passed %v", passed)
		}
		browse(t, h, olivia, "press Tab", chromedp.KeyEvent(kb.Tab))
		if f := focused(); f != "input#f-name" {
			passed = append(passed, f)
		}
	}
	for _, f := range passed {
		if !strings.HasPrefix(f, "a#") && f != "body#" {
			t.Errorf("Tab reached %s before the answer (all: %v)", f, passed)
		}
	}
	browse(t, h, olivia, "type", chromedp.KeyEvent("Orion"))

	// Bob, on his own page, asks dana to answer too: olivia's page
	// shows it live.
	browse(t, h, bob, "bob delegates", chromedp.Navigate(h.questionURL("console:bob", q)), chromedp.WaitVisible(chromedp.ID("delegate-to")),
		chromedp.SetValue(chromedp.ID("delegate-to"), "console:dana"),
		chromedp.Click(chromedp.CSS(`#delegate-form button[value="delegate"]`)))
	testenv.CheckFor(t, testenv.Patience, 50*time.Millisecond, func() error {
		facts, err := chromedp.Run(olivia, chromedp.Evaluate[[]string](metaFacts))
		if err != nil || !strings.Contains(strings.Join(facts, "\n"), "console:dana") {
			return fmt.Errorf("olivia's page does not name dana: %q (%v)", facts, err)
		}
		return nil
	})
	if note := textOf(t, olivia, "#live-note"); note != "The question's status changed." {
		t.Errorf("live note %q", note)
	}
	if f := focused(); f != "input#f-name" {
		t.Fatalf("after the live update the focus is on %s", f)
	}
	if v, err := chromedp.Run(olivia, chromedp.Value(chromedp.ID("f-name"))); err != nil || v != "Orion" {
		t.Fatalf("after the live update the answer reads %q (%v)", v, err)
	}

	browse(t, h, olivia, "press Enter", chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.ID("outcome-h")))
	if got := textOf(t, olivia, "#outcome .answer"); got != "name: Orion" {
		t.Errorf("answer shown %q", got)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if resumes.Len() == 0 {
			return errors.New("the agent has no resume yet")
		}
		return nil
	})
}
