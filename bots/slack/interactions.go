package slack

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// maxBody bounds what Slack may send us; real payloads are far smaller.
// presizeBody bounds the buffer allocated for a body before it is read.
const (
	maxBody     = 1 << 20
	presizeBody = 64 << 10
)

// verified reads the body once (bounded), checks Slack's v0 signature and
// timestamp window, and restores the body and its form for slack-go's
// form parsers.
// It answers the request itself and returns false when it is refused.
func (b *Bot) verified(w http.ResponseWriter, r *http.Request) bool {
	if b.o.SigningSecret == "" {
		// Socket Mode only: an empty secret would make any signature "valid".
		http.Error(w, "Slack HTTP endpoints are not configured (no signing secret)", http.StatusNotFound)
		return false
	}
	// Sized by the declared length, up to what a real payload needs: the
	// length is not checked yet, and must not make us allocate a megabyte.
	// The bytes.MinRead spare keeps ReadFrom from doubling the buffer to
	// look for the end of a body that filled it.
	buf := bytes.NewBuffer(make([]byte, 0, max(0, min(r.ContentLength, presizeBody))+bytes.MinRead))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxBody))
	raw := buf.Bytes()
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return false
		}
		http.Error(w, "could not read the request body", http.StatusBadRequest)
		return false
	}
	sv, err := slack.NewSecretsVerifier(r.Header, b.o.SigningSecret)
	if err == nil {
		if _, err = sv.Write(raw); err == nil {
			err = sv.Ensure()
		}
	}
	if err != nil {
		b.log.WarnContext(r.Context(), "slack: refused an unsigned or stale request", "path", r.URL.Path, "remote", r.RemoteAddr)
		http.Error(w, "invalid Slack signature", http.StatusUnauthorized)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
		// The form r.ParseForm would read from the body, parsed from the bytes
		// at hand: with PostForm set, ParseForm reads the body no more. On an
		// error it stays unset, and ParseForm reports the error as before.
		if form, err := url.ParseQuery(string(raw)); err == nil {
			r.PostForm = form
		}
	}
	return true
}

func (b *Bot) serveInteractions(w http.ResponseWriter, r *http.Request) {
	if !b.verified(w, r) {
		return
	}
	cb, err := parseInteraction(r)
	if err != nil {
		http.Error(w, "not a Slack interaction payload", http.StatusBadRequest)
		return
	}
	// Slack wants an answer within 3 s; everything below is bounded.
	ctx, cancel := context.WithTimeout(r.Context(), b.budget)
	defer cancel()
	resp, err := b.interact(ctx, cb)
	if errors.Is(err, errNotRecorded) {
		// Not acknowledged: the answer is not in JetStream. Slack shows the
		// person the failure, and their next click or submit counts.
		http.Error(w, "askbridge could not record your answer; try again", http.StatusServiceUnavailable)
		return
	}
	if resp == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// callbackFields is slack.InteractionCallback without its methods, so a
// struct embedding it decodes field by field.
type callbackFields slack.InteractionCallback

// parseInteraction is slack.InteractionCallbackParse without decoding the
// clicked message itself (its blocks, as Slack echoes them, and the legacy
// original_message): askbridge reads only the message's ts and thread_ts,
// and the blocks were most of the work of parsing a click.
// The result points into the decoded payload (an InteractionCallback is
// several kilobytes: it is not copied out).
func parseInteraction(r *http.Request) (*slack.InteractionCallback, error) {
	if err := r.ParseForm(); err != nil {
		return nil, err
	}
	payload := r.PostForm.Get("payload")
	if payload == "" {
		return nil, errors.New("payload is empty")
	}
	var p struct {
		callbackFields
		// Shallower fields win over the embedded ones of the same name.
		Type    slack.InteractionType `json:"type"`
		Message struct {
			Timestamp       string `json:"ts"`
			ThreadTimestamp string `json:"thread_ts"`
		} `json:"message"`
		OriginalMessage struct{} `json:"original_message"`
	}
	if err := json.Unmarshal([]byte(payload), &p); err != nil {
		return nil, err
	}
	cb := (*slack.InteractionCallback)(&p.callbackFields)
	cb.Type = p.Type
	cb.Message.Timestamp, cb.Message.ThreadTimestamp = p.Message.Timestamp, p.Message.ThreadTimestamp
	// As slack-go's InteractionCallback.UnmarshalJSON does.
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		if len(cb.RawState) > 0 {
			if err := json.Unmarshal(cb.RawState, &cb.BlockActionState); err != nil {
				return nil, err
			}
		}
	case slack.InteractionTypeDialogSubmission:
		cb.State = string(cb.RawState)
	}
	return cb, nil
}

