package console

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestServedUnderAPathPrefix checks a console behind a proxy that serves
// it under a path (ASK_PUBLIC_URL=https://example.com/askbridge) links
// its stylesheet, its pages and its forms within that path.
func TestServedUnderAPathPrefix(t *testing.T) {
	t.Parallel()
	n := startNATS(t)
	h := &harness{t: t, n: n, logs: &testenv.LockedBuffer{}, prefix: "/askbridge"}
	h.rt = startResponder(t, n)
	h.start(n)
	q := reportQuestion("job-pfx")
	h.rt.add(q)
	link := h.questionURL("console:alice", q)
	if !strings.HasPrefix(link, h.srv.URL+"/askbridge/console/q/acme/job-pfx/q-1?") {
		t.Fatalf("link %s", link)
	}
	p := h.get(link)
	if p.status != http.StatusOK {
		t.Fatalf("status %d:\n%s", p.status, p.body)
	}
	if !strings.Contains(p.body, `<link rel="stylesheet" href="/askbridge/console/static/console.css">`) {
		t.Errorf("stylesheet not under the prefix:\n%s", p.body)
	}
	if css := h.get("/askbridge/console/static/console.css"); css.status != http.StatusOK || !strings.HasPrefix(css.header.Get("Content-Type"), "text/css") {
		t.Errorf("stylesheet through the proxy: %d %s", css.status, css.header.Get("Content-Type"))
	}
	if !strings.Contains(p.body, `action="/askbridge/console/q/acme/job-pfx/q-1?`) {
		t.Fatalf("form action not under the prefix:\n%s", p.body)
	}
	form := formValues(t, p.body, "answer-form")
	form.Set("action", "answer")
	form.Set("f.on", "2026-10-20")
	form.Set("f.copies", "2")
	sent := h.post(link, form)
	if loc := sent.header.Get("Location"); sent.status != http.StatusSeeOther || !strings.HasPrefix(loc, "/askbridge/console/q/acme/job-pfx/q-1?") {
		t.Fatalf("post: %d, Location %q\n%s", sent.status, loc, sent.body)
	}
	if got := h.get(sent.header.Get("Location")); got.status != http.StatusOK {
		t.Fatalf("after the post: %d", got.status)
	}
}

func TestQuestionPageShowsTheFormDrawnFromFields(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	q := reportQuestion("job-1")
	q.Fields = append(q.Fields,
		bridge.Field{Name: "when", Kind: bridge.FieldDate, DateTime: true},
		bridge.Field{Name: "ratio", Kind: bridge.FieldNumber},
		bridge.Field{Name: "boxes", Kind: bridge.FieldNumber, Integer: true, Min: ptr(1.5), Max: ptr(9.5)},
		bridge.Field{Name: "format", Kind: bridge.FieldChoice, Options: []string{"pdf", "paper"}},
		bridge.Field{Name: "to", Kind: bridge.FieldMultiChoice, Options: []string{"board", "staff"}},
		bridge.Field{Name: "urgent", Kind: bridge.FieldToggle, Label: "Urgent"},
		bridge.Field{Name: "title", Kind: bridge.FieldText, MaxLength: 40},
		bridge.Field{Name: "notes", Kind: bridge.FieldText, Multiline: true, Description: "Anything the printer should know <b>now</b>"},
	)
	h.rt.add(q)
	p := h.get(h.questionURL("console:alice", q))
	if p.status != http.StatusOK {
		t.Fatalf("status %d:\n%s", p.status, p.body)
	}
	for _, want := range []string{
		"When should I send the report, and how many copies?",
		"The quarterly report for the board is ready.",
		"The date decides which records are included.",
		"Signed in as <strong>console:alice</strong>",
		`<label for="f-on">Send on <span class="req">(required)</span></label>`,
		`<input type="date" id="f-on" name="f.on" value="" aria-required="true"`,
		`<input type="datetime-local" id="f-when" name="f.when"`,
		// Numbers are typed as text, so the validator sees what was typed;
		// a phone shows its number pad when no minus sign is needed.
		`<input type="text" id="f-copies" name="f.copies" value="" inputmode="numeric" autocomplete="off" aria-describedby="f-copies-hint">`,
		`<input type="text" id="f-ratio" name="f.ratio" value="" autocomplete="off" aria-describedby="f-ratio-hint">`,
		`<select id="f-format" name="f.format">`, `<option value="paper">paper</option>`,
		`<input type="checkbox" id="f-to-0" name="f.to" value="board">`,
		`<input type="checkbox" id="f-urgent" name="f.urgent" value="true"`,
		// A whole-number field's fractional bounds are rounded inward.
		`<p class="hint" id="f-boxes-hint">A whole number from 2 to 9.</p>`,
		`id="f-boxes" name="f.boxes" value="" inputmode="numeric"`,
		// maxlength counts UTF-16 units: twice the characters allowed.
		`<input type="text" id="f-title" name="f.title" value="" maxlength="80"`,
		`<textarea id="f-notes" name="f.notes" rows="5"`,
		"Anything the printer should know &lt;b&gt;now&lt;/b&gt;",
		"A whole number from 1 to 9.",
		`<button type="submit" name="action" value="answer">Answer</button>`,
		`id="decline-form"`, `<textarea id="decline-comment" name="comment"`,
		`novalidate`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(p.body, "<b>now</b>") {
		t.Error("a field description was not escaped")
	}
	for _, hdr := range []string{"Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy"} {
		if p.header.Get(hdr) == "" {
			t.Errorf("header %s not set", hdr)
		}
	}
	if got := p.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", got)
	}
}

