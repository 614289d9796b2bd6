package console

import (
	"context"
	"errors"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// These tests run the console against the real runtime, store and NATS.

func resumeFor(t *testing.T, rec *testenv.Recorder) bridge.Resume {
	t.Helper()
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if rec.Len() > 0 {
			return nil
		}
		return errors.New("still waiting for the agent's resume")
	})
	res := rec.Resumes()
	if len(res) != 1 {
		t.Fatalf("%d resumes, want 1", len(res))
	}
	return res[0]
}

func TestE2EChoicesAnswerResumesTheAgent(t *testing.T) {
	t.Parallel()
	h, env := newEnvHarness(t, testenv.Options{})
	q := bridge.Question{Tenant: "acme", JobID: "job-e1", QuestionID: "q-colour", TaskVersion: 1,
		Question: "Which colour should the cover be?", Choices: []string{"blue", "green"}, Answerers: []string{"console:alice"}}
	resumes := env.Record(t, bridge.StreamResumes, bridge.ResumeSubject(q.Tenant, q.JobID))
	ask(t, h, env, q)
	link := h.questionURL("console:alice", q)
	form := formValues(t, h.get(link).body, "answer-form")
	form.Set("action", "answer")
	form.Set("answer", "green")
	p := h.post(link, form)
	if p.status != http.StatusSeeOther {
		t.Fatalf("status %d\n%s", p.status, p.body)
	}
	p = h.decidedPage(p)
	if !strings.Contains(p.body, `<h2 id="outcome-h">Answered</h2>`) || !strings.Contains(p.body, `<p class="answer">green</p>`) || !strings.Contains(p.body, "By <strong>console:alice</strong> via console") {
		t.Errorf("outcome page:\n%s", p.body)
	}
	r := resumeFor(t, resumes)
	if r.Outcome != bridge.OutcomeAnswered || r.Text != "The answer: green" || r.By != "console:alice" || r.Via != "console" {
		t.Errorf("resume %+v", r)
	}
	// The same form again is the same attempt: still one resume, one attempt.
	if p = h.post(link, form); p.status != http.StatusSeeOther {
		t.Fatalf("resubmit: status %d", p.status)
	}
	if n := h.answersSent(); n != 1 {
		t.Errorf("%d attempts on the stream, want 1", n)
	}
	// The job page shows the audit trail from the runtime.
	job := h.get(h.signer.JobURL("console:alice", q.Tenant, q.JobID, time.Hour))
	for _, want := range []string{"Which colour should the cover be?", "<td>pending → answered</td><td>console:alice</td><td>console</td>"} {
		if !strings.Contains(job.body, want) {
			t.Errorf("job page lacks %q\n%s", want, job.body)
		}
	}
	if rec := resumes.Len(); rec != 1 {
		t.Errorf("%d resumes after the resubmit", rec)
	}
}

