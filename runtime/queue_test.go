package runtime_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

func queueOf(t *testing.T, env *testenv.Env, as, job string) bridge.QueueReply {
	t.Helper()
	data, _ := json.Marshal(bridge.QueueRequest{Tenant: "acme", JobID: job, As: as})
	msg, err := env.NATS.Conn.Request(bridge.APIQueue, data, 5*time.Second)
	if err != nil {
		t.Fatalf("queue: %v", err)
	}
	var reply bridge.QueueReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		t.Fatalf("queue reply %s: %v", msg.Data, err)
	}
	return reply
}

// queueLine is a queue as "id:priority:staleness" items.
func queueLine(r bridge.QueueReply) string {
	var out []string
	for _, it := range r.Questions {
		out = append(out, fmt.Sprintf("%s:%s:%d", it.QuestionID, it.Priority, it.Staleness))
	}
	return strings.Join(out, " ")
}

// Three pending questions of mixed priority on one job: the queue orders
// them, one ladder round sends one nudge naming the blocking one with the
// others, and once it is answered the high one tops the next round.
func TestQueueAndOneNudgePerJob(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock})
	job := "job-queue"
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme."+job)
	for _, c := range []struct{ id, priority string }{{"q-low", bridge.PriorityLow}, {"q-high", bridge.PriorityHigh}, {"q-block", ""}} {
		q := ladderQuestion(job, "")
		q.QuestionID, q.Priority, q.Timeout = c.id, c.priority, "1h"
		q.BlockedTools = []string{"send_" + c.id[2:]}
		ask(t, env, q)
	}
	if got := queueLine(queueOf(t, env, "slack:UANA", job)); got != "q-block:blocking:0 q-high:high:0 q-low:low:0" {
		t.Fatalf("queue = %s", got)
	}
	if it := queueOf(t, env, "slack:UANA", job).Questions[0]; !slices.Equal(it.BlockedTools, []string{"send_block"}) || it.AskedAt.IsZero() {
		t.Fatalf("top of the queue = %+v", it)
	}

	clock.Advance(15*time.Minute + time.Second) // the answerers' step of all three
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := events.EventTypes(); got != "asked,asked,asked,reminded" {
			return fmt.Errorf("events = %s", got)
		}
		return nil
	})
	ev := events.Events()[3]
	if ev.QuestionID != "q-block" || ev.Nudge == nil || !ev.Nudge.Resurface || ev.Nudge.More() != 2 {
		t.Fatalf("nudge = %s %+v", ev.QuestionID, ev.Nudge)
	}
	if !slices.Equal(ev.Targets, []string{"slack:UANA"}) || len(ev.Nudge.For("slack:UANA")) != 3 {
		t.Fatalf("targets %v; for slack:UANA %d questions", ev.Targets, len(ev.Nudge.For("slack:UANA")))
	}
	if got := queueLine(queueOf(t, env, "slack:UANA", job)); got != "q-block:blocking:1 q-high:high:1 q-low:low:1" {
		t.Fatalf("queue after a round = %s", got)
	}

	attempt(t, env, bridge.AnswerAttempt{JobID: job, QuestionID: "q-block", TaskVersion: 1, AttemptID: "a-block",
		Answer: json.RawMessage(`"red"`), By: "slack:UANA"})
	waitState(t, env, &bridge.Question{JobID: job, QuestionID: "q-block"}, bridge.StateAnswered)
	if got := queueLine(queueOf(t, env, "slack:UANA", job)); got != "q-high:high:1 q-low:low:1" {
		t.Fatalf("queue after the answer = %s", got)
	}

	clock.Advance(15 * time.Minute) // the owner's step
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := events.EventTypes(); got != "asked,asked,asked,reminded,answered,escalated" {
			return fmt.Errorf("events = %s", got)
		}
		return nil
	})
	ev = events.Events()[5]
	if ev.QuestionID != "q-high" || !ev.Nudge.Resurface || ev.Nudge.More() != 1 || !slices.Equal(ev.Targets, []string{"slack:UJOBOWNER"}) {
		t.Fatalf("second nudge = %s %+v targets %v", ev.QuestionID, ev.Nudge, ev.Targets)
	}
	if got := queueLine(queueOf(t, env, "slack:UANA", job)); got != "q-high:high:2 q-low:low:2" {
		t.Fatalf("queue after two rounds = %s", got)
	}
}

