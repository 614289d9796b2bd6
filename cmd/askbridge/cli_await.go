package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
)

// askNoWait publishes q and waits only for the runtime's intake decision
// (docs/contract.md, "The question"): recorded (its asked event, or the
// record shows it waiting) prints its tenant, job and id and exits 0;
// refused (its invalid outcome: an unknown person:, an amount over the
// policy's limit) fails naming why, so a script never goes on with a
// question that exists nowhere.
func (c *cli) askNoWait(ctx context.Context, nc *nats.Conn, client *agent.Client, q *bridge.Question) int {
	ctx, cancel := context.WithTimeout(ctx, decisionWait)
	defer cancel()
	decided := make(chan *bridge.Resume, 1) // nil: recorded
	send := func(r *bridge.Resume) {
		select {
		case decided <- r:
		default:
		}
	}
	sub, err := nc.Subscribe(bridge.EventSubject(q.Tenant, q.JobID), func(m *nats.Msg) {
		var ev bridge.Event
		if json.Unmarshal(m.Data, &ev) == nil && ev.QuestionID == q.QuestionID && ev.TaskVersion == q.TaskVersion {
			send(nil)
		}
	})
	if err == nil {
		defer sub.Unsubscribe()
		err = nc.Flush()
	}
	if err != nil {
		return c.fail("%v", err)
	}
	go func() {
		if out, err := client.AwaitVersion(ctx, q.Tenant, q.JobID, q.QuestionID, q.TaskVersion); err == nil {
			send(out)
		}
	}()
	if err := client.Publish(ctx, q); err != nil {
		return c.fail("%v", err)
	}
	// Asked before under this id and version, the stream drops the copy:
	// no event comes, but the record shows it waiting.
	if v, err := c.findQuestion(nc, q.Tenant, q.JobID, q.QuestionID); err == nil && v.TaskVersion == q.TaskVersion && v.State == bridge.StatePending {
		send(nil)
	}
	select {
	case out := <-decided:
		switch {
		case out == nil:
			fmt.Fprintf(c.stdout, "%s %s %s\n", q.Tenant, q.JobID, q.QuestionID)
			return exitOK
		case out.Outcome == bridge.OutcomeInvalid:
			return c.fail("%s", out.Text)
		}
		return c.outcome(out) // it ended at once (no platform could show it), or before
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.Canceled) {
			return c.fail("interrupted; the question was sent: see it with 'askbridge show --tenant %s %s %s'", q.Tenant, q.JobID, q.QuestionID)
		}
		return c.fail("sent, but the runtime did not record the question within %v (is 'askbridge serve' running?); "+
			"check with 'askbridge show --tenant %s %s %s'", decisionWait, q.Tenant, q.JobID, q.QuestionID)
	}
}

// await waits for the outcome of a question asked before, as ask waits:
// the command a stopped ask prints to re-attach.
func (c *cli) await(ctx context.Context, args []string) int {
	fs, url := c.flags("await")
	tenant := fs.String("tenant", "", "tenant (default: found from the job and question)")
	if code, ok := c.parse(fs, args, false); !ok {
		return code
	}
	if fs.NArg() != 2 {
		return c.usageError("await", "takes a job and a question")
	}
	job, question := fs.Arg(0), fs.Arg(1)
	if err := checkTokens([]string{job, question}, "job", "question"); err != nil {
		return c.usageError("await", "%v", err)
	}
	nc, _, err := c.connect(*url)
	if err != nil {
		return c.fail("%v", err)
	}
	defer nc.Close()
	v, err := c.findQuestion(nc, *tenant, job, question)
	if err != nil {
		return c.fail("%v", err)
	}
	client, err := agent.New(nc)
	if err != nil {
		return c.fail("%v", err)
	}
	fmt.Fprintf(c.stderr, "waiting for %s/%s/%s...\n", v.Tenant, v.JobID, v.QuestionID)
	out, err := client.Await(ctx, v.Tenant, v.JobID, v.QuestionID)
	if err != nil {
		return c.waitFailed(ctx, err, v.Tenant, v.JobID, v.QuestionID)
	}
	return c.outcome(out)
}

// findQuestion finds a question as the agent that asked it does (the
// agent package's view, which needs no role); tenant may be empty.
func (c *cli) findQuestion(nc *nats.Conn, tenant, job, question string) (*bridge.QuestionView, error) {
	var reply bridge.ShowReply
	if err := c.request(nc, bridge.APIShow, bridge.ShowRequest{Tenant: tenant, JobID: job, QuestionID: question}, &reply); err != nil {
		return nil, err
	}
	if reply.Error != "" {
		return nil, fmt.Errorf("%s", reply.Error)
	}
	return reply.Question, nil
}

// waitFailed reports a wait for an outcome that ended without one. Asked
// to stop (Ctrl-C), it says the question still waits and how to wait for
// it again, rather than "context canceled".
func (c *cli) waitFailed(ctx context.Context, err error, tenant, job, question string) int {
	if ctx.Err() == nil {
		return c.fail("%v", err)
	}
	fmt.Fprintf(c.stderr, "\naskbridge: stopped waiting; question %s still waits for an answer until its deadline.\n", question)
	fmt.Fprintf(c.stderr, "Wait for it again with: askbridge await --tenant %s %s %s\n", tenant, job, question)
	return exitError
}

// outcome prints an outcome's text and returns ask's exit code for it.
func (c *cli) outcome(out *bridge.Resume) int {
	fmt.Fprintln(c.stdout, printable(out.Text, true))
	switch out.Outcome {
	case bridge.OutcomeAnswered:
		return exitOK
	case bridge.OutcomeDeclined:
		return exitDeclined
	case bridge.OutcomeTimedOut:
		return exitTimedOut
	case bridge.OutcomeFailed:
		if out.Code == bridge.CodeQuestionTimedOut {
			// --on-timeout fail: the job fails, but what happened is still
			// that nobody answered in time, not an error of askbridge's.
			return exitTimedOut
		}
	}
	return exitError
}