// errNotRecorded is an interaction whose answer attempt could not be
// published durably: it must not be acknowledged to Slack.
var errNotRecorded = errors.New("slack: the answer attempt could not be recorded")

// interact handles one interaction for both HTTP and Socket Mode. The
// result, when not nil, is the response body (inline modal errors); the
// error is errNotRecorded when an attempt is not in JetStream.
func (b *Bot) interact(ctx context.Context, cb *slack.InteractionCallback) (any, error) {
	if !bridge.ValidSlackID(cb.User.ID) {
		return nil, nil
	}
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		var failed error
		for _, a := range cb.ActionCallback.BlockActions {
			failed = cmp.Or(b.click(ctx, cb, a), failed)
		}
		return nil, failed
	case slack.InteractionTypeViewSubmission:
		r, err := b.submit(ctx, cb)
		if err != nil || r == nil {
			return nil, err // a nil *ViewSubmissionResponse is no body
		}
		return r, nil
	}
	return nil, nil
}

// replyTo is what the runtime echoes on a refusal so we can tell the clicker.
func replyTo(cb *slack.InteractionCallback, channel, ts string) map[string]string {
	m := map[string]string{replyUser: cb.User.ID}
	if channel != "" {
		m[replyChannel] = channel
	}
	if ts != "" {
		m[replyThread] = ts
	}
	if cb.ResponseURL != "" {
		m[replyResponseURL] = cb.ResponseURL
	}
	return m
}

// click handles a card button or select; errNotRecorded when its answer
// attempt could not be published.
func (b *Bot) click(ctx context.Context, cb *slack.InteractionCallback, a *slack.BlockAction) error {
	c, err := blockkit.ParseClick(a.BlockID, a.ActionID, a.Value, a.SelectedOption.Value)
	if err != nil {
		b.log.DebugContext(ctx, "slack: ignoring a foreign action", "err", err)
		return nil
	}
	channel := cb.Container.ChannelID
	if channel == "" {
		channel = cb.Channel.ID
	}
	msgTS := cb.Container.MessageTs
	to := replyTo(cb, channel, threadOf(cb, msgTS))
	switch c.Action {
	case blockkit.ActionAnswer, blockkit.ActionDecline, blockkit.ActionDeny, blockkit.ActionDelegate:
		b.openModal(ctx, cb, c, channel, msgTS, to)
		return nil
	case blockkit.ActionConsole, blockkit.ActionConsoleJob:
		b.offerConsole(cb, c, to)
		return nil
	}
	action, answer := bridge.ActionApprove, []byte(nil)
	if c.Action == blockkit.ActionSnooze {
		action = bridge.ActionSnooze
	}
	if c.Action == blockkit.Choose {
		// A button carries its choice's text as the card drew it (at most
		// bridge.MaxChoiceText, within Slack's limit for a value); a select
		// carries its index alone, and the choice is looked up.
		choice := c.Choice
		if choice == "" {
			if choices := b.choices(ctx, c.Ref, cb.User.ID); c.Index < len(choices) {
				choice = choices[c.Index]
			}
		}
		if choice == "" {
			b.say(to, "This question is no longer available here; see /ask list.")
			return nil
		}
		action = bridge.ActionAnswer
		answer, _ = json.Marshal(choice)
	}
	at := b.attempt(cb, c.Ref, "slack-"+safeID(cmp.Or(cb.TriggerID, a.ActionTs+"-"+cb.User.ID)), action, answer, "", to)
	at.Snooze = c.Snooze
	// Double clicks arrive as separate interactions, on any replica: one
	// attempt, published by every one of them before it is acknowledged.
	click := clickOf(cb.User.ID, a.BlockID, a.ActionID, a.Value, a.SelectedOption.Value)
	if held := b.foldClick(ctx, click, &at); held != nil {
		if !b.publishAttempt(ctx, *held, to) {
			return errNotRecorded // the claim stays: the next click publishes it again
		}
		return nil
	}
	if hook := b.clickClaimed.Load(); hook != nil {
		(*hook)()
	}
	if !b.publishAttempt(ctx, at, to) {
		b.forgetClick(ctx, click) // told to try again: the retry must go through
		return errNotRecorded
	}
	return nil
}

