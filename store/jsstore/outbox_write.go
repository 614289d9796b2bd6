package jsstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nuid"

	"github.com/askbridge/askbridge/store/record"
)

// outboxDoc is one message waiting to be published, under out.<nuid>. Its
// row id is the key's revision: unique, and in the order of the commits
// that wrote them, as SQLite's row ids are.
type outboxDoc struct {
	Subject   string    `json:"subject"`
	Data      []byte    `json:"data"`
	CreatedAt time.Time `json:"created_at"`
}

// outbox writes msgs, in order, as new outbox rows of the transaction: a
// transition's messages are published only if it commits.
func (t *txn) outbox(msgs []record.Message, at time.Time) error {
	for _, m := range msgs {
		data, err := json.Marshal(outboxDoc{Subject: m.Subject, Data: m.Data, CreatedAt: msTime(at)})
		if err != nil {
			return fmt.Errorf("jsstore: encode an outbox message to %s: %w", m.Subject, err)
		}
		t.putBlind(keyOutbox(nuid.Next()), data, 0)
	}
	return nil
}
