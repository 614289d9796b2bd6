package bridge_test

import (
	"encoding/json"
	"fmt"

	"github.com/askbridge/askbridge/bridge"
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
