package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// state is the form state a refused attempt leaves: its input and the
// runtime's words.
func (o *outcome) state() formState {
	st := formState{Action: o.action, Input: o.input, Problems: map[string]string{}, Message: o.refused.Text}
	switch o.action {
	case bridge.ActionDelegate:
		st.Problems[inputDelegate], st.Message = o.refused.Text, ""
		return st
	case bridge.ActionSnooze:
		st.Problems[inputSnooze], st.Message = o.refused.Text, ""
		return st
	}
	for name, msg := range o.refused.FieldErrors {
		st.Problems[name] = msg
	}
	if len(st.Problems) > 0 {
		// Each problem shows under its field: the whole refusal would say
		// them again.
		st.Message = ""
	}
	if len(st.Problems) == 0 && o.refused.Reason == bridge.RefusedInvalid {
		// An invalid answer without field errors: place it like CheckAnswer's.
		st.Problems = problems(&bridge.AnswerError{Text: o.refused.Text})
		st.Message = ""
	}
	return st
}

// sameOrigin reports whether a POST comes from the console's own pages.
// Browsers send Sec-Fetch-Site and Origin on form posts. Sec-Fetch-Site,
// when sent, must say same-origin (or none: typed by the user). Origin,
// when sent, must be this server's; "null" (an opaque origin) is accepted
// only alongside Sec-Fetch-Site: same-origin. Clients that send neither
// header still need the form token, which only a page of this link has.
func (c *Console) sameOrigin(r *http.Request) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	switch site {
	case "", "same-origin", "none":
	default:
		return false
	}
	origin := r.Header.Get("Origin")
	switch {
	case origin == "":
		return true
	case origin == "null":
		return site == "same-origin"
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	if c.signer.PublicURL != "" {
		if pu, err := url.Parse(c.signer.PublicURL); err == nil && strings.EqualFold(pu.Scheme, u.Scheme) && strings.EqualFold(pu.Host, u.Host) {
			return true
		}
	}
	return false
}

// submission is a POSTed form that passed the link, origin and token
// checks: whose, which form (its nonce) and which version it was drawn for.
type submission struct {
	l       Link
	form    url.Values
	nonce   string
	version int64
	action  string
}

// handleSubmit takes an answer, approval, decline, delegate or snooze
// from the question page, checks it, proposes it to the runtime, waits
// briefly for the decision and redirects to the question page
// (POST-redirect-GET).
func (c *Console) handleSubmit(w http.ResponseWriter, r *http.Request) {
	s, ok := c.readSubmission(w, r)
	if !ok {
		return
	}
	rep, err := c.show(r.Context(), s.l)
	if err != nil {
		c.apiUnavailable(w, r, err)
		return
	}
	if rep == nil {
		c.notFound(w, r)
		return
	}
	if rep.Question.State != bridge.StatePending {
		c.submitSettled(w, r, s, rep.Question)
		return
	}
	if !c.mayAct(w, r, s, rep.Question) {
		return
	}
	var attempt bridge.AnswerAttempt
	switch s.action {
	case bridge.ActionDelegate, bridge.ActionSnooze:
		attempt, ok = c.requestAttempt(w, r, s, rep)
	default:
		attempt, ok = c.answerAttempt(w, r, s, rep)
	}
	if ok {
		c.send(w, r, s, attempt, rep.Question.TaskVersion)
	}
}

// readSubmission checks the link, reads the form and checks its origin,
// token and version; it answers the request itself when they fail.
func (c *Console) readSubmission(w http.ResponseWriter, r *http.Request) (submission, bool) {
	l, err := c.verifyLink(r, ScopeQuestion, r.PathValue("tenant"), r.PathValue("job"), r.PathValue("question"))
	if err != nil {
		c.linkError(w, r, err)
		return submission{}, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			c.errorPage(w, r, http.StatusRequestEntityTooLarge, "That is too much to send",
				"The form was larger than askbridge accepts. Nothing was sent. Go back, shorten your answer and try again.")
			return submission{}, false
		}
		c.errorPage(w, r, http.StatusBadRequest, "The form could not be read",
			"askbridge could not read what was sent. Nothing was sent on. Reload the question and try again.")
		return submission{}, false
	}
	form := r.PostForm
	if !c.sameOrigin(r) {
		c.log.WarnContext(r.Context(), "console: cross-site post refused", "tenant", l.Tenant, "job", l.JobID, "question", l.QuestionID)
		c.errorPage(w, r, http.StatusForbidden, "This form was not sent from askbridge",
			"The answer came from another site, so askbridge did not take it. Nothing was sent. Open your link and answer there.")
		return submission{}, false
	}
	nonce := form.Get(inputNonce)
	if !validNonce(nonce) || !c.signer.CheckFormToken(l, nonce, form.Get(inputToken)) {
		c.errorPage(w, r, http.StatusForbidden, "This form is not valid",
			"The form's security token is missing or does not match this link. Nothing was sent. Reload the question and try again.")
		return submission{}, false
	}
	version, err := strconv.ParseInt(form.Get(inputTaskVersion), 10, 64)
	if err != nil || version < 0 {
		c.errorPage(w, r, http.StatusBadRequest, "The form could not be read",
			"The form did not say which version of the question it answers. Nothing was sent. Reload the question and try again.")
		return submission{}, false
	}
	action := form.Get(inputAction)
	if action == "" {
		action = bridge.ActionAnswer
	}
	return submission{l: l, form: form, nonce: nonce, version: version, action: action}, true
}

