package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/policy"
	"github.com/askbridge/askbridge/runtime"
)

// inboxEnv is a runtime with operators, a policy asking two approvals of
// refunds in acme, and a console whose clock runs 12 minutes ahead: the
// questions it asks have waited 12 minutes.
func inboxEnv(t *testing.T) (*harness, *testenv.Env) {
	t.Helper()
	var pol policy.Holder
	pol.Store(&policy.Policy{Tenants: map[string]policy.Tenant{"acme": {Actions: map[string]policy.Rule{
		"refund": {RequireApproval: true, RequiredApprovals: 2}}}}})
	roles := runtime.Roles{Operators: []string{"console:olivia", "console:bob", "slack:U0KEV"}}
	return newEnvHarness(t, testenv.Options{Roles: roles, Policy: &pol}, func() time.Time { return time.Now().Add(12 * time.Minute) })
}

// inboxQuestions are a high-priority question and an approval in acme,
// and a low-priority question in globex. Asked for 3 h 13 min, each has
// 3 h left on a clock 12 minutes ahead (within the minute the test takes).
func inboxQuestions() []bridge.Question {
	amount := 240.0
	return []bridge.Question{
		{Tenant: "acme", JobID: "job-3", QuestionID: "q-cover", TaskVersion: 1, Priority: bridge.PriorityHigh, Timeout: "3h13m",
			Question: "Which colour should the report's cover be?", Choices: []string{"blue", "green"}, Answerers: []string{"console:olivia"}},
		{Tenant: "acme", JobID: "job-3", QuestionID: "q-refund", TaskVersion: 1, Kind: bridge.KindApproval, Timeout: "3h13m",
			Question: "May I refund order 4471?", Answerers: []string{"console:olivia"},
			Proposal: &bridge.Proposal{ID: "pr-4471", Action: "refund", Summary: []string{"Refund $240 to Jane D."},
				Arguments: json.RawMessage(`{"order": 4471}`), Amount: &amount, Currency: "USD"}},
		{Tenant: "globex", JobID: "job-7", QuestionID: "q-name", TaskVersion: 1, Priority: bridge.PriorityLow, Timeout: "3h13m",
			Question: "What should the new dashboard be called?", Answerers: []string{"console:olivia"}},
	}
}

// browse runs chromedp actions, failing with where the browser is and
// what it shows.
func browse(t *testing.T, h *harness, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
		t.Fatalf("%s: %v\nat %s\n%s\nconsole log:\n%s", what, err, loc, body, h.logs.String())
	}
}

func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// metaFacts are the question page's facts, "label: value" each.
const metaFacts = `Array.from(document.querySelectorAll("dl.meta > div")).map(function (d) {
  return d.querySelector("dt").textContent.trim() + ": " + d.querySelector("dd").textContent.trim(); })`

