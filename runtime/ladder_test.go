package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

func ladderQuestion(job, onTimeout string) *bridge.Question {
	q := choiceQuestion(job)
	q.Timeout = "4s"
	q.OnTimeout = onTimeout
	q.Answerers = []string{"slack:UANA"}
	q.Owner = "slack:UJOBOWNER"
	return q
}

func TestLadderThenTimeout(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		onTimeout, outcome, code string
	}{
		{"", bridge.OutcomeTimedOut, ""},
		{bridge.OnTimeoutFail, bridge.OutcomeFailed, bridge.CodeQuestionTimedOut},
	} {
		t.Run("on_timeout="+c.onTimeout, func(t *testing.T) {
			t.Parallel()
			clock := testenv.NewClock()
			env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock})
			job := "job-l" + c.onTimeout
			events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme."+job)
			ch := ask(t, env, ladderQuestion(job, c.onTimeout))
			out := outcomeAdvancing(t, clock, ch)
			if out.Outcome != c.outcome || out.Text != "Nobody answered within 0:00:04." || out.Code != c.code {
				t.Fatalf("outcome = %+v", out)
			}
			if c.code != "" && (out.Failure == nil || out.Failure.Code != c.code) {
				t.Fatalf("failure = %+v", out.Failure)
			}
			testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
				if got := events.EventTypes(); got != "asked,reminded,escalated,escalated,timed_out" {
					return fmt.Errorf("events = %s", got)
				}
				return nil
			})
			evs := events.Events()
			wantTargets := [][]string{{"slack:UANA"}, {"slack:UJOBOWNER"}, {"slack:UADMIN"}}
			wantSteps := []string{bridge.TargetAnswerers, bridge.TargetOwner, bridge.TargetAdmins}
			for i := range 3 {
				ev := evs[i+1]
				if ev.Step != wantSteps[i] || !slices.Equal(ev.Targets, wantTargets[i]) || ev.Question == nil {
					t.Errorf("step %d = %s %v (question %v)", i, ev.Step, ev.Targets, ev.Question != nil)
				}
				if i > 0 && ev.At.Before(evs[i].At) {
					t.Errorf("step %d fired before step %d", i, i-1)
				}
			}
			// Every event gives the same asked_at and deadline.
			for _, ev := range evs[1:] {
				if !ev.AskedAt.Equal(evs[0].AskedAt) || !ev.Deadline.Equal(evs[0].Deadline) {
					t.Errorf("%s: asked_at %v, deadline %v; the asked event said %v, %v", ev.Type, ev.AskedAt, ev.Deadline, evs[0].AskedAt, evs[0].Deadline)
				}
			}
		})
	}
}

func TestLadderOff(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-off")
	q := ladderQuestion("job-off", "")
	q.Timeout = "2s"
	q.Escalation = &bridge.Escalation{Off: true}
	q.EscalationReason = "the owner is on call and watching"
	outcomeAdvancing(t, clock, ask(t, env, q))
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := events.EventTypes(); got != "asked,timed_out" {
			return fmt.Errorf("events = %s", got)
		}
		return nil
	})
}

func TestRestartKeepsWaitingQuestion(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	q := choiceQuestion("job-rs")
	ask(t, env, q)
	dir := env.Dir
	env.Stop()

	env = testenv.Start(t, testenv.Options{Dir: dir, Roles: roles})
	waitState(t, env, q, bridge.StatePending)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-rs", QuestionID: "q-1", AttemptID: "rs1", Answer: json.RawMessage(`"red"`), By: "slack:UOP"})
	out, err := env.Agent.Await(ctx, "acme", "job-rs", "q-1")
	if err != nil || out.Text != "The answer: red" {
		t.Fatalf("outcome = %+v, %v", out, err)
	}
}

