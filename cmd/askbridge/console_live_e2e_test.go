package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/internal/testenv/browser"
)

// TestConsoleUpdatesLiveOnASlackClick: console:alice keeps her inbox and
// a question open in Chromium while kevin answers the question with a
// button on its Slack card (a signed click through the Slack adapter, as
// Slack sends it); both pages change without a reload.
func TestConsoleUpdatesLiveOnASlackClick(t *testing.T) {
	t.Parallel()
	chromium := browser.Start(t)
	r := startRace(t)
	q := raceQuestion("job-live", "q-live")
	ts, _ := r.ask(q)

	signer := console.Signer{PublicURL: "http://askbridge.test", Secret: []byte(raceConsoleKey)}
	local := func(link string) string { return r.base + strings.TrimPrefix(link, "http://askbridge.test") }
	ctx, cancel := context.WithTimeout(chromium, 90*time.Second)
	defer cancel()
	inbox, cancelInbox := chromedp.NewContext(ctx)
	defer cancelInbox()
	page, cancelPage := chromedp.NewContext(ctx)
	defer cancelPage()
	tabs := map[string]context.Context{"inbox": inbox, "question": page}
	links := map[string]string{"inbox": signer.ListURL("console:alice", time.Hour),
		"question": signer.QuestionURL("console:alice", q.Tenant, q.JobID, q.QuestionID, time.Hour)}
	for name, tab := range tabs {
		// A mark on each window: a reload would lose it.
		if err := chromedp.Do(tab, chromedp.Navigate(local(links[name])), chromedp.WaitVisible(chromedp.CSS("body[data-live-open]"))); err != nil {
			t.Fatalf("open the %s: %v", name, err)
		}
		if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](`window.askbridgeNotReloaded = true; true`)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := chromedp.Run(inbox, chromedp.Evaluate[float64](`document.querySelectorAll("a.item-title[href*='q-live']").length`)); err != nil || n != 1 {
		t.Fatalf("the inbox lists the question %v times (%v)", n, err)
	}

	if code, body := r.signedSlack(r.slackClick("U0KEV", "trig-live", ts, "ask.acme.job-live.q-live.1", "choice.1", "blue"), nil); code != 200 {
		t.Fatalf("the Slack click: %d %s", code, body)
	}

	testenv.CheckFor(t, testenv.Patience, 50*time.Millisecond, func() error {
		n, err := chromedp.Run(inbox, chromedp.Evaluate[float64](`document.querySelectorAll("a.item-title[href*='q-live']").length`))
		if err != nil || n != 0 {
			return errors.New("the inbox still lists the answered question")
		}
		by, err := chromedp.Run(page, chromedp.Evaluate[string](`(document.querySelector("#outcome .by") || {}).textContent || ""`))
		if err != nil || !strings.HasPrefix(strings.TrimSpace(by), "By slack:U0KEV") || !strings.Contains(by, "via slack") {
			return errors.New("the question page does not say who answered: " + by)
		}
		return nil
	})
	for name, tab := range tabs {
		if kept, err := chromedp.Run(tab, chromedp.Evaluate[bool](`window.askbridgeNotReloaded === true`)); err != nil || !kept {
			t.Errorf("the %s page was reloaded (%v)", name, err)
		}
	}
	if answer, err := chromedp.Run(page, chromedp.Text(chromedp.CSS("#outcome .answer"))); err != nil || strings.TrimSpace(answer) != "blue" {
		t.Errorf("the answer shown: %q (%v)", answer, err)
	}
}