// offerConsole answers an "Open in console" click at once with an
// ephemeral message to the clicker alone, carrying a console link signed
// for them ("slack:<their id>"): a question link from a card, a job link
// from a thread parent. The link grants nothing beyond what the runtime
// lets that person see and do; the card's Ref only names the target.
func (b *Bot) offerConsole(cb *slack.InteractionCallback, c blockkit.Click, to map[string]string) {
	if !b.consoleOn() {
		b.say(to, "The askbridge console is not set up here (ASK_PUBLIC_URL and ASK_CONSOLE_SECRET).")
		return
	}
	who := "slack:" + cb.User.ID
	var text string
	if c.Action == blockkit.ActionConsoleJob {
		text = "<" + b.jobURL(who, c.Ref.Tenant, c.Ref.JobID) + "|Open job `" + c.Ref.JobID + "` in the askbridge console>"
	} else {
		text = "<" + b.questionURL(who, c.Ref) + "|Open this question in the askbridge console>"
	}
	days := int(console.DefaultLinkTTL / (24 * time.Hour))
	b.say(to, text+"\nThis link is for you alone: it acts as you for "+strconv.Itoa(days)+" days, so do not share it.")
}

// attempt is the answer attempt a card's click or form makes: on the
// card's task version, as the clicker.
func (b *Bot) attempt(cb *slack.InteractionCallback, r blockkit.Ref, id, action string, answer []byte, comment string, to map[string]string) bridge.AnswerAttempt {
	q := engine.Question{Tenant: r.Tenant, JobID: r.JobID, QuestionID: r.QuestionID, TaskVersion: r.Version, Exact: true}
	by := engine.Person{Identity: "slack:" + cb.User.ID, Name: cmp.Or(cb.User.Name, cb.User.Profile.DisplayName)}
	return engine.NewAttempt(bridge.PlatformSlack, id, q, by, action, answer, comment, b.now(), to)
}

// publishAttempt proposes the attempt to the runtime. Its message id is
// the attempt id, so Slack's retries of one interaction are one attempt.
// A clicker (to) is told when it could not be recorded.
func (b *Bot) publishAttempt(ctx context.Context, at bridge.AnswerAttempt, to map[string]string) bool {
	if err := engine.PublishAttempt(ctx, b.log, b.decided, b.js, &at); err != nil {
		if to != nil {
			b.say(to, "askbridge could not record your answer just now. Please try again in a moment.")
		}
		return false
	}
	return true
}

// say tells the clicker something in the background: the interaction's
// HTTP answer must not wait for it.
func (b *Bot) say(to map[string]string, text string) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := b.tell(ctx, to, text); err != nil {
			b.log.WarnContext(ctx, "slack: could not tell a person", "err", err)
		}
	}()
}

