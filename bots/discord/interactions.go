package discord

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// Keys of an attempt's reply_to: what the bot needs to answer the clicker
// with a follow-up when the runtime refuses (the token lasts 15 minutes).
const (
	replyPlatform = "platform"
	replyAppID    = "app_id"
	replyToken    = "token"
	replyChannel  = "channel_id"
	// A /ask cancel's reply_to also says it is a cancel, whom to tell
	// (the refused event has no attempt id: it is matched on its To and
	// these), which interaction it was, and when it was made, so a
	// refusal arriving after the token lapsed goes by DM instead.
	replyKind        = "kind"
	replyUser        = "user_id"
	replyInteraction = "interaction_id"
	replySentAt      = "sent_at"
	replyKindCancel  = "cancel"
)

// handleInteraction is POST /discord/interactions: verify, deduplicate,
// dispatch, and answer inline within Discord's 3 seconds.
func (b *Bot) handleInteraction(w http.ResponseWriter, r *http.Request) {
	// Read the body ourselves, under a clear limit, before verifying:
	// discordgo's verifier would read a cut body and call a too-large one a
	// bad signature.
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	if !discordgo.VerifyInteraction(r, b.pub) {
		http.Error(w, "invalid request signature", http.StatusUnauthorized)
		return
	}
	ts, err := strconv.ParseInt(r.Header.Get("X-Signature-Timestamp"), 10, 64)
	if err != nil {
		http.Error(w, "invalid request timestamp", http.StatusUnauthorized)
		return
	}
	if skew := b.now().Sub(time.Unix(ts, 0)); skew > maxClockSkew || skew < -maxClockSkew {
		http.Error(w, "request timestamp too far from now", http.StatusUnauthorized)
		return
	}
	var in discordgo.Interaction
	if err := json.Unmarshal(raw, &in); err != nil {
		http.Error(w, "body is not an interaction", http.StatusBadRequest)
		return
	}
	if in.Type == discordgo.InteractionPing {
		writeJSON(w, &discordgo.InteractionResponse{Type: discordgo.InteractionResponsePong})
		return
	}
	if !bridge.ValidSnowflake(in.ID) || in.Token == "" {
		http.Error(w, "interaction without an id or token", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), b.budget)
	defer cancel()
	// An interaction is marked handled once it was: whatever it publishes
	// carries a message id made of its id, so Discord's retry of one
	// whose replica died midway is handled again, and JetStream keeps one
	// copy; marked first, the retry would be told "already handled" of
	// an answer never recorded. One that failed to record is not marked.
	key := seenKey("i", in.ID)
	handled, err := b.wasSeen(ctx, key)
	if err != nil {
		// Handled as new: handling it again is safe, and a click must
		// not fail for the replay guard alone.
		b.log.Warn("discord: cannot read the interaction's record; handled as new", "interaction", in.ID, "err", err)
	}
	if handled {
		b.log.Info("discord: replayed interaction ignored", "interaction", in.ID)
		writeJSON(w, ephemeral("This interaction was already handled."))
		return
	}
	resp := b.dispatch(ctx, &in)
	if notHandled(resp) {
		b.log.Info("discord: interaction not recorded; a retry of it is handled anew", "interaction", in.ID)
	} else if _, err := b.markSeen(ctx, key, interactionTTL); err != nil {
		b.log.Warn("discord: cannot record interaction as handled", "interaction", in.ID, "err", err)
	}
	writeJSON(w, resp)
}

// The answers to an interaction that failed before anything was recorded:
// it is not marked handled, so that a retry of it is handled again.
// notHandled knows them by identity; nothing changes them.
var (
	attemptNotRecorded = ephemeral("askbridge could not record your answer right now; please try again.")
	cancelNotRecorded  = ephemeral("askbridge could not record the cancel right now; please try again.")
	lookupFailed       = ephemeral("askbridge could not look this question up right now; please try again.")
)

// notHandled reports whether resp says nothing was recorded.
func notHandled(resp *discordgo.InteractionResponse) bool {
	return resp == attemptNotRecorded || resp == cancelNotRecorded || resp == lookupFailed
}

func writeJSON(w http.ResponseWriter, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "cannot encode the response", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// ephemeral is a message only the person who interacted sees.
func ephemeral(text string, components ...discordgo.MessageComponent) *discordgo.InteractionResponse {
	return &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: bridge.Truncate(text, maxContent), Flags: discordgo.MessageFlagsEphemeral,
			Components: components, AllowedMentions: noMentions}}
}

// deferredUpdate acknowledges a click without changing the message; the
// card is edited when the runtime decides.
var deferredUpdate = &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}

// clicker is who interacted.
type clicker struct {
	Identity string
	Name     string
	Roles    []string
}

