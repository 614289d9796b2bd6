package blockkit

import (
	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
)

// Nudge renders the thread message that re-surfaces the top question of a
// job (card.NudgeOf): the question (for a restricted one, who it waits
// for, via mention), a link to its card, and how many others wait. With
// the console configured it offers "Open in console" (ActionConsoleJob,
// block id carrying the question's Ref), answered with a job link for the
// person who clicks.
func Nudge(n card.Nudge, link string, console bool) ([]slack.Block, string) {
	title, _ := fitEscaped(n.Title, 1500, 0)
	if n.Hidden {
		title = "_" + bridge.RestrictedNotice(bridge.RestrictedReaders(n.WaitsFor, Mention)) + "_"
	} else {
		title = ">" + title
	}
	line := ":arrow_up: *" + n.Lead + "* (job `" + n.JobID + "`):\n" + title
	if link != "" {
		line += "\n<" + link + "|Go to the question>"
	}
	ref := Ref{Tenant: n.Tenant, JobID: n.JobID, QuestionID: n.QuestionID, Version: n.TaskVersion}
	var accessory *slack.Accessory
	if console {
		accessory = slack.NewAccessory(consoleButton(ActionConsoleJob))
	}
	blocks := []slack.Block{slack.NewSectionBlock(mrkdwn(line), nil, accessory, slack.SectionBlockOptionBlockID(ActionsBlockID(ref)))}
	if n.More != "" {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(n.More)))
	}
	text := n.Lead + " (job " + n.JobID + ")"
	if n.More != "" {
		text += ". " + n.More
	}
	return blocks, text
}
