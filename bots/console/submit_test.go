package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

func TestPostNeedsAValidFormToken(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	q := reportQuestion("job-1")
	other := reportQuestion("job-1")
	other.QuestionID = "q-2"
	h.rt.add(q)
	h.rt.add(other)
	link := h.questionURL("console:alice", q)
	good := formValues(t, h.get(link).body, "answer-form")
	good.Set("f.on", "2026-10-20")
	good.Set("f.copies", "2")
	otherForm := formValues(t, h.get(h.questionURL("console:alice", other)).body, "answer-form")

	bad := map[string]url.Values{}
	v := cloneValues(good)
	v.Del("csrf")
	bad["no token"] = v
	v = cloneValues(good)
	v.Set("csrf", strings.Repeat("ab", 32))
	bad["wrong token"] = v
	v = cloneValues(good)
	v.Set("nonce", strings.Repeat("c", 32))
	bad["token for another nonce"] = v
	v = cloneValues(good)
	v.Set("nonce", otherForm.Get("nonce"))
	v.Set("csrf", otherForm.Get("csrf"))
	bad["token of another question's form"] = v
	v = cloneValues(good)
	v.Set("csrf", u(t, link).Query().Get("sig"))
	bad["link signature as token"] = v
	for name, form := range bad {
		p := h.post(link, form)
		if p.status != http.StatusForbidden || !strings.Contains(p.body, "This form is not valid") {
			t.Errorf("%s: status %d\n%s", name, p.status, p.body)
		}
	}
	// A cross-site post with a stolen form is refused by its headers.
	for name, hdr := range map[string]http.Header{
		"cross-site fetch":  {"Sec-Fetch-Site": {"cross-site"}},
		"same-site fetch":   {"Sec-Fetch-Site": {"same-site"}},
		"foreign origin":    {"Origin": {"https://evil.example"}},
		"opaque origin":     {"Origin": {"null"}},
		"opaque cross-site": {"Origin": {"null"}, "Sec-Fetch-Site": {"cross-site"}},
		"foreign + allowed": {"Origin": {"https://evil.example"}, "Sec-Fetch-Site": {"same-origin"}},
	} {
		p := h.postRaw(link, good.Encode(), hdr)
		if p.status != http.StatusForbidden {
			t.Errorf("%s: status %d", name, p.status)
		}
	}
	// A form posted with a link that is not valid.
	forged := strings.Replace(link, "as=console%3Aalice", "as=console%3Amallory", 1)
	if p := h.post(forged, good); p.status != http.StatusForbidden {
		t.Errorf("forged link post: status %d", p.status)
	}
	if n := h.answersSent(); n != 0 {
		t.Fatalf("refused posts put %d attempts on the stream", n)
	}
	// The genuine form goes through.
	if p := h.post(link, good); p.status != http.StatusSeeOther {
		t.Fatalf("good post: status %d\n%s", p.status, p.body)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if h.rt.state(q.Tenant, q.JobID, q.QuestionID) == bridge.StateAnswered {
			return nil
		}
		return errors.New("still waiting for the answer to be decided")
	})
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

func u(t *testing.T, s string) *url.URL {
	t.Helper()
	x, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestFieldErrorsInlineThenAnswered(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	q := reportQuestion("job-1")
	h.rt.add(q)
	link := h.questionURL("console:alice", q)
	form := formValues(t, h.get(link).body, "answer-form")
	form.Set("action", "answer")
	form.Set("f.copies", "12")
	p := h.post(link, form)
	if p.status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d, want 422\n%s", p.status, p.body)
	}
	for _, want := range []string{
		`<p class="error" id="f-copies-err">Copies must be at most 9.</p>`,
		`<p class="error" id="f-on-err">Send on is required.</p>`,
		`<a href="#f-copies">Copies must be at most 9.</a>`,
		`name="f.copies" value="12"`,
		`aria-invalid="true"`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := h.answersSent(); n != 0 {
		t.Fatalf("an invalid answer was published (%d attempts)", n)
	}
	// The re-drawn form has a fresh nonce: correct and send.
	form2 := formValues(t, p.body, "answer-form")
	if form2.Get("nonce") == form.Get("nonce") {
		t.Error("the re-drawn form reuses the refused form's nonce")
	}
	form2.Set("action", "answer")
	form2.Set("f.on", "2026-10-20")
	form2.Set("f.copies", "2")
	p = h.post(link, form2)
	if p.status != http.StatusSeeOther {
		t.Fatalf("status %d, want 303\n%s", p.status, p.body)
	}
	loc := p.header.Get("Location")
	if !strings.Contains(loc, "attempt=console-"+form2.Get("nonce")) || !strings.HasPrefix(loc, "/console/q/acme/job-1/q-1?") {
		t.Errorf("redirect to %q", loc)
	}
	// The runtime decided within the wait, so the page shows the outcome.
	p = h.get(loc)
	for _, want := range []string{`<h2 id="outcome-h">Answered</h2>`, "on: 2026-10-20, copies: 2", "By <strong>console:alice</strong> via console"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("outcome page lacks %q\n%s", want, p.body)
		}
	}
	if strings.Contains(p.body, `id="answer-form"`) || strings.Contains(p.body, `id="decline-form"`) {
		t.Error("a settled question still shows its forms")
	}
	// A double submit of the same form is one attempt.
	if p = h.post(link, form2); p.status != http.StatusSeeOther {
		t.Fatalf("second submit: status %d", p.status)
	}
	if n := h.answersSent(); n != 1 {
		t.Errorf("%d attempts on the stream, want 1", n)
	}
	if h.rt.attemptCount() != 1 {
		t.Errorf("the runtime decided %d attempts, want 1", h.rt.attemptCount())
	}
}