func (b *Bot) clickerOf(in *discordgo.Interaction) (clicker, bool) {
	var u *discordgo.User
	var roleIDs []string
	if in.Member != nil && in.Member.User != nil {
		u, roleIDs = in.Member.User, in.Member.Roles
	} else if in.User != nil {
		u = in.User
	}
	if u == nil || !bridge.ValidSnowflake(u.ID) {
		return clicker{}, false
	}
	c := clicker{Identity: bridge.PlatformDiscord + ":" + u.ID, Name: u.Username}
	for _, r := range roleIDs {
		if b.admin[r] && !slices.Contains(c.Roles, "admin") {
			c.Roles = append(c.Roles, "admin")
		}
		if b.oper[r] && !slices.Contains(c.Roles, "operator") {
			c.Roles = append(c.Roles, "operator")
		}
	}
	slices.Sort(c.Roles)
	return c, true
}

func (b *Bot) dispatch(ctx context.Context, in *discordgo.Interaction) *discordgo.InteractionResponse {
	who, ok := b.clickerOf(in)
	if !ok {
		return ephemeral("askbridge cannot tell who you are in this interaction.")
	}
	switch in.Type {
	case discordgo.InteractionMessageComponent:
		data, ok := in.Data.(discordgo.MessageComponentInteractionData)
		if !ok {
			return ephemeral("This interaction has no component data.")
		}
		return b.onComponent(ctx, in, who, data)
	case discordgo.InteractionModalSubmit:
		data, ok := in.Data.(discordgo.ModalSubmitInteractionData)
		if !ok {
			return ephemeral("This form submission has no data.")
		}
		return b.onModal(ctx, in, who, data)
	case discordgo.InteractionApplicationCommand:
		data, ok := in.Data.(discordgo.ApplicationCommandInteractionData)
		if !ok {
			return ephemeral("This command has no data.")
		}
		return b.onCommand(ctx, in, who, data)
	}
	return ephemeral("askbridge does not handle this kind of interaction.")
}

// cardFor parses a custom_id and loads the card it names.
func (b *Bot) cardFor(ctx context.Context, customID string) (action, *card, *discordgo.InteractionResponse) {
	a, err := parseCustomID(customID)
	if err != nil {
		return a, nil, ephemeral("This button is not one askbridge understands.")
	}
	found, err := b.resolve(ctx, &a)
	if err != nil {
		b.log.Error("discord: cannot read the card index", "err", err)
		return a, nil, lookupFailed
	}
	if !found {
		return a, nil, ephemeral("askbridge no longer knows this question. Use `/ask list` to see what waits.")
	}
	c, err := b.cardOf(ctx, bridge.Ref{Tenant: a.Tenant, JobID: a.JobID, QuestionID: a.QuestionID, Version: a.TaskVersion})
	if err != nil {
		b.log.Error("discord: cannot read the question", "err", err)
		return a, nil, lookupFailed
	}
	if c == nil || c.Question == nil {
		return a, nil, ephemeral("askbridge no longer knows this question. Use `/ask list` to see what waits.")
	}
	return a, c, nil
}

// cardOf is the card of r: as this adapter remembers it, else as the
// runtime records it (nil when it does not know the question).
func (b *Bot) cardOf(ctx context.Context, r bridge.Ref) (*card, error) {
	if c, ok := b.cards.Get(r); ok && c.Question != nil {
		return b.viewOf(c), nil
	}
	ev := &bridge.Event{Tenant: r.Tenant, JobID: r.JobID, QuestionID: r.QuestionID, TaskVersion: r.Version}
	v, err := bridge.ShowQuestion(ctx, b.o.NATS.Conn, ev)
	if errors.Is(err, bridge.ErrNotShown) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c := &engine.Card{Ref: r, Question: v.Question, AskedAt: v.AskedAt, Deadline: v.Deadline, Message: bridge.MessageOn(&bridge.Event{Messages: v.Messages}, bridge.PlatformDiscord)}
	view := b.viewOf(c)
	if ev := v.EndedEvent(); ev != nil {
		view.Outcome = outcomeOf(ev)
	}
	return view, nil
}

