package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bridge"
)

// TestBenchClickIsASlackPayload: the bench's hand-written click reads, with
// slack-go, as the click on the card it was built from, the echoed message
// and its blocks included.
func TestBenchClickIsASlackPayload(t *testing.T) {
	q := &bridge.Question{Tenant: "bench", JobID: "job-000007", QuestionID: "q", TaskVersion: 1,
		Question: `Which "colour"? ünïcode & <tags>`, Choices: []string{"red", "blue"}}
	blocks, text := blockkit.QuestionMessage(blockkit.Card{Question: q, AskedAt: time.Now(), Deadline: time.Now().Add(time.Hour)})
	raw, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	f := &benchSlack{}
	f.keep("C000007", "1700000000.000042", string(raw), text)
	cards := f.takeCards()
	if len(cards) != 1 {
		t.Fatalf("kept %d cards", len(cards))
	}
	r := httptest.NewRequest(http.MethodPost, "/slack/interactions", strings.NewReader(cards[0].payload()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	cb, err := slack.InteractionCallbackParse(r)
	if err != nil {
		t.Fatal(err)
	}
	a := cb.ActionCallback.BlockActions
	if cb.Type != slack.InteractionTypeBlockActions || cb.User.ID != "UBENCH" || cb.Container.ChannelID != "C000007" ||
		cb.Container.MessageTs != "1700000000.000042" || len(a) != 1 || a[0].ActionID != cards[0].actionID || a[0].Value != cards[0].value {
		t.Fatalf("click read as %+v", cb)
	}
	if cb.Message.Text != text || len(cb.Message.Blocks.BlockSet) != len(blocks) {
		t.Fatalf("echoed message: text %q, %d blocks; want %q, %d", cb.Message.Text, len(cb.Message.Blocks.BlockSet), text, len(blocks))
	}
}