func TestLadderStepDueWhileDownFiresOnce(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	// The stream keeps the events for the recorders after each restart.
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock, KeepEvents: true})
	q := ladderQuestion("job-down", "")
	q.Timeout = "40s" // reminder at 10s, owner at 20s
	ask(t, env, q)
	asked := show(t, env, "slack:UADMIN", q.JobID, q.QuestionID).Question.AskedAt
	dir := env.Dir
	env.Stop()

	// The process is down while the first step falls due.
	clock.Advance(asked.Add(10*time.Second + 500*time.Millisecond).Sub(clock.Now()))

	env = testenv.Start(t, testenv.Options{Dir: dir, Roles: roles, Clock: clock})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-down")
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := events.EventTypes(); got != "asked,reminded" {
			return fmt.Errorf("events = %s", got)
		}
		return nil
	})
	env.Stop()

	// A second restart before the next step fires nothing again.
	env = testenv.Start(t, testenv.Options{Dir: dir, Roles: roles, Clock: clock})
	events = env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-down")
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-down", QuestionID: "q-1", AttemptID: "marker", Answer: json.RawMessage(`"red"`), By: "slack:USTRANGER"})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := events.EventTypes(); got != "asked,reminded,refused" {
			return fmt.Errorf("events = %s", got)
		}
		return nil
	})
	due, err := env.Store.DueSteps(context.Background(), time.Now().Add(time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, d := range due {
		targets = append(targets, d.Target)
	}
	if strings.Join(targets, ",") != "owner,admins,timeout" {
		t.Fatalf("steps left = %v", targets)
	}
}

// TestAnswerGivenInTimeBeatsTheTimeoutAfterARestart checks an answer
// published before the deadline while the runtime was down (behind a
// backlog of other attempts) is decided before the ladder times the
// question out on restart: it answers the question, and nobody is told
// the question timed out.
func TestAnswerGivenInTimeBeatsTheTimeoutAfterARestart(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	// The stream keeps the asked event for the recorder after the restart.
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock, KeepEvents: true})
	q := choiceQuestion("job-late")
	// An hour: the backlog is published well inside it however busy the
	// machine (the runtime compares the deadline with NATS's real times);
	// the injected clock then jumps past it.
	q.Timeout, q.Escalation, q.EscalationReason = "1h", &bridge.Escalation{Off: true}, "the test watches the timeout"
	ask(t, env, q)
	waitState(t, env, q, bridge.StatePending)
	deadline := show(t, env, "slack:UADMIN", q.JobID, q.QuestionID).Question.Deadline
	dir := env.Dir
	env.Stop()

	// Only NATS: the attempts wait in the stream for the runtime. Without
	// the hold (awaitAnswers, answerWaiting) the ladder fires before the
	// runtime decides a backlog of 200 attempts: the test then sees
	// timed_out. A larger backlog proves no more and, under -race on a
	// loaded machine, takes the runtime longer than waitState waits.
	ctx := context.Background()
	n, err := bridge.ConnectNATS(ctx, bridge.NATSOptions{Listen: "127.0.0.1:0", StoreDir: filepath.Join(dir, "nats")})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		a := bridge.AnswerAttempt{Tenant: "acme", JobID: fmt.Sprintf("job-other-%d", i), QuestionID: "q-1", AttemptID: fmt.Sprintf("other-%d", i),
			Answer: json.RawMessage(`"red"`), By: "slack:UOP"}
		if err := bridge.Publish(ctx, n.JS, bridge.AnswerSubject(a.Tenant, a.JobID), "attempt-"+a.AttemptID, a); err != nil {
			t.Fatal(err)
		}
	}
	in := bridge.AnswerAttempt{Tenant: "acme", JobID: "job-late", QuestionID: "q-1", TaskVersion: 1, AttemptID: "in-time",
		Answer: json.RawMessage(`"blue"`), By: "slack:UOP"}
	if err := bridge.Publish(ctx, n.JS, bridge.AnswerSubject("acme", "job-late"), "attempt-in-time", in); err != nil {
		t.Fatal(err)
	}
	if time.Now().After(deadline) {
		t.Skip("the machine took longer than the timeout to publish the backlog")
	}
	n.Close()
	// The runtime comes back after the deadline.
	clock.Advance(deadline.Sub(clock.Now()) + 500*time.Millisecond)

	env = testenv.Start(t, testenv.Options{Dir: dir, Roles: roles, Clock: clock})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-late")
	// The runtime decides the 200 attempts before it: under -race on a
	// loaded machine that takes longer than waitState's ten seconds. The
	// clock stands still meanwhile, past the deadline: the ladder waits
	// for the backlog whatever it takes.
	waitStateFor(t, env, q, bridge.StateAnswered, 30*time.Second)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if types := events.EventTypes(); types != "asked,answered" {
			return fmt.Errorf("events %s, want asked,answered", types)
		}
		return nil
	})
}