func (b *Bot) onComponent(ctx context.Context, in *discordgo.Interaction, who clicker, data discordgo.MessageComponentInteractionData) *discordgo.InteractionResponse {
	a, c, refusal := b.cardFor(ctx, data.CustomID)
	if refusal != nil {
		return refusal
	}
	q := c.Question
	if c.Outcome != nil && (a.Act == actAnswer || a.Act == actDecline || a.Act == actDeny || a.Act == actDelegate || a.Act == actPick ||
		a.Act == actSnooze || a.Act == actSnoozeFor) {
		// The question ended (the card is not redrawn yet on this
		// client): no form to fill in for nothing.
		return ephemeral(c.endedText())
	}
	switch a.Act {
	case actChoice, actSelect:
		idx := a.Index
		if a.Act == actSelect {
			if len(data.Values) != 1 {
				return ephemeral("Choose exactly one answer.")
			}
			i, err := canonicalInt(data.Values[0], maxChoices-1)
			if err != nil {
				return ephemeral("That choice is not one of this question's.")
			}
			idx = int(i)
		}
		if idx >= len(q.Choices) || len(q.Choices) > maxChoices {
			return ephemeral("That choice is not one of this question's.")
		}
		answer, _ := json.Marshal(q.Choices[idx])
		return b.propose(ctx, in, who, c, bridge.ActionAnswer, answer, "")
	case actApprove:
		return b.propose(ctx, in, who, c, bridge.ActionApprove, nil, "")
	case actDeny:
		// Deny asks why first (the deny modal); a Deny aimed at a question
		// that is no approval is refused at once in the validator's words.
		if _, aerr := bridge.CheckAnswer(q, bridge.ActionDeny, nil, ""); aerr != nil {
			return ephemeral(aerr.Text)
		}
		return denyModal(c)
	case actAnswer:
		if q.Restricted() {
			// The form quotes the question: only for someone who may read it.
			if why := b.mayNotAnswer(ctx, who, c); why != "" {
				return ephemeral(why)
			}
		}
		if len(q.Choices) > 0 || len(q.Fields) > 0 || q.IsApproval() {
			return ephemeral("This question is not answered with free text.")
		}
		return answerModal(c)
	case actDecline:
		return declineModal(c)
	case actConsoleJob:
		u := ""
		if b.consoleEnabled() && who.Identity != "" {
			u = b.o.Console.JobURL(who.Identity, c.Tenant, c.JobID, console.DefaultLinkTTL)
		}
		if u == "" {
			return ephemeral("The askbridge console is not set up; see the job's questions with `/ask queue " + c.JobID + "`.")
		}
		if btn := consoleLinkButton(u); btn != nil {
			return ephemeral("Here is your personal link to job `"+c.JobID+"` (do not share it):",
				discordgo.ActionsRow{Components: []discordgo.MessageComponent{btn}})
		}
		return ephemeral("Here is your personal link to job `" + c.JobID + "` (do not share it): <" + u + ">")
	case actDelegate, actPick, actSnooze, actSnoozeFor:
		return b.onRequest(ctx, in, who, c, a, data)
	case actConsole:
		u := b.questionLink(who.Identity, who.Roles, c.Tenant, c.JobID, c.QuestionID)
		if u == "" {
			return ephemeral("The askbridge console is not set up; answer with `/ask answer`.")
		}
		if btn := consoleLinkButton(u); btn != nil {
			return ephemeral("Here is your personal link to this question (do not share it):",
				discordgo.ActionsRow{Components: []discordgo.MessageComponent{btn}})
		}
		return ephemeral("Here is your personal link to this question (do not share it): <" + u + ">")
	}
	return ephemeral("This button is not one askbridge understands.")
}

func (b *Bot) onModal(ctx context.Context, in *discordgo.Interaction, who clicker, data discordgo.ModalSubmitInteractionData) *discordgo.InteractionResponse {
	a, c, refusal := b.cardFor(ctx, data.CustomID)
	if refusal != nil {
		return refusal
	}
	if c.Outcome != nil {
		// A form left open while the question ended: say what ended it.
		return ephemeral(c.endedText())
	}
	values := textInputs(data.Components)
	switch a.Act {
	case actModalAnswer:
		text, ok := values["answer"]
		if !ok {
			return ephemeral("The form came back without an answer.")
		}
		answer, _ := json.Marshal(text)
		if _, aerr := bridge.CheckAnswer(c.Question, bridge.ActionAnswer, answer, ""); aerr != nil {
			return ephemeral(aerr.Text)
		}
		return b.propose(ctx, in, who, c, bridge.ActionAnswer, answer, "")
	case actModalReason:
		reason := strings.TrimSpace(values["reason"])
		if _, aerr := bridge.CheckAnswer(c.Question, bridge.ActionDecline, nil, reason); aerr != nil {
			return ephemeral(aerr.Text)
		}
		return b.propose(ctx, in, who, c, bridge.ActionDecline, nil, reason)
	case actModalDeny:
		reason := strings.TrimSpace(values["reason"])
		if reason == "" {
			// As Slack's deny modal: the agent needs the reason to adjust.
			return ephemeral(denyReasonRequired)
		}
		if _, aerr := bridge.CheckAnswer(c.Question, bridge.ActionDeny, nil, reason); aerr != nil {
			return ephemeral(aerr.Text)
		}
		return b.propose(ctx, in, who, c, bridge.ActionDeny, nil, reason)
	}
	return ephemeral("This form is not one askbridge understands.")
}