// The queue request is checked, and shows an identity only what list would.
func TestQueueRequests(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	q := choiceQuestion("job-qr")
	q.Answerers = []string{"slack:UANA"}
	q.Visibility = bridge.VisibilityRestricted
	q.BlockedTools = []string{"send_report"}
	ask(t, env, q)
	for _, c := range []struct{ body, want string }{
		{`{"tenant":"acme"}`, "queue: job_id: is required"},
		{`{"tenant":"ac me","job_id":"job-qr"}`, `queue: tenant: "ac me" must be`},
		{`{"tenant":"acme","job_id":"job.1"}`, `queue: job_id: "job.1" must be 1 to 64 letters, digits, '-' or '_'`},
		{`{"tenant":"acme","job_id":"job-qr","as":"bob"}`, `as: `},
	} {
		msg, err := env.NATS.Conn.Request(bridge.APIQueue, []byte(c.body), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var reply bridge.QueueReply
		if err := json.Unmarshal(msg.Data, &reply); err != nil || !strings.HasPrefix(reply.Error, c.want) || reply.Questions != nil {
			t.Errorf("%s: %s, want error %q", c.body, msg.Data, c.want)
		}
	}
	if it := queueOf(t, env, "slack:UANA", "job-qr").Questions; len(it) != 1 || it[0].Hidden || !it[0].Restricted || it[0].BlockedTools[0] != "send_report" {
		t.Fatalf("answerer's queue = %+v", it)
	}
	// Without a tenant, the one tenant where the asker sees the job.
	data, _ := json.Marshal(bridge.QueueRequest{JobID: "job-qr", As: "slack:UANA"})
	if msg, err := env.NATS.Conn.Request(bridge.APIQueue, data, 5*time.Second); err != nil || !strings.Contains(string(msg.Data), `"question_id":"q-1"`) {
		t.Fatalf("queue without a tenant: %s, %v", msg.Data, err)
	}
	if it := queueOf(t, env, "slack:UOP", "job-qr").Questions; len(it) != 1 || !it[0].Hidden || len(it[0].BlockedTools) != 0 {
		t.Fatalf("operator's queue = %+v", it)
	}
}

// Questions asked minutes apart are reminded in one round: the round takes
// along the same step of the job's other questions when it is due soon,
// but never reminds of a question asked a moment ago.
func TestRoundTakesAlongStepsDueSoon(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock})
	job := "job-along"
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme."+job)
	askAt := func(id string) {
		q := ladderQuestion(job, "")
		q.QuestionID, q.Timeout = id, "4h" // the answerers' step at 1h
		ask(t, env, q)
	}
	askAt("q-1")
	clock.Advance(2 * time.Minute)
	askAt("q-2") // its step 2 minutes after q-1's
	clock.Advance(50 * time.Minute)
	askAt("q-3") // its step 50 minutes after q-1's
	clock.Advance(8*time.Minute + time.Second)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := events.EventTypes(); got != "asked,asked,asked,reminded" {
			return fmt.Errorf("events = %s", got)
		}
		return nil
	})
	ev := events.Events()[3]
	var reminded []string
	for _, nq := range ev.Nudge.Questions {
		if len(nq.Targets) > 0 {
			reminded = append(reminded, nq.QuestionID)
		}
	}
	if strings.Join(reminded, ",") != "q-1,q-2" || ev.Nudge.More() != 2 {
		t.Fatalf("round reminded of %v (nudge of %d)", reminded, len(ev.Nudge.Questions))
	}
	if got := queueLine(queueOf(t, env, "slack:UANA", job)); got != "q-1:blocking:1 q-2:blocking:1 q-3:blocking:0" {
		t.Fatalf("queue = %s", got)
	}
	// Past q-2's own step time, to q-3's: one more round, for q-3 alone
	// (q-2's step went with the first).
	clock.Advance(52 * time.Minute)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := events.EventTypes(); got != "asked,asked,asked,reminded,reminded" {
			return fmt.Errorf("events = %s", got)
		}
		return nil
	})
	reminded = nil
	for _, nq := range events.Events()[4].Nudge.Questions {
		if len(nq.Targets) > 0 {
			reminded = append(reminded, nq.QuestionID)
		}
	}
	if strings.Join(reminded, ",") != "q-3" {
		t.Fatalf("second round reminded of %v", reminded)
	}
}
