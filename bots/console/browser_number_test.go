package console

import (
	"context"
	"errors"
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
	t.Parallel()
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
		if !strings.Contains(got, "Copies must be a number.") {
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

// TestBrowserKeepsAHalfTypedDate checks a date typed without its year into
// an optional date field stops the answer in the browser: Chromium sends a
// half-typed date as nothing, and the answer would go without it.
func TestBrowserKeepsAHalfTypedDate(t *testing.T) {
	t.Parallel()
	browser := startBrowser(t)
	h, env := newEnvHarness(t, testenv.Options{})
	q := reportQuestion("job-date")
	q.Fields = append(q.Fields, bridge.Field{Name: "remind", Kind: bridge.FieldDate, Label: "Remind on"})
	resumes := env.Record(t, bridge.StreamResumes, bridge.ResumeSubject(q.Tenant, q.JobID))
	ask(t, h, env, q)
	link := h.questionURL("console:alice", q)

	ctx, cancel := context.WithTimeout(browser, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("f-remind")),
		chromedp.SetValue(chromedp.ID("f-on"), "2026-10-20"),
		chromedp.Click(chromedp.ID("f-remind")),
		chromedp.SendKeys(chromedp.ID("f-remind"), "1021"), // month and day, no year
	); err != nil {
		t.Fatal(err)
	}
	halfTyped, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("f-remind").validity.badInput`))
	if err != nil || !halfTyped {
		t.Fatalf("the browser did not take the typing as a half-typed date (%v); the test proves nothing", err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#answer-form button[value="answer"]`))); err != nil {
		t.Fatal(err)
	}
	// Had that click sent the form, the answer would have gone without the
	// reminder date and the question would be settled. Finish the date and
	// answer again: the agent reads both dates.
	step, cancelStep := context.WithTimeout(ctx, 15*time.Second)
	defer cancelStep()
	if err := chromedp.Do(step,
		chromedp.SetValue(chromedp.ID("f-remind"), "2026-10-21"),
		chromedp.Click(chromedp.CSS(`#answer-form button[value="answer"]`)),
		chromedp.WaitVisible(chromedp.ID("outcome-h")),
	); err != nil {
		t.Fatalf("the form is gone after the half-typed date, so it was sent (resumes %+v): %v", resumes.Resumes(), err)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if resumes.Len() > 0 {
			return nil
		}
		return errors.New("still waiting for the resume")
	})
	res := resumes.Resumes()
	if len(res) != 1 || res[0].Outcome != bridge.OutcomeAnswered || !strings.Contains(res[0].Text, `"remind":"2026-10-21"`) {
		t.Fatalf("resumes = %+v, want one answer with the reminder date", res)
	}
}
