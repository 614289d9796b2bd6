package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	neutral "github.com/askbridge/askbridge/card"
)

// commandName is the application command askbridge registers.
const commandName = "ask"

func strOpt(name, desc string, required bool) *discordgo.ApplicationCommandOption {
	return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionString, Name: name, Description: desc, Required: required}
}

// reasonOpt is a reason option, held by Discord to the length the runtime
// takes, so nobody types a long reason only to have it refused.
func reasonOpt(desc string) *discordgo.ApplicationCommandOption {
	o := strOpt("reason", desc, false)
	o.MaxLength = bridge.MaxCommentText
	return o
}

// askCommand is /ask with its subcommands. Required options come first, as
// Discord demands.
func askCommand() *discordgo.ApplicationCommand {
	tenant := strOpt("tenant", "Tenant (when the question id is not unique)", false)
	job := strOpt("job", "Job id", false)
	sub := func(name, desc string, opts ...*discordgo.ApplicationCommandOption) *discordgo.ApplicationCommandOption {
		return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionSubCommand, Name: name, Description: desc, Options: opts}
	}
	return &discordgo.ApplicationCommand{
		Name:        commandName,
		Type:        discordgo.ChatApplicationCommand,
		Description: "See and answer the questions askbridge's agents are waiting on",
		Options: []*discordgo.ApplicationCommandOption{
			sub("list", "Questions waiting that you may see", tenant, job),
			sub("queue", "A job's pending questions, by priority then age", strOpt("job", "Job id (or tenant/job)", true), tenant),
			sub("show", "Show one question", strOpt("question", "Question id", true), tenant, job),
			sub("answer", "Answer a question", strOpt("question", "Question id", true),
				strOpt("answer", "Your answer (for typed fields, a JSON object)", true), tenant, job),
			sub("decline", "Decline to answer a question", strOpt("question", "Question id", true),
				reasonOpt("Why, and who could answer instead"), tenant, job),
			sub("cancel", "Cancel a job's pending questions (admins and owners)", strOpt("tenant", "Tenant", true),
				strOpt("job", "Job id", true), strOpt("question", "Only this question", false), reasonOpt("Why")),
			sub("help", "How to answer askbridge questions"),
		},
	}
}

// registerCommands registers /ask, guild-scoped when a guild is set.
func (b *Bot) registerCommands(ctx context.Context) error {
	return b.call(ctx, "register /ask", func(opts ...discordgo.RequestOption) error {
		_, err := b.s.ApplicationCommandBulkOverwrite(b.o.AppID, b.o.Guild, []*discordgo.ApplicationCommand{askCommand()}, opts...)
		return err
	})
}

// options flattens a subcommand's options by name.
func options(opts []*discordgo.ApplicationCommandInteractionDataOption) map[string]string {
	out := map[string]string{}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if s, ok := o.Value.(string); ok {
			out[o.Name] = strings.TrimSpace(s)
		}
	}
	return out
}

func (b *Bot) onCommand(ctx context.Context, in *discordgo.Interaction, who clicker, data discordgo.ApplicationCommandInteractionData) *discordgo.InteractionResponse {
	if data.Name != commandName || len(data.Options) != 1 || data.Options[0] == nil ||
		data.Options[0].Type != discordgo.ApplicationCommandOptionSubCommand {
		return ephemeral("Use `/ask help` to see what askbridge can do.")
	}
	sub := data.Options[0]
	opt := options(sub.Options)
	// The ids /ask list prints: tenant/job/question or job/question.
	if parts := strings.Split(opt["question"], "/"); len(parts) == 2 || len(parts) == 3 {
		opt["question"], opt["job"] = parts[len(parts)-1], parts[len(parts)-2]
		if len(parts) == 3 {
			opt["tenant"] = parts[0]
		}
	}
	if t, j, ok := strings.Cut(opt["job"], "/"); ok && sub.Name == "queue" && opt["tenant"] == "" {
		opt["tenant"], opt["job"] = t, j
	}
	for _, k := range []string{"tenant", "job", "question"} {
		if v := opt[k]; v != "" && !bridge.ValidToken(v) {
			return ephemeral(fmt.Sprintf("%s: %q must be 1 to 64 letters, digits, '-' or '_'.", k, v))
		}
	}
	switch sub.Name {
	case "list":
		return b.cmdList(ctx, who, opt)
	case "queue":
		return b.cmdQueue(ctx, who, opt)
	case "show":
		return b.cmdShow(ctx, who, opt)
	case "answer":
		return b.cmdAnswer(ctx, in, who, opt, bridge.ActionAnswer)
	case "decline":
		return b.cmdAnswer(ctx, in, who, opt, bridge.ActionDecline)
	case "cancel":
		return b.cmdCancel(ctx, in, who, opt)
	case "help":
		return ephemeral(helpText)
	}
	return ephemeral("Use `/ask help` to see what askbridge can do.")
}

