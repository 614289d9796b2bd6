package agent_test

import (
	"context"
	"fmt"
	"log"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
)

// An agent connects with the credential `askbridge creds agent --tenant
// acme --name support-bot --out support-bot.creds` wrote, asks, and
// reads the outcome. (Not run: it needs the service.)
func ExampleConnect() {
	nc, err := agent.Connect("nats://127.0.0.1:4222", "support-bot.creds")
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	c, err := agent.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	out, err := c.Ask(context.Background(), &bridge.Question{Tenant: "acme", JobID: "job-1",
		Question: "Which colour should the report use?", Choices: []string{"red", "blue"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Text) // The answer: blue
}