// TestEscalationThatNamesNothingIsRefused publishes the escalations
// contract.md does not list: each is refused back to the agent naming it,
// never read as the default ladder. The default asked for in words is
// stored as if absent, and climbs the default ladder.
func TestEscalationThatNamesNothingIsRefused(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	publish := func(job, escalation string) {
		t.Helper()
		body := fmt.Sprintf(`{"tenant":"acme","job_id":%q,"question_id":"q-1","question":"Which colour?","choices":["red","blue"],"timeout":"1h","escalation":%s}`, job, escalation)
		if _, err := env.NATS.JS.Publish(context.Background(), bridge.QuestionSubject("acme", job), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ job, escalation, want string }{
		{"job-esc-list", `[]`, `escalation: names no steps`},
		{"job-esc-key", `{"of":true}`, `escalation: "of" is not a setting of the ladder (off, steps)`},
		{"job-esc-step", `[{"at":0.5,"to":"owner","via":"dm"}]`, `escalation[0]: "via" is not a setting of a step (at, to)`},
	} {
		t.Run(c.job, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			publish(c.job, c.escalation)
			out, err := env.Agent.Await(ctx, "acme", c.job, "q-1")
			if err != nil {
				t.Fatal(err)
			}
			if out.Outcome != bridge.OutcomeInvalid || !strings.HasPrefix(out.Text, "The question was refused: "+c.want) {
				t.Fatalf("outcome = %s %q; want invalid %q", out.Outcome, out.Text, c.want)
			}
		})
	}

	// The default asked for in words, or by {} (reshaping nothing).
	for _, c := range []struct{ job, escalation string }{{"job-esc-on", `"on"`}, {"job-esc-obj", `{}`}} {
		events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme."+c.job)
		publish(c.job, c.escalation)
		var asked bridge.Event
		testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
			evs := events.Events()
			if len(evs) == 0 {
				return errors.New("no asked event")
			}
			asked = evs[0]
			return nil
		})
		if asked.Type != bridge.EventAsked || asked.Question == nil || asked.Question.Escalation != nil {
			t.Fatalf("%s: asked event = %s, question %+v; want the default ladder stored as no escalation", c.escalation, asked.Type, asked.Question)
		}
	}
	due, err := env.Store.DueSteps(context.Background(), time.Now().Add(2*time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, d := range due {
		targets = append(targets, d.Target)
	}
	slices.Sort(targets)
	if strings.Join(targets, ",") != "admins,admins,answerers,answerers,owner,owner,timeout,timeout" {
		t.Fatalf("steps = %v, want the default ladder for each", targets)
	}
}

// TestLateAnswerToAQuestionThatFailedOnTimeout checks that a person
// answering a question that ended on its timeout with on_timeout: fail
// is told it timed out, as for any other timeout, not that it "failed".
func TestLateAnswerToAQuestionThatFailedOnTimeout(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-late")
	for _, onTimeout := range []string{"", bridge.OnTimeoutFail} {
		q := ladderQuestion("job-late", onTimeout)
		q.QuestionID, q.Timeout = "q-late"+onTimeout, "1s"
		out := outcomeAdvancing(t, clock, ask(t, env, q))
		if out.Text != "Nobody answered within 0:00:01." {
			t.Fatalf("outcome = %+v", out)
		}
		id := "late" + onTimeout
		attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: q.QuestionID, AttemptID: id, Answer: json.RawMessage(`"red"`), By: "slack:UANA"})
		ev := refusalFor(t, events, id)
		if ev.Reason != bridge.RefusedNotPending || !strings.HasPrefix(ev.Text, "This question timed out at ") || !strings.HasSuffix(ev.Text, "; nobody answered it in time.") {
			t.Errorf("on_timeout %q: refusal %s %q", onTimeout, ev.Reason, ev.Text)
		}
	}
}

// outcomeAdvancing waits for the outcome in ch, moving clock on meanwhile,
// so the question's ladder and timeout fall due without real waits.
func outcomeAdvancing(t *testing.T, clock *testenv.Clock, ch <-chan *bridge.Resume) *bridge.Resume {
	t.Helper()
	var out *bridge.Resume
	clock.AdvanceUntil(t, 100*time.Millisecond, testenv.Patience, func() error {
		select {
		case res, ok := <-ch:
			if !ok {
				t.Fatal("no outcome")
			}
			out = res
			return nil
		default:
			return errors.New("no outcome yet")
		}
	})
	return out
}