func TestDoubleSubmitWhilePendingIsOneAttempt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.rt.mu.Lock()
	h.rt.silent = true // the runtime is slow: the question stays pending
	h.rt.mu.Unlock()
	q := bridge.Question{Tenant: "acme", JobID: "job-d", QuestionID: "q-d", Question: "Subject line?", Answerers: []string{"console:alice"}}
	h.rt.add(q)
	link := h.questionURL("console:alice", q)
	form := formValues(t, h.get(link).body, "answer-form")
	form.Set("action", "answer")
	form.Set("answer", "Quarterly report")
	var locs []string
	for range 2 {
		p := h.post(link, form)
		if p.status != http.StatusSeeOther {
			t.Fatalf("status %d", p.status)
		}
		locs = append(locs, p.header.Get("Location"))
	}
	if locs[0] != locs[1] {
		t.Errorf("two redirects for one form: %v", locs)
	}
	if n := h.answersSent(); n != 1 {
		t.Errorf("%d attempts on the stream, want 1", n)
	}
	p := h.get(locs[0])
	if !strings.Contains(p.body, "Your answer was sent.") || !strings.Contains(p.body, `id="answer-form"`) {
		t.Errorf("undecided attempt page:\n%s", p.body)
	}
}

// TestRefusalAfterDecisionWaitShowsOnReload checks a refusal that comes
// after the post stopped waiting for it is not lost: the page first says
// the answer was sent, and shows the refusal, with the input, on reload.
func TestRefusalAfterDecisionWaitShowsOnReload(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.rt.mu.Lock()
	h.rt.silent = true // the runtime decides only after DecisionWait
	h.rt.mu.Unlock()
	q := reportQuestion("job-late-refusal")
	h.rt.add(q)
	link := h.questionURL("console:alice", q)
	form := formValues(t, h.get(link).body, "answer-form")
	form.Set("action", "answer")
	form.Set("f.on", "2026-10-20")
	form.Set("f.copies", "4")
	form.Set("task_version", "2")
	p := h.post(link, form)
	if p.status != http.StatusSeeOther {
		t.Fatalf("status %d\n%s", p.status, p.body)
	}
	next := p.header.Get("Location")
	if p = h.get(next); !strings.Contains(p.body, `id="sent"`) {
		t.Fatalf("undecided attempt page:\n%s", p.body)
	}
	refusal := bridge.Event{Type: bridge.EventRefused, EventID: "ev-late", Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID,
		TaskVersion: 2, To: "console:alice", Reason: bridge.RefusedStale, AttemptID: u(t, next).Query().Get("attempt"),
		Text: "This question was for task version 2; the job is now at version 3.", At: time.Now().UTC()}
	h.rt.publish(bridge.EventSubject(q.Tenant, q.JobID), refusal.EventID, &refusal)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if p = h.get(next); !strings.Contains(p.body, `id="refusal"><p>This question was for task version 2; the job is now at version 3.</p>`) {
			return errors.New("the late refusal is not shown yet")
		}
		return nil
	})
	if strings.Contains(p.body, `id="sent"`) || !strings.Contains(p.body, `name="f.copies" value="4"`) {
		t.Errorf("page after the late refusal:\n%s", p.body)
	}
}