func TestOtherQuestionKindsRender(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	choices := bridge.Question{Tenant: "acme", JobID: "job-c", QuestionID: "q-c", Question: "Which colour?", Choices: []string{"blue", "green"}, Answerers: []string{"console:alice"}}
	free := bridge.Question{Tenant: "acme", JobID: "job-f", QuestionID: "q-f", Question: "What should the subject line say?", Answerers: []string{"console:alice"}}
	approval := bridge.Question{Tenant: "acme", JobID: "job-a", QuestionID: "q-a", Kind: bridge.KindApproval, Question: "May I send the refund?",
		Proposal: &bridge.Proposal{ID: "refund-1", Action: "refund", Summary: []string{"Refund 40 EUR to order 1234"}}, Answerers: []string{"console:alice"}}
	for _, q := range []bridge.Question{choices, free, approval} {
		h.rt.add(q)
	}
	cases := []struct {
		q    bridge.Question
		want []string
	}{
		{choices, []string{`<input type="radio" id="choice-0" name="answer" value="blue">`, `<input type="radio" id="choice-1" name="answer" value="green">`, "<legend>Pick one</legend>"}},
		{free, []string{`<label for="answer">Your answer</label>`, `<textarea id="answer" name="answer" rows="5">`}},
		{approval, []string{"Refund 40 EUR to order 1234", `value="approve">Approve</button>`, `value="deny" class="secondary">Deny</button>`, `<textarea id="answer-comment" name="comment"`}},
	}
	for _, tc := range cases {
		p := h.get(h.questionURL("console:alice", tc.q))
		if p.status != http.StatusOK {
			t.Fatalf("%s: status %d", tc.q.QuestionID, p.status)
		}
		for _, w := range tc.want {
			if !strings.Contains(p.body, w) {
				t.Errorf("%s: page lacks %q", tc.q.QuestionID, w)
			}
		}
	}
}

