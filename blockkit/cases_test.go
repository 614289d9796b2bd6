package blockkit

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/card"
)

// drawnCase is one case of the shared table as Slack shows it.
type drawnCase struct {
	Case   string        `json:"case"`
	Text   string        `json:"text"`
	Blocks []slack.Block `json:"blocks"`
}

// TestSharedCasesGolden draws every case of the table the platforms share
// (card.Cases) into testdata/cases/<kind>.golden, each message checked
// against Slack's limits. bots/discord draws the same table.
func TestSharedCasesGolden(t *testing.T) {
	groups := map[string][]drawnCase{}
	for _, c := range card.Cases() {
		blocks, text := Draw(card.New(c.Input))
		name := c.Group + "/" + c.Name
		slackAccepts(t, name, message{Text: text, Blocks: blocks}, "message")
		if q := c.Input.Question; q.Restricted() {
			raw, _ := json.Marshal(message{Text: text, Blocks: blocks})
			for _, secret := range []string{q.Question, q.WhyItMatters, q.BlockedTools[0]} {
				if strings.Contains(string(raw), secret) {
					t.Errorf("%s: a restricted question's card shows %q", name, secret)
				}
			}
		}
		groups[c.Group] = append(groups[c.Group], drawnCase{c.Name, text, blocks})
	}
	for g, drawn := range groups {
		golden(t, "cases/"+g, drawn)
	}
}
