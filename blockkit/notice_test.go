package blockkit

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/card"
)

// TestNoticeCasesGolden draws every notice of the shared table
// (card.NoticeCases) into testdata/cases/notice.golden, each checked
// against Slack's limits: the five parts in order, no controls, no
// secret. bots/discord draws the same table.
func TestNoticeCasesGolden(t *testing.T) {
	var drawn []drawnCase
	for _, c := range card.NoticeCases() {
		nc := card.NewNotice(c.Notice)
		blocks, text := DrawNotice(nc)
		slackAccepts(t, "notice/"+c.Name, message{Text: text, Blocks: blocks}, "message")
		raw, _ := json.Marshal(message{Text: text, Blocks: blocks})
		for _, secret := range []string{card.CaseToken, "hunter2", "abc.DEF"} {
			if strings.Contains(string(raw), secret) {
				t.Errorf("%s: the card shows %q", c.Name, secret)
			}
		}
		for _, b := range blocks {
			if b.BlockType() == slack.MBTAction || strings.Contains(string(raw), `"accessory"`) {
				t.Errorf("%s: a notice card has controls", c.Name)
			}
		}
		last := -1
		for _, label := range card.NoticeLabels {
			at := strings.Index(string(raw), `*`+label+`*\n`)
			if at <= last {
				t.Errorf("%s: %s is missing or out of order", c.Name, label)
			}
			last = at
		}
		drawn = append(drawn, drawnCase{c.Name, text, blocks})
	}
	golden(t, "cases/notice", drawn)
}