// formAction is the form the input and problems of s belong to: decline,
// delegate and snooze have their own; approve and deny are the answer form's.
func (s submission) formAction() string {
	switch s.action {
	case bridge.ActionDecline, bridge.ActionDelegate, bridge.ActionSnooze:
		return s.action
	}
	return bridge.ActionAnswer
}

// submitSettled handles a form for a question settled meanwhile: nothing
// is sent, and the page shows the outcome, with why this form was not
// taken in the runtime's words (who answered it and when...). Not when
// this person settled it (a second click of their own form): the outcome
// is theirs.
func (c *Console) submitSettled(w http.ResponseWriter, r *http.Request, s submission, v *bridge.QuestionView) {
	page := c.signer.RelativeURL(s.l)
	id := attemptPrefix + s.nonce
	if o, ok := c.outcomes.get(id); (ok && o.matches(s.l)) || (v.By != "" && v.By == s.l.Identity) {
		http.Redirect(w, r, page, http.StatusSeeOther)
		return
	}
	c.outcomes.put(id, &outcome{identity: s.l.Identity, tenant: s.l.Tenant, job: s.l.JobID, question: s.l.QuestionID, at: time.Now(),
		action: s.formAction(), input: formInput(s.form), refused: &bridge.Event{Type: bridge.EventRefused, Reason: bridge.RefusedNotPending, Text: endedText(v)}})
	http.Redirect(w, r, page+"&attempt="+url.QueryEscape(id), http.StatusSeeOther)
}

// mayAct refuses, with a page, what the runtime's view says the person
// may not do: answer, approve, deny, delegate and snooze need may-answer,
// decline may-decline.
func (c *Console) mayAct(w http.ResponseWriter, r *http.Request, s submission, v *bridge.QuestionView) bool {
	allowed := v.CanAnswer && !v.Hidden && v.Question != nil
	switch s.action {
	case bridge.ActionDecline:
		allowed = v.CanDecline
	case bridge.ActionDelegate, bridge.ActionSnooze:
		allowed = v.CanAnswer
	}
	if allowed {
		return true
	}
	text := "askbridge does not let " + s.l.Identity + " " + actionWords(s.action) + " this question."
	if s.action != bridge.ActionDecline && v.CannotAnswer != "" {
		text = v.CannotAnswer // the runtime's words, as a refused answer gets them
	}
	c.errorPage(w, r, http.StatusForbidden, "You can't do that here", text+" Nothing was sent.")
	return false
}

