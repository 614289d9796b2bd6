package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
)

// CheckAnswer is the one validator: it refuses in the field's own words, and
// turns an accepted answer into canonical JSON in field declaration order.
func ExampleCheckAnswer() {
	one, nine := 1.0, 9.0
	q := &bridge.Question{
		Tenant: "acme", JobID: "job-1", QuestionID: "q-1",
		Question: "When should I send the report, and how many copies?",
		Fields: []bridge.Field{
			{Name: "on", Kind: bridge.FieldDate, Label: "Send on", Required: true},
			{Name: "copies", Kind: bridge.FieldNumber, Integer: true, Min: &one, Max: &nine},
		},
	}

	_, refused := bridge.CheckAnswer(q, bridge.ActionAnswer, json.RawMessage(`{"copies": 12, "on": "2026-10-20"}`), "")
	fmt.Println(refused.Reason, "-", refused.Text)

	ok, _ := bridge.CheckAnswer(q, bridge.ActionAnswer, json.RawMessage(`{"copies": "2", "on": "2026-10-20"}`), "")
	fmt.Println(string(ok.Value))
	fmt.Println(ok.Display)
	fmt.Println(bridge.AnsweredText(ok.Value))
	// Output:
	// invalid_answer - copies: must be at most 9
	// {"on":"2026-10-20","copies":2}
	// on: 2026-10-20, copies: 2
	// The answer: {"on":"2026-10-20","copies":2}
}

// An agent's connection presents the credential `askbridge creds agent
// --tenant acme --name support-bot --out support-bot.creds` wrote, and
// reads replies on the inbox prefix it printed, the only one the
// credential may subscribe to; agent.Connect(url, "support-bot.creds")
// does the same. (Not run: it needs the service.)
func Example_agent() {
	nc, err := nats.Connect("nats://127.0.0.1:4222",
		nats.UserCredentials("support-bot.creds"),
		nats.CustomInboxPrefix("_INBOX.support-bot"))
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	c, err := agent.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	reply, err := c.Gate(context.Background(), "acme", "job-1", 1, "send_report")
	if err != nil || !reply.Allowed {
		log.Fatalf("not now: %v %s", err, reply.Reason)
	}
}
