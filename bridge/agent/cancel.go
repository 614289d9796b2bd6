package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// ErrCancelRefused is the error of a cancel the runtime refused; the
// decision's Refused says why.
var ErrCancelRefused = errors.New("agent: cancel refused")

// Cancel ends questions of a job (docs/contract.md, "Cancels"): all its
// pending ones or cancel.QuestionID's, with a Status when a question was
// retired or answered in conversation. It checks cancel as the runtime
// will (bridge.ValidateCancel) and waits, until ctx ends, for the runtime's
// decision: how many questions ended, or why it refused (ErrCancelRefused).
func (c *Client) Cancel(ctx context.Context, cancel bridge.Cancel) (bridge.CancelDecision, error) {
	if err := bridge.CheckToken("tenant", cancel.Tenant); err != nil {
		return bridge.CancelDecision{}, fmt.Errorf("agent: cancel: %w", err)
	}
	if err := bridge.CheckToken("job", cancel.JobID); err != nil {
		return bridge.CancelDecision{}, fmt.Errorf("agent: cancel: %w", err)
	}
	if err := bridge.ValidateCancel(&cancel); err != nil {
		return bridge.CancelDecision{}, fmt.Errorf("agent: cancel: %w", err)
	}
	data, err := json.Marshal(cancel)
	if err != nil {
		return bridge.CancelDecision{}, fmt.Errorf("agent: cancel: %w", err)
	}
	inbox := c.nc.NewInbox() // the runtime tells only _INBOX. subjects (bridge.ValidNotifySubject)
	sub, err := c.nc.SubscribeSync(inbox)
	if err != nil {
		return bridge.CancelDecision{}, fmt.Errorf("agent: cancel: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	msg := &nats.Msg{Subject: bridge.CancelSubject(cancel.Tenant, cancel.JobID), Data: data,
		Header: nats.Header{bridge.HeaderDecidedTo: []string{inbox}}}
	if _, err := c.js.PublishMsg(ctx, msg, jetstream.WithMsgID("cancel-"+nonce())); err != nil {
		return bridge.CancelDecision{}, fmt.Errorf("agent: publish cancel: %w", err)
	}
	reply, err := sub.NextMsgWithContext(ctx)
	if err != nil {
		return bridge.CancelDecision{}, fmt.Errorf("agent: cancel sent, no decision yet: %w", err)
	}
	var d bridge.CancelDecision
	if err := json.Unmarshal(reply.Data, &d); err != nil {
		return bridge.CancelDecision{}, fmt.Errorf("agent: cancel sent, its decision unreadable: %w", err)
	}
	if d.Refused != "" {
		return d, fmt.Errorf("%w: %s", ErrCancelRefused, d.Refused)
	}
	return d, nil
}

// Retire ends a question that is no longer needed (the topic changed);
// its card says "No longer needed: <reason>".
func (c *Client) Retire(ctx context.Context, tenant, job, questionID, reason string) (bridge.CancelDecision, error) {
	return c.Cancel(ctx, bridge.Cancel{Tenant: tenant, JobID: job, QuestionID: questionID, Status: bridge.CancelRetired, Reason: reason})
}

// AnsweredInConversation ends a question the person answered elsewhere in
// the conversation; evidence is their words, which its card quotes.
func (c *Client) AnsweredInConversation(ctx context.Context, tenant, job, questionID, evidence string) (bridge.CancelDecision, error) {
	return c.Cancel(ctx, bridge.Cancel{Tenant: tenant, JobID: job, QuestionID: questionID,
		Status: bridge.CancelImplicitlyAnswered, Evidence: evidence})
}