// TestSupersededEventDoesNotDecideAStaleForm checks the event that
// superseded the version a form was drawn for, relayed only after the
// form was posted, is not taken for the form's decision: the runtime's
// refusal of the stale answer is what the page shows.
func TestSupersededEventDoesNotDecideAStaleForm(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.rt.mu.Lock()
	h.rt.silent = true // the test decides, in the order it needs
	h.rt.mu.Unlock()
	q := reportQuestion("job-superseded-late")
	h.rt.add(q)
	link := h.questionURL("console:alice", q)
	form := formValues(t, h.get(link).body, "answer-form")
	form.Set("action", "answer")
	form.Set("f.on", "2026-10-20")
	form.Set("f.copies", "4")
	form.Set("task_version", "2")
	posted := make(chan page, 1)
	go func() { posted <- h.post(link, form) }()
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if h.answersSent() == 0 {
			return errors.New("the answer is not sent yet")
		}
		return nil
	})
	at := time.Now().UTC()
	superseded := bridge.Event{Type: bridge.EventSuperseded, EventID: "ev-superseded", Tenant: q.Tenant, JobID: q.JobID,
		QuestionID: q.QuestionID, TaskVersion: 2, State: bridge.StateSuperseded, At: at}
	h.rt.publish(bridge.EventSubject(q.Tenant, q.JobID), superseded.EventID, &superseded)
	refusal := bridge.Event{Type: bridge.EventRefused, EventID: "ev-stale", Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID,
		TaskVersion: 2, To: "console:alice", Reason: bridge.RefusedStale, AttemptID: attemptPrefix + form.Get("nonce"),
		Text: "This question was for task version 2; the job is now at version 3.", At: at}
	h.rt.publish(bridge.EventSubject(q.Tenant, q.JobID), refusal.EventID, &refusal)
	p := <-posted
	if p.status != http.StatusSeeOther {
		t.Fatalf("status %d\n%s", p.status, p.body)
	}
	p = h.decidedPage(p)
	if !strings.Contains(p.body, `id="refusal"><p>This question was for task version 2; the job is now at version 3.</p>`) {
		t.Errorf("page lacks the refusal:\n%s", p.body)
	}
}

func TestRefusalShownInlineWithInputKept(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	q := reportQuestion("job-1")
	h.rt.add(q)
	link := h.questionURL("console:alice", q)
	form := formValues(t, h.get(link).body, "answer-form")
	form.Set("action", "answer")
	form.Set("f.on", "2026-10-20")
	form.Set("f.copies", "4")
	form.Set("task_version", "2") // the person saw an older version
	p := h.post(link, form)
	if p.status != http.StatusSeeOther {
		t.Fatalf("status %d\n%s", p.status, p.body)
	}
	p = h.get(p.header.Get("Location"))
	for _, want := range []string{
		`<div class="alert alert-error" role="alert" id="refusal"><p>This question was for task version 2; the job is now at version 3.</p></div>`,
		`name="f.on" value="2026-10-20"`, `name="f.copies" value="4"`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("page lacks %q\n%s", want, p.body)
		}
	}
	if h.rt.state(q.Tenant, q.JobID, q.QuestionID) != bridge.StatePending {
		t.Error("a stale answer settled the question")
	}
	// Someone else opening the same redirect sees no refusal meant for alice.
	other := h.signer.QuestionURL("slack:U0OWNER", q.Tenant, q.JobID, q.QuestionID, time.Hour)
	attempt := u(t, p.header.Get("Location")).Query().Get("attempt")
	_ = attempt
	loc := u(t, h.abs(other))
	qv := loc.Query()
	qv.Set("attempt", "console-"+form.Get("nonce"))
	p = h.get(loc.Path + "?" + qv.Encode())
	if strings.Contains(p.body, "task version 2") || strings.Contains(p.body, `value="2026-10-20"`) {
		t.Error("another identity sees alice's refusal and input")
	}
}