const helpText = "**askbridge** lets agents ask people questions mid-job.\n" +
	"• Click a question's buttons to answer; **Decline** says you can't (give a reason, such as who could).\n" +
	"• Questions with typed fields are answered in the askbridge console: use **Open in console**.\n" +
	"• `/ask list` — questions waiting that you may see\n" +
	"• `/ask queue job:<id>` — a job's pending questions, by priority then age\n" +
	"• `/ask show question:<id>` — one question and its state\n" +
	"• `/ask answer question:<id> answer:<text>` — answer (typed fields: a JSON object such as {\"copies\": 2})\n" +
	"• `/ask decline question:<id> reason:<why>` — decline\n" +
	"• `/ask cancel tenant:<t> job:<id>` — cancel a job's questions (admins and owners)\n" +
	"askbridge checks every answer; only the people a question names, its owner, operators and admins may answer."

// request asks the runtime's API and decodes its reply.
func (b *Bot) request(ctx context.Context, subject string, req, reply any) error {
	return bridge.Request(ctx, b.o.NATS.Conn, subject, req, reply)
}

// apiTrouble is what the person reads when the runtime did not answer.
func (b *Bot) apiTrouble(err error) *discordgo.InteractionResponse {
	b.log.Warn("discord: runtime API", "err", err)
	if errors.Is(err, nats.ErrNoResponders) {
		return ephemeral("askbridge's runtime is not running right now; try again in a moment.")
	}
	return ephemeral("askbridge did not answer in time; try again in a moment.")
}

