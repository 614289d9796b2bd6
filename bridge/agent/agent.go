// Package agent is the Go client for agent jobs: ask a question and wait
// for its outcome, or re-attach to a question after the agent restarted.
//
// A Client works on a NATS connection that presents the agent's
// credential, the .creds file `askbridge creds agent` wrote, and reads
// replies on the one inbox prefix the credential may subscribe to,
// _INBOX.<its name> (the command prints it). Connect makes one:
//
//	nc, err := agent.Connect("nats://127.0.0.1:4222", "support-bot.creds")
//
// which is, with nats.go's own options:
//
//	nc, err := nats.Connect("nats://127.0.0.1:4222",
//		nats.UserCredentials("support-bot.creds"),
//		nats.CustomInboxPrefix("_INBOX.support-bot"))
//
// Without the inbox prefix every request's reply is refused: a gate
// request, a cancel, Await's reading of the outcomes recorded.
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// Outcome is what the job reads when its question ends.
type Outcome = bridge.Resume

// Client asks questions over NATS.
type Client struct {
	nc *nats.Conn
	js jetstream.JetStream
	// Republish is how often Ask publishes its question again until the
	// runtime has recorded it (its asked event, or an outcome, shows it).
	// A JetStream that fsyncs only every so often can lose an acknowledged
	// question to a power cut; publishing again is harmless, since the
	// message id and the store both deduplicate it.
	Republish time.Duration
}

// DefaultRepublish is Client.Republish unless changed.
const DefaultRepublish = 3 * time.Second

// New makes a client on an existing NATS connection.
func New(nc *nats.Conn) (*Client, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("agent: jetstream: %w", err)
	}
	return &Client{nc: nc, js: js, Republish: DefaultRepublish}, nil
}

// Publish sends q without waiting, filling in a question id when it has
// none. Publishing the same question again is harmless: the runtime
// records a question id at a task version once (docs/contract.md), and
// each Publish is a message of its own in the stream.
func (c *Client) Publish(ctx context.Context, q *bridge.Question) error {
	msgID, err := questionMsgID(q)
	if err != nil {
		return err
	}
	return bridge.Publish(ctx, c.js, bridge.QuestionSubject(q.Tenant, q.JobID), msgID, q)
}

// questionMsgID fills in q's question id when it has none and names a
// publication of it: q.<tenant>.<job>.<question>.<version>.<nonce>.
func questionMsgID(q *bridge.Question) (string, error) {
	if q.QuestionID == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		q.QuestionID = "q-" + hex.EncodeToString(b[:])
	}
	if err := bridge.CheckToken("tenant", q.Tenant); err != nil {
		return "", fmt.Errorf("agent: %w", err)
	}
	if err := bridge.CheckToken("job_id", q.JobID); err != nil {
		return "", fmt.Errorf("agent: %w", err)
	}
	// Dots: ids cannot hold one, so no two questions share a message id.
	return fmt.Sprintf("q.%s.%s.%s.%d.%s", q.Tenant, q.JobID, q.QuestionID, q.TaskVersion, nonce()), nil
}

