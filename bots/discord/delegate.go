package discord

import (
	"context"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/bridge"
	neutral "github.com/askbridge/askbridge/card"
)

// onRequest handles Ask someone else and Remind me later (docs/contract.md
// "Delegate and snooze"). The card's buttons reply, to the clicker alone,
// with a user select or the snooze's lengths; what is picked there is
// proposed to the runtime, which decides as for an answer.
func (b *Bot) onRequest(ctx context.Context, in *discordgo.Interaction, who clicker, c *card, a action,
	data discordgo.MessageComponentInteractionData) *discordgo.InteractionResponse {
	id := func(act string, index int) string {
		return customID(act, c.Tenant, c.JobID, c.QuestionID, c.TaskVersion, index)
	}
	switch a.Act {
	case actDelegate:
		// Only someone who may answer is offered the picker.
		if why := b.mayNotAnswer(ctx, who, c); why != "" {
			return ephemeral(why)
		}
		one := 1
		pick := discordgo.SelectMenu{MenuType: discordgo.UserSelectMenu, CustomID: id(actPick, 0), Placeholder: neutral.PickLabel,
			MinValues: &one, MaxValues: 1}
		return ephemeral("Whom should askbridge ask to answer? They become one of its answerers and get a direct message with the question.",
			discordgo.ActionsRow{Components: []discordgo.MessageComponent{pick}})
	case actPick:
		if len(data.Values) != 1 || !bridge.ValidSnowflake(data.Values[0]) {
			return ephemeral("Pick one person.")
		}
		to := bridge.PlatformDiscord + ":" + data.Values[0]
		if to == who.Identity {
			return ephemeral("Pick someone else: you may answer it yourself.")
		}
		if r := b.propose(ctx, in, who, c, bridge.ActionDelegate, nil, "", func(at *bridge.AnswerAttempt) { at.Delegate = to }); r != deferredUpdate {
			return r
		}
		return updated("Asking <@" + data.Values[0] + "> to answer. The question's card says so once askbridge accepts it.")
	case actSnooze:
		var row []discordgo.MessageComponent
		for i, o := range neutral.SnoozeOptions {
			row = append(row, discordgo.Button{Label: o.Label, Style: discordgo.SecondaryButton, CustomID: id(actSnoozeFor, i)})
		}
		return ephemeral("When should askbridge remind you of this question? Only your own reminders move; the question still times out as before.",
			discordgo.ActionsRow{Components: row})
	case actSnoozeFor:
		if a.Index >= len(neutral.SnoozeOptions) {
			return ephemeral("That is not one of Remind me later's choices.")
		}
		o := neutral.SnoozeOptions[a.Index]
		if r := b.propose(ctx, in, who, c, bridge.ActionSnooze, nil, "", func(at *bridge.AnswerAttempt) { at.Snooze = o.Value }); r != deferredUpdate {
			return r
		}
		return updated("Remind me later: " + o.Label + ". askbridge confirms here when it has moved your reminder.")
	}
	return ephemeral("This button is not one askbridge understands.")
}

// updated replaces the ephemeral message a component was on with text,
// and no components: the choice is made.
func updated(text string) *discordgo.InteractionResponse {
	return &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: bridge.Truncate(text, maxContent), Components: []discordgo.MessageComponent{},
			AllowedMentions: noMentions}}
}