// answerAttempt checks an answer, approval or decline; a problem
// re-draws the form with it (and nothing is sent).
func (c *Console) answerAttempt(w http.ResponseWriter, r *http.Request, s submission, rep *bridge.ShowReply) (bridge.AnswerAttempt, bool) {
	v := rep.Question
	q := v.Question
	if q == nil {
		// A hidden question may only be declined; a decline needs no content.
		q = &bridge.Question{Tenant: v.Tenant, JobID: v.JobID, QuestionID: v.QuestionID, Kind: v.Kind}
	}
	comment := strings.TrimSpace(strings.ReplaceAll(s.form.Get(inputComment), "\r\n", "\n"))
	if s.action == bridge.ActionApprove || s.action == bridge.ActionAnswer {
		comment = ""
	}
	answer := answerFromForm(q, s.action, s.form)
	input := formInput(s.form)
	if s.action == bridge.ActionDeny && comment == "" {
		// As Slack's and Discord's deny forms do: the agent reads the
		// reason to change its plan.
		st := formState{Action: s.formAction(), Input: input, Problems: map[string]string{inputComment: denyReasonNeeded}}
		c.render(w, r, http.StatusUnprocessableEntity, "question", c.buildQuestionPage(s.l, rep, st))
		return bridge.AnswerAttempt{}, false
	}
	checked, aerr := bridge.CheckAnswer(q, s.action, answer, comment)
	switch {
	case aerr != nil && s.version != v.TaskVersion:
		// The form was drawn for another version of the question (asked
		// again since): the answer is not for the question checked here.
		// The runtime refuses it as stale, in its words; it is not held
		// to this version's fields.
		checked = &bridge.CheckedAnswer{Action: s.action, Value: answer}
	case aerr != nil:
		st := formState{Action: s.formAction(), Input: input, Problems: problems(aerr)}
		c.render(w, r, http.StatusUnprocessableEntity, "question", c.buildQuestionPage(s.l, rep, st))
		return bridge.AnswerAttempt{}, false
	}
	var value []byte
	if checked.Action == bridge.ActionAnswer {
		value = checked.Value
	}
	return c.newAttempt(s, v, checked.Action, value, comment), true
}

// newAttempt is the attempt of s, bound to the version the form was
// drawn for, even 0.
func (c *Console) newAttempt(s submission, v *bridge.QuestionView, action string, value []byte, comment string) bridge.AnswerAttempt {
	return engine.NewAttempt(bridge.PlatformConsole, attemptPrefix+s.nonce,
		engine.Question{Tenant: v.Tenant, JobID: v.JobID, QuestionID: v.QuestionID, TaskVersion: s.version, Exact: true},
		engine.Person{Identity: s.l.Identity, Roles: s.l.Roles}, action, value, comment, c.now(), nil)
}

