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
	for name, msg := range o.refused.FieldErrors {
		st.Problems[name] = msg
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

// handleSubmit takes an answer, approval or decline from the question
// form, checks it, proposes it to the runtime, waits briefly for the
// decision and redirects to the question page (POST-redirect-GET).
func (c *Console) handleSubmit(w http.ResponseWriter, r *http.Request) {
	l, err := c.verifyLink(r, ScopeQuestion, r.PathValue("tenant"), r.PathValue("job"), r.PathValue("question"))
	if err != nil {
		c.linkError(w, r, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			c.errorPage(w, r, http.StatusRequestEntityTooLarge, "That is too much to send",
				"The form was larger than askbridge accepts. Nothing was sent. Go back, shorten your answer and try again.")
			return
		}
		c.errorPage(w, r, http.StatusBadRequest, "The form could not be read",
			"askbridge could not read what was sent. Nothing was sent on. Reload the question and try again.")
		return
	}
	form := r.PostForm
	if !c.sameOrigin(r) {
		c.log.WarnContext(r.Context(), "console: cross-site post refused", "tenant", l.Tenant, "job", l.JobID, "question", l.QuestionID)
		c.errorPage(w, r, http.StatusForbidden, "This form was not sent from askbridge",
			"The answer came from another site, so askbridge did not take it. Nothing was sent. Open your link and answer there.")
		return
	}
	nonce := form.Get(inputNonce)
	if !validNonce(nonce) || !c.signer.CheckFormToken(l, nonce, form.Get(inputToken)) {
		c.errorPage(w, r, http.StatusForbidden, "This form is not valid",
			"The form's security token is missing or does not match this link. Nothing was sent. Reload the question and try again.")
		return
	}
	version, err := strconv.ParseInt(form.Get(inputTaskVersion), 10, 64)
	if err != nil || version < 0 {
		c.errorPage(w, r, http.StatusBadRequest, "The form could not be read",
			"The form did not say which version of the question it answers. Nothing was sent. Reload the question and try again.")
		return
	}
	rep, err := c.show(r.Context(), l)
	if err != nil {
		c.apiUnavailable(w, r, err)
		return
	}
	if rep == nil {
		c.notFound(w, r)
		return
	}
	v := rep.Question
	page := c.signer.RelativeURL(l)
	if v.State != bridge.StatePending {
		// Settled meanwhile: nothing is sent, and the page shows the
		// outcome, with why this form was not taken in the runtime's
		// words (who answered it and when...). Not when this person
		// settled it (a second click of their own form): the outcome is
		// theirs.
		id := attemptPrefix + nonce
		if o, ok := c.outcomes.get(id); (ok && o.matches(l)) || (v.By != "" && v.By == l.Identity) {
			http.Redirect(w, r, page, http.StatusSeeOther)
			return
		}
		action := form.Get(inputAction)
		if action != bridge.ActionDecline {
			action = bridge.ActionAnswer
		}
		c.outcomes.put(id, &outcome{identity: l.Identity, tenant: l.Tenant, job: l.JobID, question: l.QuestionID, at: time.Now(),
			action: action, input: formInput(form), refused: &bridge.Event{Type: bridge.EventRefused, Reason: bridge.RefusedNotPending, Text: endedText(v)}})
		http.Redirect(w, r, page+"&attempt="+url.QueryEscape(id), http.StatusSeeOther)
		return
	}
	action := form.Get(inputAction)
	if action == "" {
		action = bridge.ActionAnswer
	}
	allowed := v.CanAnswer && !v.Hidden && v.Question != nil
	if action == bridge.ActionDecline {
		allowed = v.CanDecline
	}
	if !allowed {
		text := "askbridge does not let " + l.Identity + " " + actionWords(action) + " this question."
		if action != bridge.ActionDecline && v.CannotAnswer != "" {
			text = v.CannotAnswer // the runtime's words, as a refused answer gets them
		}
		c.errorPage(w, r, http.StatusForbidden, "You can't do that here", text+" Nothing was sent.")
		return
	}
	q := v.Question
	if q == nil {
		// A hidden question may only be declined; a decline needs no content.
		q = &bridge.Question{Tenant: v.Tenant, JobID: v.JobID, QuestionID: v.QuestionID, Kind: v.Kind}
	}
	comment := strings.TrimSpace(strings.ReplaceAll(form.Get(inputComment), "\r\n", "\n"))
	if action == bridge.ActionApprove || action == bridge.ActionAnswer {
		comment = ""
	}
	answer := answerFromForm(q, action, form)
	formAction := bridge.ActionAnswer
	if action == bridge.ActionDecline {
		formAction = bridge.ActionDecline
	}
	input := formInput(form)
	if action == bridge.ActionDeny && comment == "" {
		// As Slack's and Discord's deny forms do: the agent reads the
		// reason to change its plan.
		st := formState{Action: formAction, Input: input, Problems: map[string]string{inputComment: denyReasonNeeded}}
		c.render(w, r, http.StatusUnprocessableEntity, "question", c.buildQuestionPage(l, rep, st))
		return
	}
	checked, aerr := bridge.CheckAnswer(q, action, answer, comment)
	switch {
	case aerr != nil && version != v.TaskVersion:
		// The form was drawn for another version of the question (asked
		// again since): the answer is not for the question checked here.
		// The runtime refuses it as stale, in its words; it is not held
		// to this version's fields.
		checked = &bridge.CheckedAnswer{Action: action, Value: answer}
	case aerr != nil:
		st := formState{Action: formAction, Input: input, Problems: problems(aerr)}
		c.render(w, r, http.StatusUnprocessableEntity, "question", c.buildQuestionPage(l, rep, st))
		return
	}
	var value []byte
	if checked.Action == bridge.ActionAnswer {
		value = checked.Value
	}
	// The version the form was drawn for, even 0.
	attempt := engine.NewAttempt(bridge.PlatformConsole, attemptPrefix+nonce,
		engine.Question{Tenant: v.Tenant, JobID: v.JobID, QuestionID: v.QuestionID, TaskVersion: version, Exact: true},
		engine.Person{Identity: l.Identity, Roles: l.Roles}, checked.Action, value, comment, c.now(), nil)
	next := page + "&attempt=" + url.QueryEscape(attempt.AttemptID)
	if o, ok := c.outcomes.get(attempt.AttemptID); ok && o.matches(l) {
		// This form was sent already (a double click): same attempt, and
		// its decision, if any, is known. Do not wait for it again.
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	refused, late, err := c.propose(r.Context(), attempt, v.TaskVersion)
	if err != nil {
		c.log.ErrorContext(r.Context(), "console: propose answer", "tenant", v.Tenant, "job", v.JobID, "question", v.QuestionID, "err", err)
		c.errorPage(w, r, http.StatusServiceUnavailable, "Your answer could not be sent",
			"askbridge could not pass your answer on. Nothing was recorded. Go back and try again in a moment.")
		return
	}
	c.log.InfoContext(r.Context(), "console: answer proposed", "tenant", v.Tenant, "job", v.JobID, "question", v.QuestionID,
		"attempt", attempt.AttemptID, "action", attempt.Action, "by", l.Identity, "refused", refused != nil)
	o := &outcome{identity: l.Identity, tenant: l.Tenant, job: l.JobID, question: l.QuestionID, at: time.Now(), action: formAction}
	if refused != nil {
		o.refused, o.input = refused, input
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
const denyReasonNeeded = "say why you deny it: the agent reads the reason to change its plan"

func actionWords(action string) string {
	switch action {
	case bridge.ActionDecline:
		return "decline"
	case bridge.ActionApprove:
		return "approve"
	case bridge.ActionDeny:
		return "deny"
	}
	return "answer"
}

// propose publishes the attempt and waits up to DecisionWait for the
// runtime's word on it: its refusal (returned), or the question settling
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
	if ev, _ := decision(nil, timer.C, l.events, &l.attempt, l.pending); ev != nil {
		refused(ev)
	}
}

// decision reads the job's events until the runtime refuses a, records
// it as one approval of several, or a's question settles at pending
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
