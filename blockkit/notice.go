package blockkit

import (
	"strings"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/card"
)

// noticeCut follows a notice's text cut short: a notice has no console
// button, and its parts are bounded well below a section's limit.
const noticeCut = cutPlain

// DrawNotice renders a notice card (card.NewNotice): its title, the five
// parts under their labels, in order, and a context line saying nobody
// needs to answer. It has no controls. The second result is the
// notification text.
func DrawNotice(nc card.Notice) ([]slack.Block, string) {
	title, _ := fitEscaped(nc.Title, 200, 0)
	blocks := []slack.Block{slack.NewSectionBlock(mrkdwn(":warning: *"+title+"*"), nil, nil)}
	for _, p := range nc.Parts {
		blocks = append(blocks, section("*"+p.Label+"*\n", p.Text, noticeCut))
	}
	context := "Notice · nothing to answer"
	if !nc.At.IsZero() {
		context += " · " + SlackDate(nc.At)
	}
	blocks = append(blocks, slack.NewContextBlock("", mrkdwn(context)))
	text, _ := fitEscaped(nc.Title+": "+strings.SplitN(nc.Part(card.LabelFailure), "\n", 2)[0], 300, 0)
	return blocks, text
}
