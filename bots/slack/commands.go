package slack

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	neutral "github.com/askbridge/askbridge/card"
)

// commandReply is the ephemeral answer to /ask.
type commandReply struct {
	ResponseType string `json:"response_type"`
	Text         string `json:"text"`
}

func ephemeral(format string, args ...any) *commandReply {
	return &commandReply{ResponseType: slack.ResponseTypeEphemeral, Text: fmt.Sprintf(format, args...)}
}

func (b *Bot) serveCommands(w http.ResponseWriter, r *http.Request) {
	if !b.verified(w, r) {
		return
	}
	cmd, err := slack.SlashCommandParse(r)
	if err == nil && r.PostForm.Get("ssl_check") == "1" {
		w.WriteHeader(http.StatusOK) // Slack checking our certificate
		return
	}
	if err != nil || cmd.UserID == "" {
		http.Error(w, "not a Slack slash command", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), b.budget)
	defer cancel()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(b.command(ctx, &cmd))
}

const usage = "*/ask* — questions askbridge's agents are waiting on\n" +
	"• `/ask list` — pending questions you may see\n" +
	"• `/ask queue <job>` — a job's pending questions, by priority then age (`<job_id>` or `<tenant>/<job_id>`)\n" +
	"• `/ask show <id>` — one question (`<question_id>`, `<job_id>/<question_id>` or `<tenant>/<job_id>/<question_id>`)\n" +
	"• `/ask answer <id> <answer>` — answer it (typed fields: a JSON object)\n" +
	"• `/ask decline <id> [reason]` — decline to answer\n" +
	"• `/ask cancel <id>` — cancel it (admins and owners)\n" +
	"• `/ask help` — this text"

// slackUnescape undoes the escaping Slack applies to a slash command's
// text (& < > arrive as &amp; &lt; &gt;), in one pass so "&amp;lt;"
// becomes the "&lt;" the person typed.
var slackUnescape = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">")

// command runs one /ask command for HTTP and Socket Mode alike. The
// runtime applies the permission rules; we only pass who is asking.
func (b *Bot) command(ctx context.Context, cmd *slack.SlashCommand) *commandReply {
	if !bridge.ValidSlackID(cmd.UserID) {
		return ephemeral("askbridge could not tell who you are.")
	}
	identity := "slack:" + cmd.UserID
	sub, rest := cutWord(slackUnescape.Replace(cmd.Text))
	switch strings.ToLower(sub) {
	case "", "help":
		return ephemeral("%s", usage)
	case "list":
		return b.cmdList(ctx, identity)
	case "queue":
		return b.cmdQueue(ctx, identity, rest)
	case "show", "answer", "decline", "cancel":
	default:
		return ephemeral("I don't know `%s`.\n%s", quote(sub, 40), usage)
	}
	idText, arg := cutWord(rest)
	// Ids are shown in code spans (`job/question`); copied with their
	// backticks, they still name the question.
	idText = strings.Trim(idText, "`")
	if idText == "" {
		return ephemeral("Say which question: `/ask %s <question_id>`, `<job_id>/<question_id>` or `<tenant>/<job_id>/<question_id>`.", strings.ToLower(sub))
	}
	tenant, job, qid, ok := parseID(idText)
	if !ok {
		return ephemeral("`%s` is not a question id: use `<question_id>`, `<job_id>/<question_id>` or `<tenant>/<job_id>/<question_id>` (letters, digits, - and _).", quote(idText, 80))
	}
	var show bridge.ShowReply
	if err := b.request(ctx, bridge.APIShow, bridge.ShowRequest{As: identity, Tenant: tenant, JobID: job, QuestionID: qid}, &show); err != nil {
		b.log.WarnContext(ctx, "slack: /ask show request failed", "err", err)
		return ephemeral("askbridge did not answer in time. Please try again.")
	}
	if show.Error != "" || show.Question == nil {
		msg := show.Error
		if msg == "" {
			msg = "no such question"
		}
		return ephemeral("`%s`: %s", quote(idText, 80), quote(msg, 300))
	}
	v := show.Question
	switch strings.ToLower(sub) {
	case "show":
		return ephemeral("%s", b.describe(identity, v, true))
	case "answer":
		return b.cmdAttempt(ctx, cmd, v, bridge.ActionAnswer, arg)
	case "decline":
		return b.cmdAttempt(ctx, cmd, v, bridge.ActionDecline, arg)
	default:
		if v.State != "" && v.State != bridge.StatePending {
			// The runtime ends only waiting questions: a cancel would
			// change nothing and be answered by nobody.
			return ephemeral("`%s/%s` no longer waits (%s): there is nothing to cancel.", v.JobID, v.QuestionID, strings.ReplaceAll(v.State, "_", " "))
		}
		c := bridge.Cancel{Tenant: v.Tenant, JobID: v.JobID, QuestionID: v.QuestionID, By: identity, Reason: "cancelled from Slack by " + identity,
			// A refusal (not an owner or admin) comes back to this person.
			ReplyTo: map[string]string{replyUser: cmd.UserID, replyChannel: cmd.ChannelID, replyResponseURL: cmd.ResponseURL}}
		if err := bridge.Publish(ctx, b.js, bridge.CancelSubject(v.Tenant, v.JobID), "cancel-slack-"+cmp.Or(cmd.TriggerID, cmd.UserID+"-"+v.QuestionID), c); err != nil {
			b.log.ErrorContext(ctx, "slack: could not publish a cancel", "err", err)
			return ephemeral("askbridge could not record the cancel just now. Please try again.")
		}
		return ephemeral("Asked askbridge to cancel `%s/%s`. Only owners and admins may cancel: you will hear here if askbridge refuses; the card in the thread shows the result.", v.JobID, v.QuestionID)
	}
}