// send proposes the attempt, waits for its decision and redirects to the
// question page, which shows it.
func (c *Console) send(w http.ResponseWriter, r *http.Request, s submission, attempt bridge.AnswerAttempt, pending int64) {
	next := c.signer.RelativeURL(s.l) + "&attempt=" + url.QueryEscape(attempt.AttemptID)
	if o, ok := c.outcomes.get(attempt.AttemptID); ok && o.matches(s.l) {
		// This form was sent already (a double click): same attempt, and
		// its decision, if any, is known. Do not wait for it again.
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	word, late, err := c.propose(r.Context(), attempt, pending)
	if err != nil {
		c.log.ErrorContext(r.Context(), "console: propose answer", "tenant", attempt.Tenant, "job", attempt.JobID, "question", attempt.QuestionID, "err", err)
		c.errorPage(w, r, http.StatusServiceUnavailable, "Your answer could not be sent",
			"askbridge could not pass your answer on. Nothing was recorded. Go back and try again in a moment.")
		return
	}
	c.log.InfoContext(r.Context(), "console: answer proposed", "tenant", attempt.Tenant, "job", attempt.JobID, "question", attempt.QuestionID,
		"attempt", attempt.AttemptID, "action", attempt.Action, "by", s.l.Identity, "refused", word != nil && word.Type == bridge.EventRefused)
	input := formInput(s.form)
	o := &outcome{identity: s.l.Identity, tenant: s.l.Tenant, job: s.l.JobID, question: s.l.QuestionID, at: time.Now(), action: s.formAction()}
	switch {
	case word != nil && word.Type == bridge.EventRefused:
		o.refused, o.input = word, input
	case word != nil:
		o.done = word.Text // delegated or snoozed: the runtime's words
	}
	c.outcomes.put(attempt.AttemptID, o)
	if late != nil {
		// Put first: a refusal that comes later amends this outcome.
		go late.await(func(ev *bridge.Event) { c.outcomes.refuse(attempt.AttemptID, ev, input) })
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// endedText says what ended the question of v, in the words the runtime
// refuses a late answer with, as far as v shows it (a person who may not
// see the question learns only that it no longer waits).
func endedText(v *bridge.QuestionView) string {
	if v.Hidden || v.SettledAt.IsZero() {
		return "This question no longer waits for an answer (" + strings.ReplaceAll(v.State, "_", " ") + ")."
	}
	state := v.State
	if state == bridge.StateFailed && v.Question != nil && v.Text == bridge.TimedOutText(v.Question.TimeoutDuration()) {
		state = bridge.StateTimedOut // on_timeout: fail
	}
	_, text := bridge.NotPendingText(state, v.By, v.ByName, v.SettledAt, v.TaskVersion)
	return text
}

// denyReasonNeeded is what a deny without a reason is told.
const denyReasonNeeded = "Say why you deny it: the agent reads the reason to change its plan."

func actionWords(action string) string {
	switch action {
	case bridge.ActionDecline:
		return "decline"
	case bridge.ActionApprove:
		return "approve"
	case bridge.ActionDeny:
		return "deny"
	case bridge.ActionDelegate:
		return "pass on"
	case bridge.ActionSnooze:
		return "snooze"
	}
	return "answer"
}

// propose publishes the attempt and waits up to DecisionWait for the
// runtime's word on it: its refusal or, for a delegate or snooze, the
// event that did it (returned), or the question settling
// at pending, the version the page showed waiting. Running out of time is
// not an error: the page then says it was sent, and the lateDecision
// returned still listens for a refusal, so that reloading the page shows it.
func (c *Console) propose(ctx context.Context, a bridge.AnswerAttempt, pending int64) (*bridge.Event, *lateDecision, error) {
	events := make(chan *nats.Msg, 64)
	sub, err := c.nc.ChanSubscribe(bridge.EventSubject(a.Tenant, a.JobID), events)
	if err != nil {
		return nil, nil, fmt.Errorf("console: subscribe to events: %w", err)
	}
	handedOver := false
	defer func() {
		if !handedOver {
			_ = sub.Unsubscribe()
		}
	}()
	pctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	// The subscription must reach the server before the attempt can be
	// decided, or the decision could pass unseen.
	if err := c.nc.FlushWithContext(pctx); err != nil {
		return nil, nil, fmt.Errorf("console: flush event subscription: %w", err)
	}
	if err := bridge.Publish(pctx, c.nats.JS, bridge.AnswerSubject(a.Tenant, a.JobID), "attempt-"+a.AttemptID, a); err != nil {
		return nil, nil, fmt.Errorf("console: propose %s: %w", a.AttemptID, err)
	}
	timer := time.NewTimer(DecisionWait)
	defer timer.Stop()
	refused, decided := decision(ctx.Done(), timer.C, events, &a, pending)
	if decided || ctx.Err() != nil {
		return refused, nil, nil
	}
	handedOver = true
	return nil, &lateDecision{sub: sub, events: events, attempt: a, pending: pending}, nil
}

// lateDecision listens for the decision on an attempt that did not come
// within DecisionWait.
type lateDecision struct {
	sub     *nats.Subscription
	events  chan *nats.Msg
	attempt bridge.AnswerAttempt
	pending int64
}

// await calls refused with the attempt's refusal if it comes within
// LateDecisionWait, then stops listening.
func (l *lateDecision) await(refused func(*bridge.Event)) {
	defer func() { _ = l.sub.Unsubscribe() }()
	timer := time.NewTimer(LateDecisionWait)
	defer timer.Stop()
	if ev, _ := decision(nil, timer.C, l.events, &l.attempt, l.pending); ev != nil && ev.Type == bridge.EventRefused {
		refused(ev)
	}
}

// decision reads the job's events until the runtime refuses a (returned),
// delegates or snoozes as a asked (returned), records it as one approval
// of several, or a's question settles at pending
// (decided), or done or timeout ends the wait first. An attempt for another version than pending is only ever refused
// (stale): the event that superseded its version may still come, relayed
// after the page showed the new one, and decides nothing.
func decision(done <-chan struct{}, timeout <-chan time.Time, events <-chan *nats.Msg, a *bridge.AnswerAttempt, pending int64) (refused *bridge.Event, decided bool) {
	for {
		select {
		case <-done:
			return nil, false
		case <-timeout:
			return nil, false
		case m := <-events:
			var ev bridge.Event
			if json.Unmarshal(m.Data, &ev) != nil {
				continue
			}
			if ev.Type == bridge.EventRefused && ev.AttemptID == a.AttemptID {
				return &ev, true
			}
			if ev.Type == bridge.EventApproval && ev.AttemptID == a.AttemptID {
				return nil, true // recorded: the proposal needs more approvals
			}
			if (ev.Type == bridge.EventDelegated || ev.Type == bridge.EventSnoozed) && ev.AttemptID == a.AttemptID {
				return &ev, true // done: its text says so
			}
			if ev.QuestionID != a.QuestionID || ev.TaskVersion != pending || a.TaskVersion != pending {
				continue
			}
			switch ev.Type {
			case bridge.EventAnswered, bridge.EventDeclined, bridge.EventTimedOut, bridge.EventCancelled, bridge.EventSuperseded:
				return nil, true
			}
		}
	}
}
