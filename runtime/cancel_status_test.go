package runtime_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// An invalid cancel status ends nothing and tells the agent why; a valid
// implicitly answered cancel ends the question and the trace shows the
// person's words.
func TestCancelStatusRefusedThenApplied(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	ch := ask(t, env, choiceQuestion("job-st"))
	nc := env.Conn(t)
	inbox := nc.NewInbox()
	told, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	cancel := func(msgID string, c bridge.Cancel) bridge.CancelDecision {
		t.Helper()
		data, _ := json.Marshal(c)
		msg := &nats.Msg{Subject: bridge.CancelSubject("acme", "job-st"), Data: data, Header: nats.Header{bridge.HeaderDecidedTo: []string{inbox}}}
		if _, err := env.NATS.JS.PublishMsg(context.Background(), msg, jetstream.WithMsgID(msgID)); err != nil {
			t.Fatal(err)
		}
		m, err := told.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("not told: %v", err)
		}
		var d bridge.CancelDecision
		if err := json.Unmarshal(m.Data, &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := cancel("c1", bridge.Cancel{Tenant: "acme", JobID: "job-st", Status: bridge.CancelImplicitlyAnswered, Evidence: "red"})
	if d.Refused != "question_id: name the question the person answered: evidence answers one question, not every question of the job" || d.Ended != 0 {
		t.Fatalf("invalid cancel decided %+v", d)
	}
	if st := show(t, env, "slack:UADMIN", "job-st", "q-1").Question.State; st != bridge.StatePending {
		t.Fatalf("an invalid cancel ended the question: %s", st)
	}
	d = cancel("c2", bridge.Cancel{Tenant: "acme", JobID: "job-st", QuestionID: "q-1", Status: bridge.CancelImplicitlyAnswered, Evidence: "red, as on the cover"})
	if d.Refused != "" || d.Ended != 1 {
		t.Fatalf("cancel decided %+v", d)
	}
	if out := outcome(t, ch); out.Outcome != bridge.OutcomeCanceled || out.Status != bridge.CancelImplicitlyAnswered ||
		out.Text != "Answered in conversation: “red, as on the cover”." {
		t.Fatalf("outcome = %+v", out)
	}
	entries := trace(t, env, bridge.TraceRequest{Tenant: "acme", JobID: "job-st"}).Entries
	last := entries[len(entries)-1]
	if last.Kind != bridge.TraceCancelled || last.Text != "Answered in conversation: “red, as on the cover”." {
		t.Fatalf("trace ends %+v", last)
	}
}