func (b *Bot) cmdList(ctx context.Context, who clicker, opt map[string]string) *discordgo.InteractionResponse {
	var reply bridge.ListReply
	err := b.request(ctx, bridge.APIList, bridge.ListRequest{As: who.Identity, Roles: who.Roles, Tenant: opt["tenant"],
		JobID: opt["job"], State: bridge.StatePending, Limit: 20}, &reply)
	if err != nil {
		return b.apiTrouble(err)
	}
	if reply.Error != "" {
		return ephemeral("askbridge: " + reply.Error)
	}
	if len(reply.Questions) == 0 {
		return ephemeral("No questions are waiting for you.")
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "**Questions waiting** (%d%s)\n", len(reply.Questions), map[bool]string{true: "+", false: ""}[reply.Next != ""])
	for _, v := range reply.Questions {
		line := fmt.Sprintf("• `%s/%s/%s` ", v.Tenant, v.JobID, v.QuestionID)
		switch {
		case v.Restricted && (v.Hidden || v.Question == nil):
			line += "_" + bridge.RestrictedNotice(restrictedTo(v.WaitsFor)) + "_"
		case v.Hidden || v.Question == nil:
			line += "_" + neutral.PlaceholderHidden + "_"
		default:
			line += bridge.Truncate(oneLine(v.Question.Question), 120)
		}
		if !v.Deadline.IsZero() {
			line += fmt.Sprintf(" — due <t:%d:R>", v.Deadline.Unix())
		}
		if v.CanAnswer {
			line += " — you may answer"
		} else if v.CanDecline {
			line += " — you may decline"
		}
		if sb.Len()+len(line)+40 > maxContent {
			sb.WriteString("… more: filter with `tenant` or `job`.")
			break
		}
		sb.WriteString(line + "\n")
	}
	return ephemeral(sb.String())
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (b *Bot) show(ctx context.Context, who clicker, opt map[string]string) (*bridge.ShowReply, *discordgo.InteractionResponse) {
	if opt["question"] == "" {
		return nil, ephemeral("question: is required.")
	}
	var reply bridge.ShowReply
	err := b.request(ctx, bridge.APIShow, bridge.ShowRequest{As: who.Identity, Roles: who.Roles, Tenant: opt["tenant"],
		JobID: opt["job"], QuestionID: opt["question"]}, &reply)
	if err != nil {
		return nil, b.apiTrouble(err)
	}
	if reply.Error != "" {
		return nil, ephemeral("askbridge: " + reply.Error)
	}
	if reply.Question == nil {
		return nil, ephemeral("askbridge knows no question " + opt["question"] + " that you may see.")
	}
	return &reply, nil
}

func (b *Bot) cmdShow(ctx context.Context, who clicker, opt map[string]string) *discordgo.InteractionResponse {
	reply, refusal := b.show(ctx, who, opt)
	if refusal != nil {
		return refusal
	}
	v := reply.Question
	nc := neutral.New(neutral.FromView(v, false))
	// The card's words for the state ("Approved (not yet executed)"), as
	// the card below and Slack's /ask show say it.
	head := fmt.Sprintf("`%s/%s/%s` (task version %d): **%s**", v.Tenant, v.JobID, v.QuestionID, v.TaskVersion, nc.StateLabel)
	if nc.Kind == neutral.KindHidden {
		text := head + "\n" + nc.Placeholder
		if v.Restricted {
			text = head + "\n" + bridge.RestrictedNotice(restrictedTo(v.WaitsFor))
		}
		if v.State == bridge.StatePending && v.CanDecline {
			text += fmt.Sprintf("\nYou may decline it: `/ask decline question:%s/%s/%s`.", v.Tenant, v.JobID, v.QuestionID)
		}
		return ephemeral(text)
	}
	embed := drawEmbed(nc)
	if n := len(v.Question.Choices); n > 0 && n <= maxChoices {
		// On the card they are buttons; here, the words /ask answer takes,
		// each whole: as many fields as they need.
		for i, value := range choiceFields(v.Question.Choices) {
			name := "Choices"
			if i > 0 {
				name = "Choices (continued)"
			}
			embed.Fields = append(embed.Fields, &discordgo.MessageEmbedField{Name: name, Value: value})
		}
		fitEmbed(embed)
	}
	resp := ephemeral(head)
	resp.Data.Embeds = []*discordgo.MessageEmbed{embed}
	if v.State == bridge.StatePending && (v.CanAnswer || v.CanDecline) {
		u := b.questionLink(who.Identity, who.Roles, v.Tenant, v.JobID, v.QuestionID)
		if btn := consoleLinkButton(u); btn != nil {
			resp.Data.Components = []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{btn}}}
		} else if u != "" {
			resp.Data.Content += "\nYour personal link to this question (do not share it): <" + u + ">"
		}
	}
	return resp
}

// restrictedTo names who may read a restricted question, people as
// Discord mentions, cut to fit a message.
func restrictedTo(people []string) string {
	return bridge.Truncate(bridge.RestrictedReaders(people, func(id string) string { return who(id, "") }), 320)
}

// choiceFields joins choices with " | " into embed field values of at
// most maxFieldText characters, never splitting a choice.
func choiceFields(choices []string) []string {
	var out []string
	cur := ""
	for _, ch := range choices {
		ch = bridge.Truncate(ch, maxFieldText) // a choice has at most 200
		switch {
		case cur == "":
			cur = ch
		case utf8.RuneCountInString(cur)+len(" | ")+utf8.RuneCountInString(ch) <= maxFieldText:
			cur += " | " + ch
		default:
			out, cur = append(out, cur), ch
		}
	}
	return append(out, cur)
}