func TestLinkErrorsGetClearPages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a := reportQuestion("job-1")
	b := reportQuestion("job-1")
	b.QuestionID = "q-2"
	b.Question = "Question B, which alice was not sent"
	h.rt.add(a)
	h.rt.add(b)
	good := h.questionURL("console:alice", a)
	u, _ := url.Parse(good)

	if p := h.get(good); p.status != http.StatusOK {
		t.Fatalf("good link: status %d", p.status)
	}

	// The link for A at B's address.
	wrong := strings.Replace(good, "/q-1?", "/q-2?", 1)
	p := h.get(wrong)
	if p.status != http.StatusForbidden || !strings.Contains(p.body, "This link is not valid") || strings.Contains(p.body, "Question B") {
		t.Errorf("link for A opened at B: status %d\n%s", p.status, p.body)
	}

	// Another identity with A's signature.
	q := u.Query()
	q.Set("as", "console:mallory")
	p = h.get(u.Path + "?" + q.Encode())
	if p.status != http.StatusForbidden || !strings.Contains(p.body, "does not match") {
		t.Errorf("forged identity: status %d", p.status)
	}

	// A later expiry with the old signature.
	q = u.Query()
	q.Set("exp", "99999999999")
	if p = h.get(u.Path + "?" + q.Encode()); p.status != http.StatusForbidden {
		t.Errorf("extended expiry: status %d", p.status)
	}

	// A broken signature.
	q = u.Query()
	q.Set("sig", strings.Repeat("0", 64))
	if p = h.get(u.Path + "?" + q.Encode()); p.status != http.StatusForbidden {
		t.Errorf("forged signature: status %d", p.status)
	}

	// No query at all.
	if p = h.get(u.Path); p.status != http.StatusForbidden || !strings.Contains(p.body, "incomplete") {
		t.Errorf("bare path: status %d", p.status)
	}

	// Expired: signed correctly, but in the past.
	expired := h.signer.URL(Link{Identity: "console:alice", Scope: ScopeQuestion, Tenant: a.Tenant, JobID: a.JobID, QuestionID: a.QuestionID, Expires: time.Now().Add(-time.Minute)})
	p = h.get(expired)
	if p.status != http.StatusGone || !strings.Contains(p.body, "This link has expired") {
		t.Errorf("expired link: status %d\n%s", p.status, p.body)
	}

	// A job link is not a question link.
	job := h.signer.JobURL("console:alice", a.Tenant, a.JobID, time.Hour)
	ju, _ := url.Parse(job)
	if p = h.get(u.Path + "?" + ju.RawQuery); p.status != http.StatusForbidden {
		t.Errorf("job signature on a question path: status %d", p.status)
	}

	// Another secret.
	other := Signer{PublicURL: h.srv.URL, Secret: []byte("another-secret-of-enough-length")}
	if p = h.get(other.QuestionURL("console:alice", a.Tenant, a.JobID, a.QuestionID, time.Hour)); p.status != http.StatusForbidden {
		t.Errorf("link from another secret: status %d", p.status)
	}

	if strings.Contains(h.logs.String(), u.Query().Get("sig")) {
		t.Error("a link signature reached the logs")
	}
}