// mayNotAnswer asks the runtime whether who may answer c's question, and
// says why not ("" when they may), in the words a refused answer gets. A
// runtime that cannot be asked within half the interaction's budget (a
// second) opens no form: the modal must still reach Discord in time.
func (b *Bot) mayNotAnswer(ctx context.Context, who clicker, c *card) string {
	ctx, cancel := context.WithTimeout(ctx, b.budget/2)
	defer cancel()
	var reply bridge.ShowReply
	err := b.request(ctx, bridge.APIShow, bridge.ShowRequest{As: who.Identity, Roles: who.Roles, Tenant: c.Tenant,
		JobID: c.JobID, QuestionID: c.QuestionID, TaskVersion: c.TaskVersion}, &reply)
	switch v := reply.Question; {
	case err != nil || v == nil && reply.Error != bridge.NoQuestionShown(c.QuestionID):
		b.log.Warn("discord: the runtime could not say who may answer", "job", c.JobID, "question", c.QuestionID, "err", err, "reply", reply.Error)
		return "askbridge could not open the form just now. Please try again in a moment."
	case v == nil:
		// The runtime tells someone with no role nothing, not even that
		// the question exists; but they clicked its card.
		return "You can't answer this question: " + who.Identity + " is not one of its answerers and has no operator, admin or owner role."
	case v.State == bridge.StatePending && !v.CanAnswer:
		return cmp.Or(v.CannotAnswer, "You can't answer this question.")
	}
	return ""
}

// endedText is what a person using the card of a question that ended is
// told: who answered it and when, or that it was cancelled..., in the
// words the runtime refuses a late answer with.
func (c *card) endedText() string {
	o := c.Outcome
	return bridge.EndedText(o.Type, o.By, o.ByName, o.At, c.TaskVersion)
}

// denyReasonRequired refuses a deny submitted without a reason, in the
// words Slack's deny modal uses.
const denyReasonRequired = "Say why, so the agent can adjust its plan."

// textInputs collects a modal's text inputs by custom_id.
func textInputs(rows []discordgo.MessageComponent) map[string]string {
	out := map[string]string{}
	for _, row := range rows {
		var comps []discordgo.MessageComponent
		switch r := row.(type) {
		case *discordgo.ActionsRow:
			comps = r.Components
		case discordgo.ActionsRow:
			comps = r.Components
		}
		for _, c := range comps {
			switch t := c.(type) {
			case *discordgo.TextInput:
				out[t.CustomID] = t.Value
			case discordgo.TextInput:
				out[t.CustomID] = t.Value
			}
		}
	}
	return out
}

// attemptID is the id of the attempt an interaction makes.
func attemptID(in *discordgo.Interaction) string { return bridge.PlatformDiscord + "-" + in.ID }

// propose publishes an answer attempt for the card's question and
// acknowledges the click; the runtime decides and the card follows.
func (b *Bot) propose(ctx context.Context, in *discordgo.Interaction, who clicker, c *card, act string, answer json.RawMessage, comment string,
	with ...func(*bridge.AnswerAttempt)) *discordgo.InteractionResponse {
	// A card's or form's version is the one the person saw; /ask answer
	// saw none and means the latest.
	q := engine.Question{Tenant: c.Tenant, JobID: c.JobID, QuestionID: c.QuestionID, TaskVersion: c.TaskVersion,
		Exact: in.Type != discordgo.InteractionApplicationCommand}
	by := engine.Person{Identity: who.Identity, Name: who.Name, Roles: who.Roles}
	at := engine.NewAttempt(bridge.PlatformDiscord, attemptID(in), q, by, act, answer, comment, b.now(), b.replyTo(in))
	for _, f := range with {
		f(&at)
	}
	if hook := b.proposing.Load(); hook != nil {
		(*hook)()
	}
	if err := engine.PublishAttempt(ctx, b.log, b.decided, b.o.NATS.JS, &at); err != nil {
		return attemptNotRecorded
	}
	if in.Type == discordgo.InteractionApplicationCommand {
		return ephemeral(fmt.Sprintf("Sent to askbridge (question %s). The question's card updates when askbridge accepts it; if it refuses, you will be told here.", c.QuestionID))
	}
	return deferredUpdate
}

func (b *Bot) replyTo(in *discordgo.Interaction) map[string]string {
	app := in.AppID
	if app == "" {
		app = b.o.AppID
	}
	return map[string]string{replyPlatform: bridge.PlatformDiscord, replyAppID: app, replyToken: in.Token, replyChannel: in.ChannelID}
}