// cutWord splits off the first word of s. Words are separated by any
// white space, as Slack sends what was typed: a line break (shift+enter),
// a tab or a no-break space between words is a space. The rest keeps its
// inner lines and spaces (a reason, a multi-line answer).
func cutWord(s string) (word, rest string) {
	s = strings.TrimSpace(s)
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		return s[:i], strings.TrimSpace(s[i:])
	}
	return s, ""
}

// parseID reads "<question_id>", "<job_id>/<question_id>" or
// "<tenant>/<job_id>/<question_id>" strictly.
func parseID(s string) (tenant, job, question string, ok bool) {
	parts := strings.Split(s, "/")
	for _, p := range parts {
		if !bridge.ValidToken(p) {
			return "", "", "", false
		}
	}
	switch len(parts) {
	case 1:
		return "", "", parts[0], true
	case 2:
		return "", parts[0], parts[1], true
	case 3:
		return parts[0], parts[1], parts[2], true
	}
	return "", "", "", false
}

func (b *Bot) cmdList(ctx context.Context, identity string) *commandReply {
	var reply bridge.ListReply
	if err := b.request(ctx, bridge.APIList, bridge.ListRequest{As: identity, State: bridge.StatePending, Limit: 20}, &reply); err != nil {
		b.log.WarnContext(ctx, "slack: /ask list request failed", "err", err)
		return ephemeral("askbridge did not answer in time. Please try again.")
	}
	if reply.Error != "" {
		return ephemeral("askbridge: %s", quote(reply.Error, 300))
	}
	if len(reply.Questions) == 0 {
		return ephemeral("No questions wait for you.")
	}
	lines := []string{fmt.Sprintf("*%d pending question(s) you may see:*", len(reply.Questions))}
	for i := range reply.Questions {
		lines = append(lines, "• "+b.describe(identity, &reply.Questions[i], false))
	}
	if reply.Next != "" {
		if u := b.listURL(identity); u != "" {
			lines = append(lines, "<"+u+"|More in the askbridge console>")
		} else {
			lines = append(lines, "…and more.")
		}
	}
	return ephemeral("%s", strings.Join(lines, "\n"))
}

func (b *Bot) listURL(identity string) string {
	if b.o.Console.PublicURL == "" || len(b.o.Console.Secret) == 0 {
		return ""
	}
	return b.o.Console.ListURL(identity, console.DefaultLinkTTL)
}