func TestUnknownQuestionAndPages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.get(h.signer.QuestionURL("console:alice", "acme", "job-x", "q-missing", time.Hour))
	if p.status != http.StatusNotFound || !strings.Contains(p.body, "No such question") {
		t.Errorf("unknown question: status %d\n%s", p.status, p.body)
	}
	// Someone who may not see it gets the same page as for an unknown one.
	q := reportQuestion("job-1")
	h.rt.add(q)
	if p = h.get(h.questionURL("console:bob", q)); p.status != http.StatusNotFound {
		t.Errorf("stranger: status %d", p.status)
	}
	if p = h.get("/console/nowhere"); p.status != http.StatusNotFound || !strings.Contains(p.body, "No such page") {
		t.Errorf("unknown page: status %d", p.status)
	}
	// Pages that only show refuse other methods, changing nothing.
	list := h.signer.ListURL("console:alice", time.Hour)
	events := strings.Replace(list, "/console/?", "/console/events/?", 1)
	for _, target := range []string{list, h.signer.JobURL("console:alice", "acme", "job-1", time.Hour), events,
		strings.Replace(h.questionURL("console:alice", q), "/console/q/", "/console/events/q/", 1)} {
		if p = h.post(target, url.Values{}); p.status != http.StatusMethodNotAllowed || p.header.Get("Allow") != "GET, HEAD" {
			t.Errorf("POST %s: status %d, Allow %q", u(t, target).Path, p.status, p.header.Get("Allow"))
		}
	}
	req, _ := http.NewRequest(http.MethodDelete, h.abs(h.questionURL("console:alice", q)), nil)
	if p = h.do(req); p.status != http.StatusMethodNotAllowed || p.header.Get("Allow") != "GET, HEAD, POST" {
		t.Errorf("DELETE question: status %d, Allow %q", p.status, p.header.Get("Allow"))
	}
	// A token that is not a valid tenant is refused before any lookup.
	if p = h.get("/console/q/ac%20me/job-1/q-1?as=console:alice&exp=9999999999&sig=00"); p.status != http.StatusForbidden {
		t.Errorf("bad tenant token: status %d", p.status)
	}
	css := h.get("/console/static/console.css")
	if css.status != http.StatusOK || !strings.HasPrefix(css.header.Get("Content-Type"), "text/css") {
		t.Errorf("stylesheet: status %d, type %q", css.status, css.header.Get("Content-Type"))
	}
}

func TestRuntimeDownGivesAClearPage(t *testing.T) {
	t.Parallel()
	n := startNATS(t)
	h := &harness{t: t, n: n, logs: &testenv.LockedBuffer{}}
	h.start(n) // no responder: nobody answers the API
	q := reportQuestion("job-1")
	p := h.get(h.questionURL("console:alice", q))
	if p.status != http.StatusServiceUnavailable || !strings.Contains(p.body, "askbridge is not answering") {
		t.Errorf("status %d\n%s", p.status, p.body)
	}
}

func TestGETChangesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	q := reportQuestion("job-1")
	h.rt.add(q)
	link := h.questionURL("console:alice", q)
	// A link scanner fetching every link, with and without an attempt id,
	// and even with answer parameters in the query.
	for _, u := range []string{
		link,
		link + "&attempt=console-" + strings.Repeat("a", 32),
		link + "&action=answer&f.on=2026-10-20&f.copies=2",
		link + "&action=decline&comment=no",
		h.signer.ListURL("console:alice", time.Hour),
		h.signer.JobURL("console:alice", q.Tenant, q.JobID, time.Hour),
	} {
		for range 2 {
			if p := h.get(u); p.status != http.StatusOK {
				t.Fatalf("GET %s: status %d", u, p.status)
			}
			req, _ := http.NewRequest(http.MethodHead, h.abs(u), nil)
			h.do(req)
		}
	}
	if n := h.answersSent(); n != 0 {
		t.Errorf("GETs published %d attempts", n)
	}
	if h.rt.attemptCount() != 0 || h.rt.state(q.Tenant, q.JobID, q.QuestionID) != bridge.StatePending {
		t.Error("GETs changed the question")
	}
}

// TestPageSaysWhatTheCardsSay checks a waiting question's page says its
// status and who may answer in the words of the chat cards (package card).
func TestPageSaysWhatTheCardsSay(t *testing.T) {
	h := newHarness(t)
	q := reportQuestion("job-1")
	h.rt.add(q)
	p := h.get(h.questionURL("console:alice", q))
	for _, want := range []string{`<p class="state-line" id="state-line"><span class="part">Waiting for an answer</span> · <span class="part">waiting `,
		"<dt>Who may answer</dt><dd>console:alice, slack:U0OWNER (owner), and operators</dd>", "<dt>Deadline</dt>"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("page lacks %q:\n%s", want, p.body)
		}
	}
}