func (b *Bot) cmdAnswer(ctx context.Context, in *discordgo.Interaction, who clicker, opt map[string]string, act string) *discordgo.InteractionResponse {
	reply, refusal := b.show(ctx, who, opt)
	if refusal != nil {
		return refusal
	}
	v := reply.Question
	if v.State != bridge.StatePending {
		return ephemeral(fmt.Sprintf("Question %s is %s, no longer waiting for an answer.", v.QuestionID, v.State))
	}
	var answer json.RawMessage
	comment := ""
	if act == bridge.ActionAnswer {
		if opt["answer"] == "" {
			return ephemeral("answer: is required.")
		}
		answer, _ = json.Marshal(opt["answer"])
		if v.Question != nil && !v.Hidden && len(v.Question.Fields) > 0 {
			// Phones and macOS type {“copies”: 2}: read as Slack's /ask does.
			if obj, ok := bridge.TypedObject(strings.TrimSpace(opt["answer"])); ok {
				answer = obj
			}
		}
		if v.Question != nil && !v.Hidden {
			if v.Question.IsApproval() {
				// "approve", or "deny <reason>", as in Slack and the CLI.
				a, reason, ok := bridge.ApprovalAction(opt["answer"])
				if !ok {
					return ephemeral("This is an approval: answer `approve`, or `deny` and the reason.")
				}
				act, answer, comment = a, nil, reason
			}
			if _, aerr := bridge.CheckAnswer(v.Question, act, answer, comment); aerr != nil {
				return ephemeral(aerr.Text)
			}
		}
	} else {
		comment = opt["reason"]
		if utf8Len(comment) > bridge.MaxCommentText {
			return ephemeral(fmt.Sprintf("reason: must be at most %d characters.", bridge.MaxCommentText))
		}
	}
	// The person saw no card: version 0 binds the attempt to the latest.
	c := &card{Tenant: v.Tenant, JobID: v.JobID, QuestionID: v.QuestionID}
	return b.propose(ctx, in, who, c, act, answer, comment)
}

func utf8Len(s string) int { return len([]rune(s)) }

func (b *Bot) cmdCancel(ctx context.Context, in *discordgo.Interaction, who clicker, opt map[string]string) *discordgo.InteractionResponse {
	if opt["tenant"] == "" || opt["job"] == "" {
		return ephemeral("tenant and job: are required.")
	}
	reason := opt["reason"]
	if utf8Len(reason) > bridge.MaxCommentText {
		return ephemeral(fmt.Sprintf("reason: must be at most %d characters.", bridge.MaxCommentText))
	}
	// Roles are the ones mapped from the member's Discord roles (as on
	// answer attempts); the runtime decides. reply_to lets the bot tell
	// this person, and only them, when the runtime refuses.
	rt := b.replyTo(in)
	rt[replyKind] = replyKindCancel
	rt[replyUser] = strings.TrimPrefix(who.Identity, bridge.PlatformDiscord+":")
	rt[replyInteraction] = in.ID
	rt[replySentAt] = strconv.FormatInt(b.now().Unix(), 10)
	cancel := bridge.Cancel{Tenant: opt["tenant"], JobID: opt["job"], QuestionID: opt["question"], Reason: reason,
		By: who.Identity, Roles: who.Roles, ReplyTo: rt}
	if err := bridge.Publish(ctx, b.o.NATS.JS, bridge.CancelSubject(cancel.Tenant, cancel.JobID), "cancel-"+attemptID(in), cancel); err != nil {
		b.log.Error("discord: cannot publish the cancel", "tenant", cancel.Tenant, "job", cancel.JobID, "err", err)
		return cancelNotRecorded
	}
	what := "job " + cancel.JobID
	if cancel.QuestionID != "" {
		what = "question " + cancel.QuestionID + " of " + what
	}
	return ephemeral("Asked askbridge to cancel " + what + "; only owners and admins may. The cards update when askbridge cancels; if it refuses, you will be told here (or by direct message).")
}