// formTryAgain tells a person who clicked a form button that the runtime
// could not be asked about the question in time: no form opens.
const formTryAgain = "askbridge could not open the form just now. Please try again in a moment."

// mayNotAnswer asks the runtime whether user may answer the question, and
// says why not ("" when they may). A runtime that cannot be asked in time
// opens no form: it would show the question's details to anyone.
func (b *Bot) mayNotAnswer(ctx context.Context, r blockkit.Ref, user string) string {
	ctx, cancel := context.WithTimeout(ctx, b.formLookup())
	defer cancel()
	var reply bridge.ShowReply
	if err := b.request(ctx, bridge.APIShow, bridge.ShowRequest{As: "slack:" + user, Tenant: r.Tenant, JobID: r.JobID, QuestionID: r.QuestionID}, &reply); err != nil {
		return formTryAgain
	}
	switch v := reply.Question; {
	case v == nil && reply.Error != bridge.NoQuestionShown(r.QuestionID):
		// The runtime could not look (its store, say): not a refusal.
		b.log.WarnContext(ctx, "slack: the runtime could not say who may answer", "job", r.JobID, "question", r.QuestionID, "err", reply.Error)
		return formTryAgain
	case v == nil && b.hasCard(r):
		// The runtime tells someone with no role nothing about a
		// question, not even that it exists; but this person clicked its
		// card. Say what a click on the card's choices gets them: the
		// runtime's not_allowed words, not "there is no question".
		return "You can't answer this question: slack:" + user + " is not one of its answerers and has no operator, admin or owner role."
	case v == nil:
		return cmp.Or(reply.Error, "This question is no longer available here; see /ask list.")
	case v.State != bridge.StatePending:
		return "" // the form path says it no longer waits
	case !v.CanAnswer:
		return cmp.Or(v.CannotAnswer, "You can't answer this question.")
	}
	return ""
}

// hasCard says whether this adapter knows a card of r: one it posted or
// settled lately.
func (b *Bot) hasCard(r blockkit.Ref) bool {
	c, ok := b.cards.Get(r)
	return ok && c.Message != nil
}

// openModal opens the answer, decline or deny modal at once: the trigger
// id is only good for 3 seconds.
func (b *Bot) openModal(ctx context.Context, cb *slack.InteractionCallback, c blockkit.Click, channel, msgTS string, to map[string]string) {
	if c.Action != blockkit.ActionDecline {
		// The answer and deny forms show more than the card (each field's
		// description and options): only to someone who may answer.
		if why := b.mayNotAnswer(ctx, c.Ref, cb.User.ID); why != "" {
			b.say(to, why)
			return
		}
	}
	rec, err := b.question(ctx, c.Ref, cb.User.ID)
	if err != nil {
		b.say(to, formTryAgain) // the runtime did not answer: nothing is known
		return
	}
	if rec == nil {
		b.say(to, "This question is no longer available here; see /ask list.")
		return
	}
	if rec.ended {
		b.say(to, rec.lateText())
		return
	}
	meta := blockkit.ModalMeta{Ref: c.Ref, Channel: channel, MessageTS: msgTS}
	if !bridge.ValidSlackID(channel) || (msgTS != "" && !validTS(msgTS)) {
		meta.Channel, meta.MessageTS = "", ""
	}
	q := *rec.card.Question // the memo's is shared
	q.TaskVersion = c.Ref.Version
	shown := *rec.card
	shown.Question = &q
	view := b.cardView(&shown)
	view.ConsoleURL = b.questionURL("slack:"+cb.User.ID, c.Ref)
	var modal slack.ModalViewRequest
	switch c.Action {
	case blockkit.ActionAnswer:
		modal = blockkit.AnswerModal(view, meta)
	case blockkit.ActionDecline:
		modal = blockkit.DeclineModal(view, meta)
	case blockkit.ActionDelegate:
		modal = blockkit.DelegateModal(view, meta)
	default:
		modal = blockkit.DenyModal(view, meta)
	}
	if _, err := b.api.OpenViewContext(ctx, cb.TriggerID, modal); err != nil {
		b.log.WarnContext(ctx, "slack: views.open failed", "slack_error", classify("views.open", err).Code)
		b.say(to, "Slack did not open the form in time. Please click again.")
	}
}

