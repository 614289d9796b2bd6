package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/principal"
)

func (c *cli) answer(ctx context.Context, args []string) int {
	fs, url := c.flags("answer")
	tenant := fs.String("tenant", "", "tenant (default: found from the job and question)")
	// Flags may follow the answer, as they may follow decline's ids; only
	// these are taken, so an answer such as "-5" stays the answer.
	if code, ok := c.parse(fs, args, true); !ok {
		return code
	}
	ref, words, err := questionArgs(fs.Args(), "the answer", 1, -1)
	if err != nil {
		return c.usageError("answer", "%v", err)
	}
	text := strings.Join(words, " ")
	var raw json.RawMessage
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
		raw = json.RawMessage(t)
	} else {
		raw, _ = json.Marshal(text)
	}
	a := bridge.AnswerAttempt{Action: bridge.ActionAnswer, Answer: raw}
	return c.propose(ctx, *url, *tenant, ref, a)
}

func (c *cli) decline(ctx context.Context, args []string) int {
	fs, url := c.flags("decline")
	tenant := fs.String("tenant", "", "tenant (default: found from the job and question)")
	comment := fs.String("comment", "", "why you decline")
	if code, ok := c.parse(fs, args, false); !ok {
		return code
	}
	ref, _, err := questionArgs(fs.Args(), "", 0, 0)
	if err != nil {
		return c.usageError("decline", "%v", err)
	}
	return c.propose(ctx, *url, *tenant, ref, bridge.AnswerAttempt{Action: bridge.ActionDecline, Comment: *comment})
}

// propose publishes an attempt as the CLI user and waits for the runtime's
// decision on it.
func (c *cli) propose(ctx context.Context, url, tenant string, ref questionRef, a bridge.AnswerAttempt) int {
	nc, js, err := c.connect(url)
	if err != nil {
		return c.fail("%v", err)
	}
	defer nc.Close()
	v, _, err := c.lookup(nc, tenant, ref.Job, ref.Question)
	if err != nil {
		return c.fail("%v", err)
	}
	var text string
	if a.Action == bridge.ActionAnswer && v.Question != nil && v.Question.IsApproval() && json.Unmarshal(a.Answer, &text) == nil {
		// An approval takes "approve" or "deny [reason]".
		if action, reason, ok := bridge.ApprovalAction(text); ok {
			a.Action, a.Answer, a.Comment = action, nil, reason
		}
	}
	a = engine.NewAttempt(bridge.PlatformCLI, newID("cli-"),
		engine.Question{Tenant: v.Tenant, JobID: v.JobID, QuestionID: v.QuestionID, TaskVersion: v.TaskVersion},
		engine.Person{Identity: c.identity}, a.Action, a.Answer, a.Comment, time.Now(), nil)

	decided, stop, err := c.watchDecision(nc, a)
	if err != nil {
		return c.fail("%v", err)
	}
	defer stop()
	inbox := nc.NewInbox()
	direct, err := nc.Subscribe(inbox, func(m *nats.Msg) {
		ev := bridge.Event{Type: m.Header.Get(bridge.HeaderDecision), Text: m.Header.Get(bridge.HeaderDecisionText), AttemptID: string(m.Data)}
		if ev.Type != "" && ev.AttemptID == a.AttemptID {
			select {
			case decided <- ev:
			default:
			}
		}
	})
	if err != nil {
		return c.fail("%v", err)
	}
	defer direct.Unsubscribe()
	if err := nc.Flush(); err != nil {
		return c.fail("%v", err)
	}
	data, err := json.Marshal(a)
	if err != nil {
		return c.fail("%v", err)
	}
	// The runtime tells this inbox what became of the attempt.
	msg := &nats.Msg{Subject: bridge.AnswerSubject(a.Tenant, a.JobID), Data: data, Header: nats.Header{bridge.HeaderDecidedTo: []string{inbox}}}
	if _, err := js.PublishMsg(ctx, msg, jetstream.WithMsgID("attempt-"+a.AttemptID)); err != nil {
		return c.fail("%v", err)
	}
	select {
	case ev := <-decided:
		if ev.Type == bridge.EventRefused {
			return c.fail("refused: %s", ev.Text)
		}
		// "answered", "declined", "approval_recorded" as words: "Approval recorded".
		what := strings.ReplaceAll(ev.Type, "_", " ")
		fmt.Fprintf(c.stdout, "%s: %s\n", strings.ToUpper(what[:1])+what[1:], printable(ev.Text, true))
		return exitOK
	case <-time.After(decisionWait):
		return c.fail("sent, but no decision arrived within %v; check with 'askbridge show --tenant %s %s %s'", decisionWait, a.Tenant, a.JobID, a.QuestionID)
	case <-ctx.Done():
		return c.fail("interrupted; the attempt was sent")
	}
}