func TestE2EStaleAnswerRefusedInline(t *testing.T) {
	t.Parallel()
	h, env := newEnvHarness(t, testenv.Options{})
	q := reportQuestion("job-e2")
	resumes := env.Record(t, bridge.StreamResumes, bridge.ResumeSubject(q.Tenant, q.JobID))
	ask(t, h, env, q)
	link := h.questionURL("console:alice", q)
	form := formValues(t, h.get(link).body, "answer-form")
	form.Set("action", "answer")
	form.Set("f.on", "2026-10-20")
	form.Set("f.copies", "3")
	form.Set("task_version", "2") // the page was drawn for an older version
	p := h.post(link, form)
	if p.status != http.StatusSeeOther {
		t.Fatalf("status %d\n%s", p.status, p.body)
	}
	p = h.decidedPage(p)
	for _, want := range []string{`id="refusal"><p>This answer is stale: it belongs to task version 2`, `name="f.on" value="2026-10-20"`, `name="f.copies" value="3"`, `id="answer-form"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("page lacks %q\n%s", want, p.body)
		}
	}
	if resumes.Len() != 0 {
		t.Error("a stale answer resumed the agent")
	}
	// Answering from the re-drawn form works.
	form = formValues(t, p.body, "answer-form")
	form.Set("action", "answer")
	form.Set("f.on", "2026-10-21")
	if p = h.post(link, form); p.status != http.StatusSeeOther {
		t.Fatalf("status %d", p.status)
	}
	if r := resumeFor(t, resumes); r.Text != `The answer: {"on":"2026-10-21"}` {
		t.Errorf("resume %+v", r)
	}
}

func TestE2EPermissionsAndDecline(t *testing.T) {
	t.Parallel()
	h, env := newEnvHarness(t, testenv.Options{Roles: runtime.Roles{Readers: []string{"console:reader"}, Operators: []string{"console:op"}, Admins: []string{"console:admin"}}})
	q := reportQuestion("job-e3")
	q.Visibility = bridge.VisibilityRestricted
	resumes := env.Record(t, bridge.StreamResumes, bridge.ResumeSubject(q.Tenant, q.JobID))
	ask(t, h, env, q)

	// Its answerer and an admin read it and may answer it.
	for _, who := range []string{"console:alice", "console:admin"} {
		p := h.get(h.questionURL(who, q))
		if !strings.Contains(p.body, q.Question) || !strings.Contains(p.body, `id="answer-form"`) ||
			!strings.Contains(p.body, "<dt>Restricted to</dt><dd>console:alice, slack:U0OWNER and admins</dd>") {
			t.Errorf("%s's page:\n%s", who, p.body)
		}
		if list := h.get(h.signer.ListURL(who, time.Hour)); !strings.Contains(list.body, q.Question) {
			t.Errorf("%s's list:\n%s", who, list.body)
		}
	}
	// A reader and an operator see only that it waits, and for whom.
	restrictedLine := "A restricted question waits for <strong>console:alice, slack:U0OWNER and admins</strong>; only they may read it."
	for _, who := range []string{"console:reader", "console:op"} {
		for _, page := range []string{h.questionURL(who, q), h.signer.ListURL(who, time.Hour), h.signer.JobURL(who, q.Tenant, q.JobID, time.Hour)} {
			p := h.get(page)
			for _, secret := range []string{q.Question, q.Context, q.WhyItMatters, "Send on", "send_report"} {
				if p.status != http.StatusOK || strings.Contains(p.body, secret) {
					t.Errorf("%s: status %d, or the page shows %q:\n%s", who, p.status, secret, p.body)
				}
			}
		}
	}
	// The reader cannot act.
	p := h.get(h.questionURL("console:reader", q))
	if p.status != http.StatusOK || !strings.Contains(p.body, "<h1>A question waits</h1>") || !strings.Contains(p.body, restrictedLine) ||
		strings.Contains(p.body, "<form") {
		t.Errorf("reader page: status %d\n%s", p.status, p.body)
	}
	// Someone without a role may not even see it.
	if p = h.get(h.questionURL("console:stranger", q)); p.status != http.StatusNotFound {
		t.Errorf("stranger: status %d", p.status)
	}
	// An operator may only decline a restricted question, without seeing it.
	link := h.questionURL("console:op", q)
	p = h.get(link)
	if strings.Contains(p.body, q.Question) || strings.Contains(p.body, `id="answer-form"`) || !strings.Contains(p.body, `id="decline-form"`) ||
		!strings.Contains(p.body, restrictedLine) {
		t.Fatalf("operator page:\n%s", p.body)
	}
	form := formValues(t, p.body, "decline-form")
	// Sent as an answer, the form is refused in the runtime's words.
	form.Set("action", "answer")
	if p := h.post(link, form); p.status != http.StatusForbidden ||
		!strings.Contains(p.body, html.EscapeString("You can't answer this question: it is restricted to console:alice, slack:U0OWNER and admins; you may decline it without seeing it.")) {
		t.Fatalf("operator's answer: status %d\n%s", p.status, p.body)
	}
	form.Set("action", "decline")
	form.Set("comment", "ask Ana")
	if p = h.post(link, form); p.status != http.StatusSeeOther {
		t.Fatalf("decline: status %d\n%s", p.status, p.body)
	}
	r := resumeFor(t, resumes)
	if r.Outcome != bridge.OutcomeDeclined || r.Text != "console:op declined to answer: ask Ana." || r.Via != "console" {
		t.Errorf("resume %+v", r)
	}
	// Alice now sees the outcome and no form.
	p = h.get(h.questionURL("console:alice", q))
	if !strings.Contains(p.body, `<h2 id="outcome-h">Declined</h2>`) || !strings.Contains(p.body, "Reason: ask Ana") || strings.Contains(p.body, "<form") {
		t.Errorf("alice after the decline:\n%s", p.body)
	}
}

func TestE2EGetChangesNothing(t *testing.T) {
	t.Parallel()
	h, env := newEnvHarness(t, testenv.Options{})
	q := reportQuestion("job-e4")
	events := env.Record(t, bridge.StreamEvents, bridge.EventSubject(q.Tenant, q.JobID))
	ask(t, h, env, q)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if events.Len() > 0 {
			return nil
		}
		return errors.New("still waiting for the asked event")
	})
	before := events.EventTypes()
	link := h.questionURL("console:alice", q)
	for _, u := range []string{link, link + "&action=answer&f.on=2026-10-20", h.signer.ListURL("console:alice", time.Hour), h.signer.JobURL("console:alice", q.Tenant, q.JobID, time.Hour)} {
		for range 3 {
			if p := h.get(u); p.status != http.StatusOK {
				t.Fatalf("GET: status %d", p.status)
			}
		}
	}
	// A stale or altered list cursor shows the list from its start.
	if p := h.get(h.signer.ListURL("console:alice", time.Hour) + "&after=not-a-cursor"); p.status != http.StatusOK || !strings.Contains(p.body, q.Question) {
		t.Errorf("list with a bad cursor: status %d\n%s", p.status, p.body)
	}
	// Show the question once more through the API: still pending.
	var rep bridge.ShowReply
	c, err := New(Options{NATS: env.NATS, Signer: h.signer})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.api(ctx, bridge.APIShow, bridge.ShowRequest{As: "console:alice", Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID}, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Question == nil || rep.Question.State != bridge.StatePending {
		t.Errorf("after GETs: %+v", rep)
	}
	if n := h.answersSent(); n != 0 {
		t.Errorf("GETs published %d attempts", n)
	}
	if after := events.EventTypes(); after != before {
		t.Errorf("GETs caused events: %q -> %q", before, after)
	}
}

// Links are minted for chat identities too: the Slack owner approves in
// the console, and the agent reads who and via what.
func TestE2ESlackIdentityApprovesInConsole(t *testing.T) {
	t.Parallel()
	h, env := newEnvHarness(t, testenv.Options{})
	q := bridge.Question{Tenant: "acme", JobID: "job-e5", QuestionID: "q-refund", TaskVersion: 1, Kind: bridge.KindApproval,
		Question: "May I refund 40 EUR?", Proposal: &bridge.Proposal{ID: "refund-1", Action: "refund", Summary: []string{"Refund 40 EUR to order 1234"}},
		Owner: "slack:U0OWNER", Answerers: []string{"slack:U0OWNER"}}
	resumes := env.Record(t, bridge.StreamResumes, bridge.ResumeSubject(q.Tenant, q.JobID))
	ask(t, h, env, q)
	link := h.questionURL("slack:U0OWNER", q)
	p := h.get(link)
	if !strings.Contains(p.body, "Signed in as <strong>slack:U0OWNER</strong>") || !strings.Contains(p.body, "Refund 40 EUR to order 1234") {
		t.Fatalf("approval page:\n%s", p.body)
	}
	form := formValues(t, p.body, "answer-form")
	form.Set("action", "approve")
	if p = h.post(link, form); p.status != http.StatusSeeOther {
		t.Fatalf("approve: status %d\n%s", p.status, p.body)
	}
	r := resumeFor(t, resumes)
	if r.Outcome != bridge.OutcomeAnswered || r.Text != "The answer: approved" || r.By != "slack:U0OWNER" || r.Via != "console" {
		t.Errorf("resume %+v", r)
	}
	p = h.get(p.header.Get("Location"))
	if !strings.Contains(p.body, `<h2 id="outcome-h">Approved (not yet executed)</h2>`) ||
		!strings.Contains(p.body, `<p class="approvals">Approved by slack:U0OWNER</p>`) {
		t.Errorf("outcome page:\n%s", p.body)
	}
}

// TestE2ELinkCarriesPlatformRoles checks a link signed with the roles a
// chat adapter established (a Discord member's mapped admin role) lets
// that person see and answer a question their identity alone may not,
// the roles reaching the runtime with the answer; and that the roles
// cannot be added to a link by hand.
func TestE2ELinkCarriesPlatformRoles(t *testing.T) {
	t.Parallel()
	h, env := newEnvHarness(t, testenv.Options{})
	q := reportQuestion("job-roles")
	q.Answerers = []string{"console:alice"}
	resumes := env.Record(t, bridge.StreamResumes, bridge.ResumeSubject(q.Tenant, q.JobID))
	ask(t, h, env, q)
	const member = "discord:1234567890"
	if p := h.get(h.questionURL(member, q)); p.status != http.StatusNotFound {
		t.Fatalf("without roles: status %d", p.status)
	}
	link := h.signer.QuestionURLWithRoles(member, []string{"admin"}, q.Tenant, q.JobID, q.QuestionID, time.Hour)
	p := h.get(link)
	if p.status != http.StatusOK || !strings.Contains(p.body, q.Question) || !strings.Contains(p.body, `id="answer-form"`) {
		t.Fatalf("with the admin role: status %d\n%s", p.status, p.body)
	}
	// Roles added to a link by hand break its signature.
	if p := h.get(h.questionURL(member, q) + "&roles=admin"); p.status != http.StatusForbidden {
		t.Fatalf("roles added by hand: status %d", p.status)
	}
	form := formValues(t, p.body, "answer-form")
	form.Set("action", "answer")
	form.Set("f.on", "2026-10-20")
	form.Set("f.copies", "2")
	if p := h.post(link, form); p.status != http.StatusSeeOther {
		t.Fatalf("answer: status %d\n%s", p.status, p.body)
	}
	if r := resumeFor(t, resumes); r.Outcome != bridge.OutcomeAnswered || r.By != member {
		t.Fatalf("resume %+v", r)
	}
}

// A form drawn for version 1 of a question, posted after the agent asked
// it again at version 2 with other choices: the answer belongs to the
// replaced question. The person is told so in the runtime's words, not
// that their choice is not one of version 2's; nothing is answered, and
// version 2 still waits.
func TestE2EFormPostedAfterAReaskIsStale(t *testing.T) {
	t.Parallel()
	h, env := newEnvHarness(t, testenv.Options{})
	q := bridge.Question{Tenant: "acme", JobID: "job-reask", QuestionID: "q-colour", TaskVersion: 1,
		Question: "Which colour should the cover be?", Choices: []string{"blue", "green"}, Answerers: []string{"console:alice"}}
	resumes := env.Record(t, bridge.StreamResumes, bridge.ResumeSubject(q.Tenant, q.JobID))
	ask(t, h, env, q)
	link := h.questionURL("console:alice", q)
	form := formValues(t, h.get(link).body, "answer-form")
	if form.Get("task_version") != "1" {
		t.Fatalf("form for version %q", form.Get("task_version"))
	}
	q2 := q
	q2.TaskVersion, q2.Question, q2.Choices = 2, "Which colour should the back cover be?", []string{"red", "yellow"}
	ask(t, h, env, q2)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if strings.Contains(h.get(link).body, "back cover") {
			return nil
		}
		return errors.New("still waiting for version 2 asked")
	})
	form.Set("action", "answer")
	form.Set("answer", "blue")
	p := h.post(link, form)
	if p.status == http.StatusSeeOther {
		p = h.decidedPage(p)
	}
	want := html.EscapeString("This answer is stale: the question belongs to task version 1, which a newer version of the task replaced at ")
	if !strings.Contains(p.body, want) {
		t.Errorf("status %d; page lacks %q:\n%s", p.status, want, p.body)
	}
	if strings.Contains(p.body, "must be one of") {
		t.Errorf("the version 1 answer was checked against version 2's choices:\n%s", p.body)
	}
	// Version 1 was superseded (one resume), version 2 still waits.
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if resumes.Len() > 0 {
			return nil
		}
		return errors.New("still waiting for version 1's resume")
	})
	if res := resumes.Resumes(); len(res) != 1 || res[0].TaskVersion != 1 || res[0].Outcome != bridge.OutcomeCanceled {
		t.Errorf("resumes %+v", res)
	}
	if !strings.Contains(h.get(link).body, `id="answer-form"`) {
		t.Error("version 2 no longer offers its form")
	}
}

// A form posted after someone else answered sends nothing; the page shows
// the answer and says, as a refusal, who answered and when. Posting one's
// own accepted form again says nothing of the kind.
func TestE2EFormPostedAfterAnotherAnswerSaysWhoAnswered(t *testing.T) {
	t.Parallel()
	h, env := newEnvHarness(t, testenv.Options{Roles: runtime.Roles{Operators: []string{"console:alice", "console:bob"}}})
	q := bridge.Question{Tenant: "acme", JobID: "job-late", QuestionID: "q-colour", TaskVersion: 1,
		Question: "Which colour should the cover be?", Choices: []string{"blue", "green"}}
	resumes := env.Record(t, bridge.StreamResumes, bridge.ResumeSubject(q.Tenant, q.JobID))
	if err := env.Agent.Publish(context.Background(), &q); err != nil {
		t.Fatal(err)
	}
	alice, bob := h.questionURL("console:alice", q), h.questionURL("console:bob", q)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if h.get(alice).status == http.StatusOK {
			return nil
		}
		return errors.New("still waiting for the question stored")
	})
	aliceForm := formValues(t, h.get(alice).body, "decline-form")
	bobForm := formValues(t, h.get(bob).body, "answer-form")

	// Bob answers first.
	bobForm.Set("action", "answer")
	bobForm.Set("answer", "green")
	if p := h.post(bob, bobForm); p.status != http.StatusSeeOther {
		t.Fatalf("bob: status %d", p.status)
	}
	if r := resumeFor(t, resumes); r.By != "console:bob" {
		t.Fatalf("resume %+v", r)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if strings.Contains(h.get(alice).body, `<h2 id="outcome-h">Answered</h2>`) {
			return nil
		}
		return errors.New("still waiting for the answer shown")
	})

	// Alice's decline form, posted now.
	aliceForm.Set("action", "decline")
	aliceForm.Set("comment", "ask Ana")
	p := h.post(alice, aliceForm)
	if p.status != http.StatusSeeOther {
		t.Fatalf("alice: status %d", p.status)
	}
	p = h.get(p.header.Get("Location"))
	// The moment is a <time> the reader's browser shows in their zone,
	// never the raw RFC 3339 in the text.
	refusal := regexp.MustCompile(`id="refusal"><p>This question was already answered by console:bob at <time datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ">\d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d UTC</time>\.</p>`)
	if !refusal.MatchString(p.body) || !strings.Contains(p.body, `<h2 id="outcome-h">Answered</h2>`) || strings.Contains(p.body, `id="decline-form"`) {
		t.Errorf("alice's page:\n%s", p.body)
	}
	// Bob's own form again: his answer, no refusal.
	p = h.post(bob, bobForm)
	if p.status != http.StatusSeeOther {
		t.Fatalf("bob again: status %d", p.status)
	}
	if p = h.get(p.header.Get("Location")); strings.Contains(p.body, `id="refusal"`) || !strings.Contains(p.body, "By <strong>console:bob</strong> via console") {
		t.Errorf("bob's page after a second post:\n%s", p.body)
	}
	if n := h.answersSent(); n != 1 {
		t.Errorf("%d attempts sent, want bob's alone", n)
	}
	if n := resumes.Len(); n != 1 {
		t.Errorf("%d resumes", n)
	}
}

// TestE2EOperatorAnswersForTheNamedAnswerer checks answerers add people:
// an operator reads and answers a question whose answerers name someone
// else.
func TestE2EOperatorAnswersForTheNamedAnswerer(t *testing.T) {
	t.Parallel()
	h, env := newEnvHarness(t, testenv.Options{Roles: runtime.Roles{Operators: []string{"console:op"}}})
	q := bridge.Question{Tenant: "acme", JobID: "job-e4", QuestionID: "q-colour", TaskVersion: 1,
		Question: "Which colour should the cover be?", Choices: []string{"blue", "green"}, Answerers: []string{"slack:U0ANA"}}
	resumes := env.Record(t, bridge.StreamResumes, bridge.ResumeSubject(q.Tenant, q.JobID))
	ask(t, h, env, q)
	link := h.questionURL("console:op", q)
	p := h.get(link)
	if !strings.Contains(p.body, q.Question) || strings.Contains(p.body, "Restricted to") {
		t.Fatalf("operator's page:\n%s", p.body)
	}
	form := formValues(t, p.body, "answer-form")
	form.Set("action", "answer")
	form.Set("answer", "blue")
	if p = h.post(link, form); p.status != http.StatusSeeOther {
		t.Fatalf("status %d\n%s", p.status, p.body)
	}
	if r := resumeFor(t, resumes); r.Outcome != bridge.OutcomeAnswered || r.Text != "The answer: blue" || r.By != "console:op" {
		t.Errorf("resume %+v", r)
	}
}

// decidedPage opens the page a form post redirected to, reloading it while
// it says the answer waits to be decided: under load the runtime may
// decide after DecisionWait, and the page shows the decision on reload.
func (h *harness) decidedPage(posted page) page {
	h.t.Helper()
	next := posted.header.Get("Location")
	var p page
	testenv.CheckFor(h.t, testenv.Patience, 10*time.Millisecond, func() error {
		if p = h.get(next); strings.Contains(p.body, `id="sent"`) {
			return errors.New("the page still says the answer waits to be decided")
		}
		return nil
	})
	return p
}