// rawMoment is a moment as the wire carries it; no page shows one.
var rawMoment = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d`)

// TestBrowserInboxGoldens walks the inbox as an operator would, with the
// browser's own form (no script needed to filter), and keeps a golden
// screenshot of each main state: the filtered list, a question, an
// approval at 1 of 2, the answered page, and a person with no role.
func TestBrowserInboxGoldens(t *testing.T) {
	t.Parallel()
	browser := startBrowser(t)
	h, env := inboxEnv(t)
	for _, q := range inboxQuestions() {
		ask(t, h, env, q)
	}
	ctx, cancel := context.WithTimeout(browser, 90*time.Second)
	defer cancel()

	// The inbox, filtered to acme with the form.
	browse(t, h, ctx, "open the inbox", chromedp.Navigate(h.signer.ListURL("console:olivia", time.Hour)), chromedp.WaitVisible(chromedp.ID("filter")))
	if got := textOf(t, ctx, ".counts"); !strings.Contains(got, "All 3") || !strings.Contains(got, "Questions 2") || !strings.Contains(got, "Approvals 1") {
		t.Errorf("counts %q", got)
	}
	browse(t, h, ctx, "filter to acme",
		chromedp.SetValue(chromedp.ID("filter-tenant"), "acme"),
		chromedp.Click(chromedp.CSS(`#filter button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`a.clear`)))
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	if u, err := url.Parse(loc); err != nil || u.Query().Get("tenant") != "acme" || u.Query().Get("sig") == "" {
		t.Errorf("the filter form went to %s", loc)
	}
	main := textOf(t, ctx, "main")
	if strings.Contains(main, "dashboard") || !strings.Contains(main, "Which colour") || !strings.Contains(main, "May I refund") ||
		!strings.Contains(main, "waiting 12 min · deadline in 3 h") || !strings.Contains(main, "high priority") || rawMoment.MatchString(main) {
		t.Errorf("the filtered inbox shows:\n%s", main)
	}
	golden(t, ctx, "inbox-filtered")

	// A question, from the inbox, and the way back.
	browse(t, h, ctx, "open the question", chromedp.Click(chromedp.CSS(`a.item-title[href*="q-cover"]`)), chromedp.WaitVisible(chromedp.ID("answer-form")))
	if got := textOf(t, ctx, "#state-line"); got != "Waiting for an answer · waiting 12 min · deadline in 3 h" {
		t.Errorf("state line %q", got)
	}
	if got := textOf(t, ctx, "nav.back"); got != "← Everything waiting for you" {
		t.Errorf("back link %q", got)
	}
	golden(t, ctx, "question")

	// The approval, approved once of two.
	browse(t, h, ctx, "back to the inbox", chromedp.Click(chromedp.CSS("nav.back a")), chromedp.WaitVisible(chromedp.ID("filter")))
	browse(t, h, ctx, "approve once",
		chromedp.Click(chromedp.CSS(`a.item-title[href*="q-refund"]`)), chromedp.WaitVisible(chromedp.ID("answer-form")),
		chromedp.Click(chromedp.CSS(`#answer-form button[value="approve"]`)), chromedp.WaitVisible(chromedp.ID("approved")))
	if got := textOf(t, ctx, "#approved"); got != "Approved, 1 of 2: it runs once the second approver agrees." {
		t.Errorf("after one approval: %q", got)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelectorAll("#answer-form").length`)); err != nil || n != 0 {
		t.Errorf("after approving, the page still offers Approve and Deny (%v)", err)
	}
	if main := textOf(t, ctx, "main"); strings.Contains(main, "does not let") {
		t.Errorf("after approving, the page says they may not act:\n%s", main)
	}
	// The rule names no approvers: whoever may answer may approve, but
	// olivia counted already.
	facts, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](metaFacts))
	if err != nil || !slices.Contains(facts, "Who may still approve: operators") {
		t.Errorf("after olivia approved, the page says %q (%v)", facts, err)
	}
	golden(t, ctx, "approval-1-of-2")

	// The question, answered.
	browse(t, h, ctx, "answer the question",
		chromedp.Click(chromedp.CSS("nav.back a")), chromedp.WaitVisible(chromedp.ID("filter")),
		chromedp.Click(chromedp.CSS(`a.item-title[href*="q-cover"]`)), chromedp.WaitVisible(chromedp.ID("answer-form")),
		chromedp.Click(chromedp.ID("choice-1")),
		chromedp.Click(chromedp.CSS(`#answer-form button[value="answer"]`)), chromedp.WaitVisible(chromedp.ID("outcome-h")))
	if got := textOf(t, ctx, "#next-step"); got != "Your answer reached the agent; job-3 goes on." {
		t.Errorf("next step %q", got)
	}
	if main := textOf(t, ctx, "main"); rawMoment.MatchString(main) {
		t.Errorf("the answered page shows a raw moment:\n%s", main)
	}
	golden(t, ctx, "answered")

	// Someone with no role.
	browse(t, h, ctx, "open a stranger's inbox", chromedp.Navigate(h.signer.ListURL("console:nobody", time.Hour)), chromedp.WaitVisible(chromedp.ID("inbox-empty")))
	if got := textOf(t, ctx, "#inbox-empty"); !strings.Contains(got, "you have no role in any tenant") ||
		!strings.Contains(got, "add console:nobody to ASK_OPERATORS") {
		t.Errorf("empty state %q", got)
	}
	golden(t, ctx, "no-role")
}