// describe renders a question view as the identity may see it: a hidden
// one says only that it waits.
func (b *Bot) describe(identity string, v *bridge.QuestionView, full bool) string {
	id := "`" + v.JobID + "/" + v.QuestionID + "`"
	if v.Hidden || v.Question == nil {
		line := id + " (" + v.Tenant + ") — " + neutral.PlaceholderHidden
		if v.Restricted {
			line = id + " (" + v.Tenant + ") — " + bridge.RestrictedNotice(restrictedFor(v.WaitsFor))
		}
		if v.CanDecline {
			line += " You may decline it: `/ask decline " + v.JobID + "/" + v.QuestionID + " [reason]`."
		}
		return line
	}
	n := 150
	if full {
		n = 2500
	}
	s := id + " (" + v.Tenant + ") — " + quote(v.Question.Question, n)
	if full {
		switch {
		case len(v.Question.Fields) > 0:
			var names []string
			for _, f := range v.Question.Fields {
				names = append(names, f.Name+" ("+f.Kind+")")
			}
			s += "\nFields: " + quote(strings.Join(names, ", "), 400)
		case len(v.Question.Choices) > 0:
			s += "\nChoices: " + quote(strings.Join(v.Question.Choices, " | "), 400)
		}
		s += "\nState: " + v.State
		if v.Text != "" {
			s += " — " + quote(v.Text, 300)
		}
		s += proposalLine(v)
	}
	if v.State == bridge.StatePending && !v.Deadline.IsZero() {
		s += " · due " + blockkit.SlackDate(v.Deadline)
	}
	if u := b.questionURL(identity, blockkit.Ref{Tenant: v.Tenant, JobID: v.JobID, QuestionID: v.QuestionID, Version: v.TaskVersion}); u != "" {
		s += " · <" + u + "|open>"
	}
	return s
}

// proposalLine says where an approval's proposal stands, in the cards'
// words: "Proposal: Executed — Executed: ref rf_1 · 2 of 2 approvals: …".
func proposalLine(v *bridge.QuestionView) string {
	nc := neutral.New(neutral.FromView(v, false))
	if nc.Proposal == nil {
		return ""
	}
	s := "\nProposal: " + nc.StateLabel
	if nc.State == neutral.StateExecuted || nc.State == neutral.StateExecutionFailed {
		s += " — " + quote(nc.Outcome.Text(), 300)
	}
	if l := nc.ApprovalsLine(); !l.IsZero() {
		s += " · " + quote(l.Text(), 300)
	}
	return s
}

// restrictedFor names who may read a restricted question, people as
// Slack mentions.
func restrictedFor(people []string) string {
	return bridge.RestrictedReaders(people, blockkit.Mention)
}

// cmdAttempt proposes an answer or decline typed in /ask. It is checked
// here first when the question is visible, for an immediate clear error;
// the runtime checks it again and decides.
func (b *Bot) cmdAttempt(ctx context.Context, cmd *slack.SlashCommand, v *bridge.QuestionView, action, arg string) *commandReply {
	var answer json.RawMessage
	comment := ""
	if action == bridge.ActionAnswer && v.Question != nil && v.Question.IsApproval() {
		// "/ask answer <id> approve" or "... deny <reason>".
		act, reason, ok := bridge.ApprovalAction(arg)
		if !ok {
			return ephemeral("This is an approval: `/ask answer %s/%s approve` or `/ask answer %s/%s deny <reason>`.", v.JobID, v.QuestionID, v.JobID, v.QuestionID)
		}
		action, arg = act, reason
	}
	if action == bridge.ActionAnswer {
		if arg == "" {
			return ephemeral("Say the answer: `/ask answer %s/%s <answer>`.", v.JobID, v.QuestionID)
		}
		if obj, ok := bridge.TypedObject(arg); ok {
			answer = obj
		} else {
			answer, _ = json.Marshal(arg)
		}
	} else {
		comment = arg
	}
	if v.Question != nil {
		if _, aerr := bridge.CheckAnswer(v.Question, action, answer, comment); aerr != nil {
			return ephemeral("Not sent: %s", quote(aerr.Text, 1000))
		}
	}
	// A command names no version: it answers the latest.
	at := engine.NewAttempt(bridge.PlatformSlack, "slack-cmd-"+safeID(cmp.Or(cmd.TriggerID, fmt.Sprint(b.now().UnixNano()))),
		engine.Question{Tenant: v.Tenant, JobID: v.JobID, QuestionID: v.QuestionID},
		engine.Person{Identity: "slack:" + cmd.UserID, Name: cmd.UserName}, action, answer, comment, b.now(),
		map[string]string{replyUser: cmd.UserID, replyChannel: cmd.ChannelID, replyResponseURL: cmd.ResponseURL})
	if !b.publishAttempt(ctx, at, nil) {
		return ephemeral("askbridge could not record that just now. Please try again.")
	}
	if action == bridge.ActionDecline {
		return ephemeral("Sent your decline for `%s/%s`. You'll hear here if askbridge refuses it.", v.JobID, v.QuestionID)
	}
	return ephemeral("Sent your answer for `%s/%s`. You'll hear here if askbridge refuses it.", v.JobID, v.QuestionID)
}
