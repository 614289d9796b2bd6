package console

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestBrowserKeepsAnUnreadableNumber checks a number the browser cannot
// read ("1e", "3-", "2,5" typed into the optional Copies field) is reported
// under the field with what was typed, as every problem is, and the answer
// is not sent without it.
func TestBrowserKeepsAnUnreadableNumber(t *testing.T) {
	browser := startBrowser(t)
	h, env := newEnvHarness(t, testenv.Options{})
	q := reportQuestion("job-number")
	resumes := env.Record(t, bridge.StreamResumes, bridge.ResumeSubject(q.Tenant, q.JobID))
	ask(t, h, env, q)
	link := h.questionURL("console:alice", q)

	ctx, cancel := context.WithTimeout(browser, 60*time.Second)
	defer cancel()
	for _, typed := range []string{"1e", "3-", "2,5"} {
		if err := chromedp.Do(ctx,
			chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("f-on")),
			chromedp.SetValue(chromedp.ID("f-on"), "2026-10-20"),
			chromedp.SendKeys(chromedp.ID("f-copies"), typed),
			chromedp.Click(chromedp.CSS(`#answer-form button[value="answer"]`)),
			chromedp.WaitVisible(chromedp.CSS("#f-copies-err, #outcome-h")),
		); err != nil {
			t.Fatalf("%q: %v", typed, err)
		}
		got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got, "Copies: must be a number") {
			t.Errorf("typed %q: the page shows\n%s", typed, got)
		}
		if v, _ := chromedp.Run(ctx, chromedp.Value(chromedp.ID("f-copies"))); v != typed {
			t.Errorf("typed %q: the field holds %q", typed, v)
		}
	}
	if resumes.Len() != 0 {
		t.Fatalf("the agent was resumed: %+v", resumes.Resumes())
	}
}