// TestBrowserPagesUpdateLive keeps the inbox and a question page open
// while the question is answered from Slack (an attempt on the answer
// subject, as the Slack adapter publishes it): both change without a
// reload. cmd/askbridge's TestConsoleUpdatesLiveOnASlackClick takes the
// whole way, from a signed click through the Slack adapter.
func TestBrowserPagesUpdateLive(t *testing.T) {
	t.Parallel()
	browser := startBrowser(t)
	h, env := inboxEnv(t)
	qs := inboxQuestions()
	for _, q := range qs {
		ask(t, h, env, q)
	}
	ctx, cancel := context.WithTimeout(browser, 90*time.Second)
	defer cancel()
	inbox, cancelInbox := chromedp.NewContext(ctx)
	defer cancelInbox()
	question, cancelQuestion := chromedp.NewContext(ctx)
	defer cancelQuestion()
	q := qs[0]
	// A mark on each window: a reload would lose it.
	const mark = `window.askbridgeNotReloaded = true; true`
	browse(t, h, inbox, "open the inbox", chromedp.Navigate(h.signer.ListURL("console:olivia", time.Hour)),
		chromedp.WaitVisible(chromedp.CSS("body[data-live-open]")))
	browse(t, h, question, "open the question", chromedp.Navigate(h.questionURL("console:olivia", q)),
		chromedp.WaitVisible(chromedp.CSS("body[data-live-open]")))
	for _, tab := range []context.Context{inbox, question} {
		if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](mark)); err != nil {
			t.Fatal(err)
		}
	}

	a := bridge.AnswerAttempt{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion, ExactVersion: true,
		AttemptID: "slack-live-1", Action: bridge.ActionAnswer, Answer: json.RawMessage(`"blue"`), By: "slack:U0KEV", ByName: "kevin",
		Via: bridge.PlatformSlack, At: time.Now().UTC()}
	pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer pcancel()
	if err := bridge.Publish(pctx, env.NATS.JS, bridge.AnswerSubject(q.Tenant, q.JobID), "attempt-"+a.AttemptID, a); err != nil {
		t.Fatal(err)
	}

	testenv.CheckFor(t, testenv.Patience, 50*time.Millisecond, func() error {
		n, err := chromedp.Run(inbox, chromedp.Evaluate[float64](`document.querySelectorAll("a.item-title[href*='q-cover']").length`))
		if err != nil || n != 0 {
			return errors.New("the inbox still lists the answered question")
		}
		return nil
	})
	if got := textOf(t, inbox, ".counts"); !strings.Contains(got, "All 2") || !strings.Contains(got, "Questions 1") {
		t.Errorf("counts after the answer: %q", got)
	}
	testenv.CheckFor(t, testenv.Patience, 50*time.Millisecond, func() error {
		if s, err := chromedp.Run(question, chromedp.Text(chromedp.CSS("main"))); err != nil || !strings.Contains(s, "Answered") {
			return errors.New("the question page does not say answered")
		}
		return nil
	})
	for name, tab := range map[string]context.Context{"inbox": inbox, "question": question} {
		if kept, err := chromedp.Run(tab, chromedp.Evaluate[bool](`window.askbridgeNotReloaded === true`)); err != nil || !kept {
			t.Errorf("the %s page was reloaded (%v)", name, err)
		}
	}
	if got := textOf(t, question, "#outcome .answer"); got != "blue" {
		t.Errorf("answer shown %q", got)
	}
	if got := textOf(t, question, "#next-step"); got != "The answer reached the agent; job-3 goes on." {
		t.Errorf("next step %q", got)
	}
	if by := textOf(t, question, "#outcome .by"); !strings.HasPrefix(by, "By slack:U0KEV (kevin) via slack") {
		t.Errorf("by line %q", by)
	}
}