// TestHiddenQuestionShowsOnlyThatItWaits checks a reader, and an operator
// facing a restricted question, see that it waits and for whom, and
// nothing of what it asks.
func TestHiddenQuestionShowsOnlyThatItWaits(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	q := reportQuestion("job-1")
	q.Visibility = bridge.VisibilityRestricted
	h.rt.add(q)
	for _, who := range []string{"console:reader", "console:operator"} {
		p := h.get(h.questionURL(who, q))
		if p.status != http.StatusOK {
			t.Fatalf("%s: status %d", who, p.status)
		}
		for _, secret := range []string{q.Question, q.Context, q.WhyItMatters, "Send on", "send_report"} {
			if strings.Contains(p.body, secret) {
				t.Errorf("%s sees %q of a hidden question", who, secret)
			}
		}
		if !strings.Contains(p.body, "<h1>A question waits</h1>") || strings.Contains(p.body, `id="answer-form"`) ||
			!strings.Contains(p.body, "A restricted question waits for <strong>console:alice, slack:U0OWNER and admins</strong>; only they may read it.") {
			t.Errorf("%s: hidden page:\n%s", who, p.body)
		}
		list := h.get(h.signer.ListURL(who, time.Hour))
		if !strings.Contains(list.body, "A question waits") || strings.Contains(list.body, q.Question) ||
			!strings.Contains(list.body, "A restricted question waits for console:alice, slack:U0OWNER and admins; only they may read it.") {
			t.Errorf("%s: list shows hidden content:\n%s", who, list.body)
		}
	}
	// Of a question of tenant visibility, a reader learns only that it
	// waits, and the operator reads it.
	open := reportQuestion("job-2")
	h.rt.add(open)
	if p := h.get(h.questionURL("console:reader", open)); !strings.Contains(p.body, card.PlaceholderHidden) ||
		strings.Contains(p.body, open.Question) || strings.Contains(p.body, "restricted") {
		t.Errorf("reader's page of a tenant question:\n%s", p.body)
	}
	if p := h.get(h.questionURL("console:operator", open)); !strings.Contains(p.body, open.Question) || !strings.Contains(p.body, `id="answer-form"`) {
		t.Errorf("operator's page of a tenant question:\n%s", p.body)
	}
	// The operator may decline without seeing; the reader may not act.
	if p := h.get(h.questionURL("console:reader", q)); strings.Contains(p.body, `id="decline-form"`) {
		t.Error("a reader is offered to decline")
	}
	link := h.questionURL("console:reader", q)
	// A reader forging an answer form for themselves is refused by permission.
	nonce := strings.Repeat("d", 32)
	l := Link{Identity: "console:reader", Scope: ScopeQuestion, Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID}
	form := url.Values{"nonce": {nonce}, "csrf": {h.signer.FormToken(l, nonce)}, "task_version": {"3"}, "action": {"answer"}, "f.on": {"2026-10-20"}}
	if p := h.post(link, form); p.status != http.StatusForbidden {
		t.Errorf("reader answer: status %d", p.status)
	}
	link = h.questionURL("console:operator", q)
	form = formValues(t, h.get(link).body, "decline-form")
	form.Set("action", "answer")
	form.Set("f.on", "2026-10-20")
	if p := h.post(link, form); p.status != http.StatusForbidden {
		t.Errorf("operator answer: status %d", p.status)
	}
	if n := h.answersSent(); n != 0 {
		t.Fatalf("%d attempts published", n)
	}
	form.Set("action", "decline")
	form.Set("comment", "not mine")
	form.Del("f.on")
	if p := h.post(link, form); p.status != http.StatusSeeOther {
		t.Fatalf("operator decline: status %d\n%s", p.status, p.body)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if h.rt.state(q.Tenant, q.JobID, q.QuestionID) == bridge.StateDeclined {
			return nil
		}
		return errors.New("still waiting for the decline to be decided")
	})
}

