package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/internal/testenv/browser"
)

// startBrowser starts headless Chromium (browser.Start), or skips.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	return browser.Start(t)
}

// newEnvHarness serves a console on a real runtime (testenv); now, when
// given, is the console's clock.
func newEnvHarness(t *testing.T, o testenv.Options, now ...func() time.Time) (*harness, *testenv.Env) {
	t.Helper()
	env := testenv.Start(t, o)
	h := &harness{t: t, n: env.NATS, logs: &testenv.LockedBuffer{}}
	if len(now) > 0 {
		h.now = now[0]
	}
	h.start(env.NATS)
	return h, env
}

// ask publishes q as an agent and waits until the runtime shows it.
func ask(t *testing.T, h *harness, env *testenv.Env, q bridge.Question) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := env.Agent.Publish(ctx, &q); err != nil {
		t.Fatalf("agent publish: %v", err)
	}
	link := h.questionURL(q.Answerers[0], q)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if h.get(link).status == http.StatusOK {
			return nil
		}
		return errors.New("still waiting for the runtime to store the question")
	})
}

func TestBrowserAnswersWithInlineErrors(t *testing.T) {
	t.Parallel()
	browser := startBrowser(t)
	h, env := newEnvHarness(t, testenv.Options{})
	q := reportQuestion("job-browser")
	resumes := env.Record(t, bridge.StreamResumes, bridge.ResumeSubject(q.Tenant, q.JobID))
	ask(t, h, env, q)
	link := h.questionURL("console:alice", q)

	ctx, cancel := context.WithTimeout(browser, 60*time.Second)
	defer cancel()
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			// Say where the browser is and what it shows.
			dctx, dcancel := context.WithTimeout(browser, 5*time.Second)
			defer dcancel()
			loc, _ := chromedp.Run(dctx, chromedp.Location())
			body, _ := chromedp.Run(dctx, chromedp.Text(chromedp.CSS("main")))
			t.Fatalf("%s: %v\nat %s\n%s\nconsole log:\n%s", what, err, loc, body, h.logs.String())
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	value := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("value of %s: %v", sel, err)
		}
		return s
	}

	step("open the link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("f-on")))
	if got := text("h1"); got != q.Question {
		t.Fatalf("heading %q, want the question", got)
	}
	for sel, want := range map[string]string{`label[for="f-on"]`: "Send on (required)", `label[for="f-copies"]`: "Copies"} {
		if got := text(sel); got != want {
			t.Errorf("label %s = %q, want %q", sel, got, want)
		}
	}
	// A date and a number out of bounds.
	step("fill the form",
		chromedp.SetValue(chromedp.ID("f-on"), "2026-10-20"),
		chromedp.SendKeys(chromedp.ID("f-copies"), "12"),
		chromedp.Click(chromedp.CSS(`#answer-form button[value="answer"]`)),
		chromedp.WaitVisible(chromedp.ID("f-copies-err")),
	)
	if got := text("#f-copies-err"); got != "Copies must be at most 9." {
		t.Errorf("field error %q", got)
	}
	if got := text("#problems li"); got != "Copies must be at most 9." {
		t.Errorf("error summary %q", got)
	}
	if got, got2 := value("#f-copies"), value("#f-on"); got != "12" || got2 != "2026-10-20" {
		t.Errorf("input not kept: copies %q, on %q", got, got2)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	png := filepath.Join(t.TempDir(), "question.png")
	if err := os.WriteFile(png, shot, 0o600); err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("CONSOLE_SCREENSHOT_DIR"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "question.png"), shot, 0o600)
	}
	t.Logf("screenshot: %s", png)
	if resumes.Len() != 0 {
		t.Fatal("the agent was resumed by an invalid answer")
	}

	// Correct it and send.
	step("correct and send",
		chromedp.SetValue(chromedp.ID("f-copies"), "2"),
		chromedp.Click(chromedp.CSS(`#answer-form button[value="answer"]`)),
		chromedp.WaitVisible(chromedp.ID("outcome-h")),
	)
	if got := text("#outcome-h"); got != "Answered" {
		t.Errorf("outcome %q, want Answered", got)
	}
	if got := text("#outcome .answer"); got != "on: 2026-10-20, copies: 2" {
		t.Errorf("answer shown %q", got)
	}
	if got := text("#outcome .by"); !strings.HasPrefix(got, "By console:alice via console,") {
		t.Errorf("by line %q", got)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.Contains(loc, "/console/q/acme/job-browser/q-1?") || !strings.Contains(loc, "attempt=console-") {
		t.Errorf("after POST the browser is at %q (%v), want the question page (POST-redirect-GET)", loc, err)
	}

	// The agent got the answer on its resume subject.
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if resumes.Len() > 0 {
			return nil
		}
		return errors.New("still waiting for the resume")
	})
	res := resumes.Resumes()
	if len(res) != 1 {
		t.Fatalf("%d resumes, want 1", len(res))
	}
	r := res[0]
	if r.Outcome != bridge.OutcomeAnswered || r.By != "console:alice" || r.Via != bridge.PlatformConsole || r.TaskVersion != q.TaskVersion {
		t.Errorf("resume %+v", r)
	}
	var got map[string]any
	if err := json.Unmarshal(r.Answer, &got); err != nil || fmt.Sprint(got) != "map[copies:2 on:2026-10-20]" {
		t.Errorf("resume answer %s (%v)", r.Answer, err)
	}
	if r.Text != `The answer: {"on":"2026-10-20","copies":2}` {
		t.Errorf("resume text %q", r.Text)
	}
}