// nonce ends every message id the client sets. A stream drops a message
// whose Nats-Msg-Id it saw in the last 10 minutes, whatever its subject,
// and every tenant's agents publish into the same streams: an id made of
// the question's names alone could be published first by an agent of
// another tenant, on its own subject, and this one would be dropped as a
// duplicate. 64 random bits cannot be guessed; a call keeps its nonce on
// its retries, so a retry is still one message.
func nonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Ask publishes q and waits for its outcome (answered, declined,
// timed_out, cancelled, failed or invalid). It returns an error only when
// NATS fails or ctx ends; every outcome, good or bad, is an Outcome.
// Its publications of q, the first and those until the runtime records
// it, share one message id.
func (c *Client) Ask(ctx context.Context, q *bridge.Question) (*Outcome, error) {
	msgID, err := questionMsgID(q)
	if err != nil {
		return nil, err
	}
	subject := bridge.QuestionSubject(q.Tenant, q.JobID)
	publish := func(ctx context.Context) error { return bridge.Publish(ctx, c.js, subject, msgID, q) }
	// Watch for the runtime recording the question before publishing it.
	recorded := make(chan struct{})
	var once sync.Once
	sub, err := c.nc.Subscribe(bridge.EventSubject(q.Tenant, q.JobID), func(m *nats.Msg) {
		var ev struct {
			QuestionID  string `json:"question_id"`
			TaskVersion int64  `json:"task_version"`
		}
		if json.Unmarshal(m.Data, &ev) == nil && ev.QuestionID == q.QuestionID && ev.TaskVersion == q.TaskVersion {
			once.Do(func() { close(recorded) })
		}
	})
	if err != nil {
		return nil, fmt.Errorf("agent: watch %s/%s: %w", q.Tenant, q.JobID, err)
	}
	defer sub.Unsubscribe()
	if err := publish(ctx); err != nil && !c.publishesAgain(ctx, err) {
		return nil, err
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if c.Republish <= 0 {
			return
		}
		tick := time.NewTicker(c.Republish)
		defer tick.Stop()
		for {
			select {
			case <-actx.Done():
				return
			case <-recorded:
				return
			case <-tick.C:
				_ = publish(actx)
			}
		}
	}()
	return c.await(actx, q.Tenant, q.JobID, q.QuestionID, q.TaskVersion, true)
}

// publishesAgain reports whether Ask goes on after a publish that failed
// with err: one that was not acknowledged in time (a busy or recovering
// NATS) is published again every Republish, as a lost one is; a refused
// one, or the end of ctx, ends Ask.
func (c *Client) publishesAgain(ctx context.Context, err error) bool {
	if c.Republish <= 0 || ctx.Err() != nil {
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// Await waits for the outcome of a question asked before, reading the
// job's resumes from the start of the stream, so an agent that restarted
// finds an outcome published while it was down. It is the outcome of the
// question's latest version: when the question was asked again under the
// same id at a later version (superseding it, or after it ended), Await
// waits for the later one's. Which version is the latest it asks the
// runtime (ask.v1.api.show); while no runtime answers (one restarting),
// it waits for one rather than take an earlier version's outcome.
func (c *Client) Await(ctx context.Context, tenant, job, questionID string) (*Outcome, error) {
	return c.await(ctx, tenant, job, questionID, 0, false)
}

// AwaitVersion waits for the outcome of exactly version of questionID,
// reading the job's resumes from the start of the stream: the outcome of
// that very question, the refusal of it (invalid) included, and never an
// outcome of another version asked under the same id.
func (c *Client) AwaitVersion(ctx context.Context, tenant, job, questionID string, version int64) (*Outcome, error) {
	return c.await(ctx, tenant, job, questionID, version, true)
}

// laterVersion is the version of questionID the runtime holds, when it is
// later than version: the question was asked again under the same id.
// While no runtime is there to say, it asks again until ctx ends; a
// runtime that cannot be asked otherwise (a request that times out, as
// one this connection may not send does) counts as no later version.
func (c *Client) laterVersion(ctx context.Context, tenant, job, questionID string, version int64) (int64, bool, error) {
	req := bridge.ShowRequest{Tenant: tenant, JobID: job, QuestionID: questionID}
	wait := 100 * time.Millisecond
	for {
		var reply bridge.ShowReply
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := bridge.Request(rctx, c.nc, bridge.APIShow, req, &reply)
		cancel()
		if errors.Is(err, nats.ErrNoResponders) {
			select {
			case <-ctx.Done():
				return 0, false, ctx.Err()
			case <-time.After(wait):
			}
			wait = min(2*wait, 2*time.Second)
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return 0, false, ctx.Err()
			}
			return 0, false, nil
		}
		if reply.Question == nil || reply.Question.TaskVersion <= version {
			return 0, false, nil
		}
		return reply.Question.TaskVersion, true, nil
	}
}

// await returns the first outcome for questionID (at version, when exact).
// It reads the job's resumes as they are published, and those published
// before (or while the connection was down, or lost on the way) from the
// runtime (ask.v1.api.resumes): at its start, after a reconnect, and now
// and then while it waits (awaitCatchUpMax). An agent's credential reads
// its tenant's resumes live and asks the runtime for the rest, with no
// JetStream access of its own (docs/design.md, "Principals on the bus").
func (c *Client) await(ctx context.Context, tenant, job, questionID string, version int64, exact bool) (*Outcome, error) {
	live := make(chan *nats.Msg, 256)
	sub, err := c.nc.ChanSubscribe(bridge.ResumeSubject(tenant, job), live)
	if err != nil {
		return nil, fmt.Errorf("agent: await %s/%s/%s: %w", tenant, job, questionID, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := c.nc.Flush(); err != nil {
		return nil, fmt.Errorf("agent: await %s/%s/%s: %w", tenant, job, questionID, err)
	}
	// match says whether out is the outcome waited for; it may move
	// version on when the question was asked again later.
	match := func(out *Outcome) (bool, error) {
		if out.QuestionID != questionID || ((exact || version != 0) && out.TaskVersion != version) {
			return false, nil
		}
		if !exact {
			// Asked again under the same id at a later version (which
			// superseded this one, or came after it ended): this outcome
			// answers an earlier question, not the one the job asks now.
			later, ok, err := c.laterVersion(ctx, tenant, job, questionID, out.TaskVersion)
			if err != nil {
				return false, err
			}
			if ok {
				version = later // its outcome comes later
				return false, nil
			}
		}
		return true, nil
	}
	reconnects := c.nc.Stats().Reconnects
	recheck := time.NewTicker(awaitRecheck)
	defer recheck.Stop()
	catchUp, nextRead := awaitRecheck, time.Now()
	for {
		if c.nc.Stats().Reconnects != reconnects || !time.Now().Before(nextRead) {
			reconnects = c.nc.Stats().Reconnects
			recorded, err := c.recorded(ctx, tenant, job, questionID)
			if err != nil {
				return nil, fmt.Errorf("agent: await %s/%s/%s: %w", tenant, job, questionID, err)
			}
			for i := range recorded {
				if ok, err := match(&recorded[i]); err != nil || ok {
					return &recorded[i], err
				}
			}
			nextRead, catchUp = time.Now().Add(catchUp), min(2*catchUp, awaitCatchUpMax)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-recheck.C:
		case m := <-live:
			var out Outcome
			if json.Unmarshal(m.Data, &out) != nil {
				continue
			}
			if ok, err := match(&out); err != nil || ok {
				return &out, err
			}
		}
	}
}

// awaitRecheck is how often await looks whether the connection was
// re-established, which may have lost a resume published meanwhile.
const awaitRecheck = 2 * time.Second

// awaitCatchUpMax bounds the pause between await's reads of the outcomes
// published so far, which start awaitRecheck apart and double: a resume
// comes live on core NATS, which does not deliver again a message it
// lost on the way (a slow consumer, interest being rebuilt), and a read
// finds it.
const awaitCatchUpMax = time.Minute

// recorded asks the runtime for the question's outcomes published so
// far, waiting for a runtime while none answers.
func (c *Client) recorded(ctx context.Context, tenant, job, questionID string) ([]Outcome, error) {
	req := bridge.ResumesRequest{Tenant: tenant, JobID: job, QuestionID: questionID}
	wait := 100 * time.Millisecond
	for {
		var reply bridge.ResumesReply
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := bridge.Request(rctx, c.nc, bridge.APIResumes, req, &reply)
		cancel()
		switch {
		case err == nil && reply.Error == "":
			return reply.Resumes, nil
		case err == nil && !strings.HasPrefix(reply.Error, bridge.ResumesUnavailable):
			return nil, errors.New(reply.Error)
		case err == nil:
			// A replica stopping, or the stream between leaders: ask again.
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, context.DeadlineExceeded):
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}
