// Package agent is the Go client for agent jobs: ask a question and wait
// for its outcome, or re-attach to a question after the agent restarted.
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// Outcome is what the job reads when its question ends.
type Outcome = bridge.Resume

// Client asks questions over NATS.
type Client struct {
	js jetstream.JetStream
}

// New makes a client on an existing NATS connection.
func New(nc *nats.Conn) (*Client, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("agent: jetstream: %w", err)
	}
	return &Client{js: js}, nil
}

// Publish sends q without waiting, filling in a question id when it has
// none. Publishing the same question again is harmless: its message id
// dedupes it in the stream, and the runtime records it once.
func (c *Client) Publish(ctx context.Context, q *bridge.Question) error {
	if q.QuestionID == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		q.QuestionID = "q-" + hex.EncodeToString(b[:])
	}
	if err := bridge.CheckToken("tenant", q.Tenant); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if err := bridge.CheckToken("job_id", q.JobID); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	msgID := fmt.Sprintf("q-%s-%s-%s-%d", q.Tenant, q.JobID, q.QuestionID, q.TaskVersion)
	return bridge.Publish(ctx, c.js, bridge.QuestionSubject(q.Tenant, q.JobID), msgID, q)
}

// Ask publishes q and waits for its outcome (answered, declined,
// timed_out, cancelled, failed or invalid). It returns an error only when
// NATS fails or ctx ends; every outcome, good or bad, is an Outcome.
func (c *Client) Ask(ctx context.Context, q *bridge.Question) (*Outcome, error) {
	if err := c.Publish(ctx, q); err != nil {
		return nil, err
	}
	return c.await(ctx, q.Tenant, q.JobID, q.QuestionID, q.TaskVersion, true)
}

// Await waits for the outcome of a question asked before, reading the
// job's resumes from the start of the stream, so an agent that restarted
// finds an outcome published while it was down.
func (c *Client) Await(ctx context.Context, tenant, job, questionID string) (*Outcome, error) {
	return c.await(ctx, tenant, job, questionID, 0, false)
}

// await returns the first outcome for questionID (at version, when exact).
func (c *Client) await(ctx context.Context, tenant, job, questionID string, version int64, exact bool) (*Outcome, error) {
	cons, err := c.js.OrderedConsumer(ctx, bridge.StreamResumes, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{bridge.ResumeSubject(tenant, job)},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: await %s/%s/%s: %w", tenant, job, questionID, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("agent: await %s/%s/%s: %w", tenant, job, questionID, err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil, fmt.Errorf("agent: await %s/%s/%s: stopped", tenant, job, questionID)
			}
			return nil, fmt.Errorf("agent: await %s/%s/%s: %w", tenant, job, questionID, err)
		}
		var out Outcome
		if json.Unmarshal(msg.Data(), &out) != nil {
			continue
		}
		if out.QuestionID == questionID && (!exact || out.TaskVersion == version) {
			return &out, nil
		}
	}
}