func TestDeclineAndApproval(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	q := reportQuestion("job-1")
	h.rt.add(q)
	link := h.questionURL("console:alice", q)
	form := formValues(t, h.get(link).body, "decline-form")
	form.Set("action", "decline")
	form.Set("comment", "ask Ana")
	p := h.post(link, form)
	if p.status != http.StatusSeeOther {
		t.Fatalf("decline: status %d\n%s", p.status, p.body)
	}
	p = h.get(p.header.Get("Location"))
	if !strings.Contains(p.body, `<h2 id="outcome-h">Declined</h2>`) || !strings.Contains(p.body, "Reason: ask Ana") {
		t.Errorf("declined page:\n%s", p.body)
	}

	ap := bridge.Question{Tenant: "acme", JobID: "job-a", QuestionID: "q-a", Kind: bridge.KindApproval, Question: "May I send the refund?",
		Proposal: &bridge.Proposal{ID: "refund-1", Action: "refund", Summary: []string{"Refund 40 EUR"}}, Answerers: []string{"console:alice"}}
	h.rt.add(ap)
	link = h.questionURL("console:alice", ap)
	form = formValues(t, h.get(link).body, "answer-form")
	form.Set("action", "deny")
	// A deny needs a reason, as on Slack and Discord; nothing is sent without.
	sent := h.answersSent()
	form.Set("comment", "  ")
	if p = h.post(link, form); p.status != http.StatusUnprocessableEntity ||
		!strings.Contains(p.body, `<p class="error" id="answer-comment-err">Say why you deny it: the agent reads the reason to change its plan.</p>`) {
		t.Fatalf("deny without a reason: status %d\n%s", p.status, p.body)
	}
	if n := h.answersSent(); n != sent {
		t.Fatalf("a deny without a reason was published (%d attempts, %d before)", n, sent)
	}
	form = formValues(t, p.body, "answer-form")
	form.Set("action", "deny")
	form.Set("comment", "too much")
	if p = h.post(link, form); p.status != http.StatusSeeOther {
		t.Fatalf("deny: status %d\n%s", p.status, p.body)
	}
	p = h.get(p.header.Get("Location"))
	// Said once: the heading and what happens next, not "denied" again.
	if !strings.Contains(p.body, `<h2 id="outcome-h">Denied</h2>`) || strings.Contains(p.body, `<p class="answer">`) ||
		!strings.Contains(p.body, `<p class="next-step" id="next-step">The agent does not run the proposal: it reads the reason and changes its plan.</p>`) ||
		!strings.Contains(p.body, "Reason: too much") {
		t.Errorf("denied page:\n%s", p.body)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	q := reportQuestion("job-1")
	h.rt.add(q)
	link := h.questionURL("console:alice", q)
	good := formValues(t, h.get(link).body, "answer-form")
	hdr := http.Header{"Origin": {h.srv.URL}}

	huge := good.Encode() + "&f.on=" + strings.Repeat("x", MaxFormBytes+10)
	if p := h.postRaw(link, huge, hdr); p.status != http.StatusRequestEntityTooLarge || !strings.Contains(p.body, "too much") {
		t.Errorf("huge body: status %d", p.status)
	}
	if p := h.postRaw(link, "nonce=%zz&csrf=%", hdr); p.status != http.StatusBadRequest {
		t.Errorf("malformed form: status %d", p.status)
	}
	v := cloneValues(good)
	v.Set("task_version", "three")
	if p := h.post(link, v); p.status != http.StatusBadRequest {
		t.Errorf("bad task_version: status %d", p.status)
	}
	v = cloneValues(good)
	v.Set("action", "explode")
	if p := h.post(link, v); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "must be answer, decline, approve or deny") {
		t.Errorf("unknown action: status %d\n%s", p.status, p.body)
	}
	v = cloneValues(good)
	v.Set("action", "decline")
	v.Set("comment", strings.Repeat("y", bridge.MaxCommentText+1))
	if p := h.post(link, v); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "must be at most 2000 characters") {
		t.Errorf("long comment: status %d\n%s", p.status, p.body)
	}
	// A post for an unknown question (a validly signed link).
	missing := h.signer.QuestionURL("console:alice", "acme", "job-1", "q-missing", time.Hour)
	l := Link{Identity: "console:alice", Scope: ScopeQuestion, Tenant: "acme", JobID: "job-1", QuestionID: "q-missing"}
	n := strings.Repeat("e", 32)
	if p := h.post(missing, url.Values{"nonce": {n}, "csrf": {h.signer.FormToken(l, n)}, "task_version": {"1"}}); p.status != http.StatusNotFound {
		t.Errorf("unknown question post: status %d", p.status)
	}
	if c := h.answersSent(); c != 0 {
		t.Errorf("bad input published %d attempts", c)
	}
	if h.rt.state(q.Tenant, q.JobID, q.QuestionID) != bridge.StatePending {
		t.Error("bad input changed the question")
	}
}