// submit handles a modal submission: checked with the shared validator,
// errors inline on their input blocks, otherwise proposed to the runtime.
// The error is errNotRecorded when the attempt could not be published.
func (b *Bot) submit(ctx context.Context, cb *slack.InteractionCallback) (*slack.ViewSubmissionResponse, error) {
	cbID := cb.View.CallbackID
	if cbID == blockkit.CallbackDelegate {
		return b.submitDelegate(ctx, cb)
	}
	if cbID != blockkit.CallbackAnswer && cbID != blockkit.CallbackDecline && cbID != blockkit.CallbackDeny {
		return nil, nil
	}
	meta, err := blockkit.ParseModalMeta(cb.View.PrivateMetadata)
	if err != nil {
		b.log.WarnContext(ctx, "slack: modal with foreign metadata", "err", err)
		return nil, nil
	}
	first := firstInput(cb.View.Blocks)
	attemptID := "slack-view-" + safeID(cb.View.ID+"-"+cb.View.Hash)
	rec, err := b.question(ctx, meta.Ref, cb.User.ID)
	if err != nil || rec == nil {
		return inlineError(first, "This question is no longer available."), nil
	}
	if rec.ended {
		if rec.attempt == attemptID {
			// This very submission ended it (delivered again): it was
			// taken, and the form closes as it did the first time.
			return nil, nil
		}
		return inlineError(first, rec.lateText()), nil
	}
	q := rec.card.Question
	var action string
	var answer json.RawMessage
	var comment string
	switch cbID {
	case blockkit.CallbackAnswer:
		action, answer = bridge.ActionAnswer, blockkit.AnswerFromState(q, cb.View.State)
	case blockkit.CallbackDecline:
		action, comment = bridge.ActionDecline, blockkit.ReasonFromState(cb.View.State)
	case blockkit.CallbackDeny:
		action, comment = bridge.ActionDeny, blockkit.ReasonFromState(cb.View.State)
		if comment == "" {
			// The deny modal asks for a reason (the agent needs it to adjust).
			return inlineError(blockkit.BlockReason, "Say why, so the agent can adjust its plan."), nil
		}
	}
	checked, aerr := bridge.CheckAnswer(q, action, answer, comment)
	if aerr != nil {
		return slack.NewErrorsViewSubmissionResponse(blockkit.ModalErrors(q, cbID, aerr)), nil
	}
	to := map[string]string{replyUser: cb.User.ID}
	if meta.Channel != "" {
		to[replyChannel] = meta.Channel
	}
	if meta.MessageTS != "" {
		if t := rec.thread(); t != "" {
			to[replyThread] = t
		} else {
			to[replyThread] = meta.MessageTS
		}
	}
	at := b.attempt(cb, meta.Ref, attemptID, checked.Action, checked.Value, comment, to)
	if !b.publishAttempt(ctx, at, nil) {
		// The form stays open, and Slack says the submit failed.
		return nil, errNotRecorded
	}
	return nil, nil
}

func firstInput(blocks slack.Blocks) string {
	for _, bl := range blocks.BlockSet {
		if in, ok := bl.(*slack.InputBlock); ok {
			return in.BlockID
		}
	}
	return blockkit.BlockReason
}

func inlineError(block, msg string) *slack.ViewSubmissionResponse {
	return slack.NewErrorsViewSubmissionResponse(map[string]string{block: msg})
}

// request does a request/reply call on the runtime's API.
func (b *Bot) request(ctx context.Context, subject string, req, reply any) error {
	return bridge.Request(ctx, b.o.NATS.Conn, subject, req, reply)
}