// watchDecision watches the job's events for the attempt's decision,
// unless the CLI acts with a person's credential, which may not read them
// (the runtime tells the attempt's own inbox too).
func (c *cli) watchDecision(nc *nats.Conn, a bridge.AnswerAttempt) (chan bridge.Event, func(), error) {
	decided := make(chan bridge.Event, 1)
	if c.credKind == principal.KindPerson {
		return decided, func() {}, nil
	}
	sub, err := nc.Subscribe(bridge.EventSubject(a.Tenant, a.JobID), func(m *nats.Msg) {
		var ev bridge.Event
		if json.Unmarshal(m.Data, &ev) == nil && ev.AttemptID == a.AttemptID {
			select {
			case decided <- ev:
			default:
			}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return decided, func() { _ = sub.Unsubscribe() }, nil
}

func (c *cli) cancel(ctx context.Context, args []string) int {
	fs, url := c.flags("cancel")
	tenant := fs.String("tenant", "", "tenant (default: found from the job, as answer finds it)")
	reason := fs.String("reason", "", "why (required with --status retired)")
	status := fs.String("status", "", "retired or implicitly_answered (docs/contract.md, cancel)")
	evidence := fs.String("evidence", "", "the person's words that answered the question (with --status implicitly_answered)")
	if code, ok := c.parse(fs, args, false); !ok {
		return code
	}
	ref, err := jobArgs(fs.Args())
	if err == nil && *tenant != "" {
		err = bridge.CheckToken("tenant", *tenant)
	}
	if err != nil {
		return c.usageError("cancel", "%v", err)
	}
	cancel := bridge.Cancel{Tenant: *tenant, JobID: ref.Job, QuestionID: ref.Question, Reason: *reason,
		Status: *status, Evidence: *evidence, By: c.identity}
	if err := bridge.ValidateCancel(&cancel); err != nil {
		return c.fail("%v", err)
	}
	nc, js, err := c.connect(*url)
	if err != nil {
		return c.fail("%v", err)
	}
	defer nc.Close()
	if cancel.Tenant == "" {
		if cancel.Tenant, err = c.cancelTenant(nc, cancel.JobID, cancel.QuestionID); err != nil {
			return c.fail("%v", err)
		}
	}
	return c.sendCancel(ctx, nc, js, cancel)
}

// cancelTenant finds the tenant of the job (and question) a cancel names
// without one, among those the CLI user may see, as answer and trace do.
func (c *cli) cancelTenant(nc *nats.Conn, job, question string) (string, error) {
	if question == "" {
		return c.jobTenant(nc, c.identity, job)
	}
	v, _, err := c.lookup(nc, "", job, question)
	if err != nil {
		return "", err
	}
	return v.Tenant, nil
}

// sendCancel publishes a cancel and waits for the runtime's decision.
func (c *cli) sendCancel(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, cancel bridge.Cancel) int {
	// The runtime says on this inbox, once committed, what the cancel did.
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return c.fail("%v", err)
	}
	defer sub.Unsubscribe()
	data, err := json.Marshal(cancel)
	if err != nil {
		return c.fail("%v", err)
	}
	msg := &nats.Msg{Subject: bridge.CancelSubject(cancel.Tenant, cancel.JobID), Data: data, Header: nats.Header{}}
	msg.Header.Set(bridge.HeaderDecidedTo, inbox)
	if _, err := js.PublishMsg(ctx, msg, jetstream.WithMsgID(newID("cancel-"))); err != nil {
		return c.fail("%v", err)
	}
	wctx, stop := context.WithTimeout(ctx, decisionWait)
	defer stop()
	reply, err := sub.NextMsgWithContext(wctx)
	if err != nil {
		if ctx.Err() != nil {
			return c.fail("interrupted; the cancel was sent")
		}
		return c.fail("sent, but no decision arrived within %v; check with 'askbridge list --tenant %s --job %s'", decisionWait, cancel.Tenant, cancel.JobID)
	}
	var d bridge.CancelDecision
	if err := json.Unmarshal(reply.Data, &d); err != nil {
		return c.fail("sent, but the runtime's reply was not understood; check with 'askbridge list --tenant %s --job %s'", cancel.Tenant, cancel.JobID)
	}
	switch {
	case d.Refused != "":
		return c.fail("refused: %s", d.Refused)
	case d.Ended == 0:
		fmt.Fprintln(c.stdout, "Cancelled: no question was waiting.")
	case d.Ended == 1:
		fmt.Fprintln(c.stdout, "Cancelled: 1 question ended.")
	default:
		fmt.Fprintf(c.stdout, "Cancelled: %d questions ended.\n", d.Ended)
	}
	return exitOK
}