func TestListAndJobPages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	q1 := reportQuestion("job-1")
	q2 := bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-2", Question: "Which printer?", Choices: []string{"north", "south"}, Answerers: []string{"console:alice"}}
	q3 := bridge.Question{Tenant: "acme", JobID: "job-2", QuestionID: "q-3", Question: "Not for alice", Answerers: []string{"console:bob"}}
	for _, q := range []bridge.Question{q1, q2, q3} {
		h.rt.add(q)
	}
	list := h.get(h.signer.ListURL("console:alice", time.Hour))
	if list.status != http.StatusOK || !strings.Contains(list.body, q1.Question) || !strings.Contains(list.body, "Which printer?") || strings.Contains(list.body, "Not for alice") {
		t.Fatalf("list: status %d\n%s", list.status, list.body)
	}
	// The list's links open the questions they name, and only those.
	re := regexp.MustCompile(`href="(/console/q/acme/job-1/q-2\?[^"]+)"`)
	m := re.FindStringSubmatch(list.body)
	if m == nil {
		t.Fatalf("no link to q-2 in the list:\n%s", list.body)
	}
	link := strings.ReplaceAll(m[1], "&amp;", "&")
	p := h.get(link)
	if p.status != http.StatusOK || !strings.Contains(p.body, "Which printer?") {
		t.Fatalf("list link: status %d", p.status)
	}
	if p = h.get(strings.Replace(link, "/q-2?", "/q-1?", 1)); p.status != http.StatusForbidden {
		t.Errorf("a list-minted link for q-2 opened q-1: status %d", p.status)
	}
	// Answer q2, then the job page shows who answered, when and via what.
	form := formValues(t, h.get(link).body, "answer-form")
	form.Set("action", "answer")
	form.Set("answer", "south")
	if p = h.post(link, form); p.status != http.StatusSeeOther {
		t.Fatalf("answer: status %d", p.status)
	}
	job := h.get(h.signer.JobURL("console:alice", "acme", "job-1", time.Hour))
	if job.status != http.StatusOK {
		t.Fatalf("job: status %d", job.status)
	}
	for _, want := range []string{"<h1>Job job-1</h1>", "Which printer?", `<span class="state state-answered">Answered</span> — south · by <strong>console:alice</strong> via console`,
		"<td>pending → answered</td><td>console:alice</td><td>console</td>", "<td>new → pending</td><td>acme-support</td>", `<span class="state state-pending">Waiting for an answer</span>`} {
		if !strings.Contains(job.body, want) {
			t.Errorf("job page lacks %q", want)
		}
	}
	if strings.Contains(job.body, "Not for alice") {
		t.Error("job page shows another job")
	}
	list = h.get(h.signer.ListURL("console:alice", time.Hour))
	if strings.Contains(list.body, "Which printer?") {
		t.Error("the pending list still shows an answered question")
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	t.Parallel()
	n := startNATS(t)
	if _, err := New(Options{Signer: Signer{Secret: []byte(testSecret)}}); err == nil {
		t.Error("New without NATS succeeded")
	}
	_, err := New(Options{NATS: n, Signer: Signer{Secret: []byte("short")}})
	if err == nil || strings.Contains(err.Error(), "short") {
		t.Errorf("short secret: err %v", err)
	}
}

// TestStylesheetRefusesOtherMethods checks the stylesheet, a page that is
// only read, answers another method with 405 and Allow, as the other
// pages do, not with "No such page".
func TestStylesheetRefusesOtherMethods(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, method := range []string{http.MethodPost, http.MethodDelete, http.MethodPut} {
		req, _ := http.NewRequest(method, h.abs("/console/static/console.css"), nil)
		if p := h.do(req); p.status != http.StatusMethodNotAllowed || p.header.Get("Allow") != "GET, HEAD" || !strings.Contains(p.body, "Not here") {
			t.Errorf("%s stylesheet: status %d, Allow %q", method, p.status, p.header.Get("Allow"))
		}
	}
	req, _ := http.NewRequest(http.MethodPost, h.abs("/console/static/nothing.css"), nil)
	if p := h.do(req); p.status != http.StatusNotFound {
		t.Errorf("POST to a missing static file: status %d", p.status)
	}
}
