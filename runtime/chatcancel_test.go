package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

func TestCancelFromChatNeedsAdmin(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-cx")
	q := choiceQuestion("job-cx")
	ch := ask(t, env, q)
	pub := func(id string, c bridge.Cancel) {
		if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.CancelSubject("acme", "job-cx"), id, c); err != nil {
			t.Fatal(err)
		}
	}
	pub("c1", bridge.Cancel{Tenant: "acme", JobID: "job-cx", QuestionID: "q-1", By: "slack:UOP", ReplyTo: map[string]string{"channel": "D1"}})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, ev := range events.Events() {
			if ev.Type == bridge.EventRefused && ev.To == "slack:UOP" && ev.ReplyTo["channel"] == "D1" &&
				ev.Text == "You can't cancel questions: that needs the admin or owner role." {
				return nil
			}
		}
		return fmt.Errorf("events = %s", events.EventTypes())
	})
	waitState(t, env, q, bridge.StatePending)
	pub("c2", bridge.Cancel{Tenant: "acme", JobID: "job-cx", QuestionID: "q-1", By: "slack:UADMIN", Reason: "the customer called back"})
	out := outcome(t, ch)
	if out.Outcome != bridge.OutcomeCanceled || out.Text != "The question was cancelled: the customer called back." {
		t.Fatalf("outcome = %+v", out)
	}
}

// TestRefusedCancelsAfterTheCancelsStreamIsMadeAnewAreTwoEvents checks
// that a person's refused cancel after the cancels stream was deleted and
// made anew (its sequence numbers start again) is a new refused event,
// not one with the event id of an earlier refusal, which the chat adapters
// would take as already told.
func TestRefusedCancelsAfterTheCancelsStreamIsMadeAnewAreTwoEvents(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	refuse := func(env *testenv.Env, id string) bridge.Event {
		t.Helper()
		events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-cr")
		if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.CancelSubject("acme", "job-cr"), id,
			bridge.Cancel{Tenant: "acme", JobID: "job-cr", QuestionID: "q-1", By: "slack:UOP"}); err != nil {
			t.Fatal(err)
		}
		var ev bridge.Event
		testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
			for _, e := range events.Events() {
				if e.Type == bridge.EventRefused && e.To == "slack:UOP" {
					ev = e
					return nil
				}
			}
			return fmt.Errorf("events = %s", events.EventTypes())
		})
		return ev
	}
	first := refuse(env, "cr-1")
	if err := env.NATS.JS.DeleteStream(context.Background(), bridge.StreamCancels); err != nil {
		t.Fatal(err)
	}
	if err := env.NATS.JS.DeleteStream(context.Background(), bridge.StreamEvents); err != nil {
		t.Fatal(err)
	}
	dir := env.Dir
	env.Stop()
	env = testenv.Start(t, testenv.Options{Dir: dir, Roles: roles})
	second := refuse(env, "cr-2")
	if first.EventID == second.EventID {
		t.Fatalf("two refused cancels share the event id %s", first.EventID)
	}
}

// A person's cancel that ends nothing, because an answer (or another
// cancel) ended the question first, is told so: a refused event to them,
// with their reply_to, saying what ended it. Nothing else changes.
func TestCancelFromChatThatLostTheRaceIsTold(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-cl")
	q := choiceQuestion("job-cl")
	ch := ask(t, env, q)
	if err := env.Attempt(context.Background(), bridge.AnswerAttempt{Tenant: "acme", JobID: "job-cl", QuestionID: "q-1",
		AttemptID: "a-1", Answer: json.RawMessage(`"red"`), By: "slack:UOP", ByName: "op"}); err != nil {
		t.Fatal(err)
	}
	if out := outcome(t, ch); out.Outcome != bridge.OutcomeAnswered {
		t.Fatalf("outcome = %+v", out)
	}
	pub := func(id string, c bridge.Cancel) {
		if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.CancelSubject("acme", "job-cl"), id, c); err != nil {
			t.Fatal(err)
		}
	}
	pub("c1", bridge.Cancel{Tenant: "acme", JobID: "job-cl", QuestionID: "q-1", By: "slack:UADMIN", ReplyTo: map[string]string{"channel": "D1"}})
	pub("c2", bridge.Cancel{Tenant: "acme", JobID: "job-cl", By: "slack:UADMIN", ReplyTo: map[string]string{"channel": "D2"}})
	answered := regexp.MustCompile(`^Nothing was cancelled: this question was already answered by slack:UOP \(op\) at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\.$`)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		var one, job bool
		for _, ev := range events.Events() {
			if ev.Type != bridge.EventRefused || ev.To != "slack:UADMIN" || ev.Reason != bridge.RefusedNotPending {
				continue
			}
			one = one || (ev.ReplyTo["channel"] == "D1" && ev.QuestionID == "q-1" && answered.MatchString(ev.Text))
			job = job || (ev.ReplyTo["channel"] == "D2" && ev.QuestionID == "" && ev.Text == "Nothing was cancelled: job job-cl has no question waiting.")
		}
		if !one || !job {
			return fmt.Errorf("events = %s", events.EventTypes())
		}
		return nil
	})
	// An agent's cancel that ends nothing is not a person's: no event.
	pub("c3", bridge.Cancel{Tenant: "acme", JobID: "job-cl", QuestionID: "q-1"})
	q2 := choiceQuestion("job-cl")
	q2.QuestionID = "q-2"
	ch2 := ask(t, env, q2)
	pub("c4", bridge.Cancel{Tenant: "acme", JobID: "job-cl", QuestionID: "q-2"})
	if out := outcome(t, ch2); out.Outcome != bridge.OutcomeCanceled {
		t.Fatalf("outcome = %+v", out)
	}
	// The resume and the event are relayed separately: wait for the event,
	// then check nothing else came between.
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := events.EventTypes(); !strings.HasSuffix(got, "cancelled") {
			return fmt.Errorf("events = %s; want the cancelled event last", got)
		}
		return nil
	})
	if got := events.EventTypes(); got != "asked,answered,refused,refused,asked,cancelled" {
		t.Fatalf("events = %s", got)
	}
}
