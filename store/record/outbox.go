package record

import (
	"strconv"

	"github.com/askbridge/askbridge/bridge"
)

// OutboxRow is a message written by a transition and not yet published.
type OutboxRow struct {
	ID      int64
	Subject string
	Data    []byte
	// Instance is the id of the database the row is in.
	Instance string
	// OldAt is when a row written before the time Unsent was given was
	// written, in Unix milliseconds; 0 for a younger row. (A younger row's
	// time is not read: a time read per row costs an allocation on the
	// relay's path.) No try to publish a row came before it was written.
	OldAt int64
}

// MsgID is the Nats-Msg-Id the row is published with: the same for every
// try of this row, different from every row of any other database.
// The relay names every row it publishes: it is built in a buffer on the
// stack, one allocation for the string.
func (o OutboxRow) MsgID() string {
	var buf [64]byte
	b := append(buf[:0], "ob-"...)
	b = append(b, o.Instance...)
	b = append(b, '-')
	return string(strconv.AppendInt(b, o.ID, 10))
}

// DeliveryRow is one platform's report on one question.
type DeliveryRow struct {
	Platform string
	OK       bool
	Message  bridge.MessageRef
	Failure  *bridge.Failure
}

// ReportedDelivery is a platform's report on the question of row id
// Question.
type ReportedDelivery struct {
	Question int64
	Delivery bridge.Delivery
}
