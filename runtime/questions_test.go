package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

func TestInvalidQuestionResumesInvalid(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	q := choiceQuestion("job-i")
	q.Fields = []bridge.Field{{Name: "Bad Name", Kind: "colour"}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := env.Agent.Ask(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if out.Outcome != bridge.OutcomeInvalid || !strings.Contains(out.Text, "choices and fields: give one or the other, not both") ||
		!strings.Contains(out.Text, `fields[0].name: "Bad Name" must be`) {
		t.Fatalf("outcome = %+v", out)
	}
}

// TestOversizedQuestionIsRefusedToItsAsker checks a question too large
// to be read at all (over eight times the size limit, still under NATS's
// payload limit) is refused back naming its question_id and task_version:
// Ask, which waits for that question's outcome, returns the refusal
// instead of waiting until its context ends.
func TestOversizedQuestionIsRefusedToItsAsker(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	q := choiceQuestion("job-big")
	q.TaskVersion = 3
	q.Question = strings.Repeat("x", 8*bridge.MaxQuestionBytes+1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := env.Agent.Ask(ctx, q)
	if err != nil {
		t.Fatalf("Ask of an oversized question: %v", err)
	}
	if out.Outcome != bridge.OutcomeInvalid || out.QuestionID != q.QuestionID || out.TaskVersion != 3 ||
		!strings.Contains(out.Text, "question: is") || !strings.Contains(out.Text, "bytes; at most") {
		t.Fatalf("outcome = %+v", out)
	}
}

func TestNewTaskVersionSupersedes(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-v")
	old := choiceQuestion("job-v")
	ch := ask(t, env, old)
	newer := choiceQuestion("job-v")
	newer.QuestionID, newer.TaskVersion = "q-2", 2
	ch2 := ask(t, env, newer)
	out := outcome(t, ch)
	if out.Outcome != bridge.OutcomeCanceled || out.Text != "The question was superseded by task version 2." {
		t.Fatalf("outcome = %+v", out)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-v", QuestionID: "q-1", TaskVersion: 1, AttemptID: "s1", Answer: json.RawMessage(`"red"`), By: "slack:UOP"})
	ev := refusalFor(t, events, "s1")
	if ev.Reason != bridge.RefusedStale || !strings.Contains(ev.Text, "task version 1") {
		t.Fatalf("refusal = %+v", ev)
	}

	// A cancel with a newer version supersedes q-2 as well.
	if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.CancelSubject("acme", "job-v"), "cancel-1",
		bridge.Cancel{Tenant: "acme", JobID: "job-v", TaskVersion: 3}); err != nil {
		t.Fatal(err)
	}
	if out := outcome(t, ch2); out.Text != "The question was superseded by task version 3." {
		t.Fatalf("outcome = %+v", out)
	}
}

// TestCancelRightAfterAskingEndsTheQuestion checks a cancel published
// right after its question ends it, although questions and cancels reach
// the runtime through separate consumers; a version bump right after a
// question supersedes it.
func TestCancelRightAfterAskingEndsTheQuestion(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	resumes := env.Record(t, bridge.StreamResumes, "ask.v1.resume.acme.>")
	ctx := context.Background()
	const n = 40
	want := map[string]string{}
	for i := range n {
		q := choiceQuestion(fmt.Sprintf("job-cx%d", i))
		if err := env.Agent.Publish(ctx, q); err != nil {
			t.Fatal(err)
		}
		c := bridge.Cancel{Tenant: "acme", JobID: q.JobID, Reason: "not needed"}
		want[q.JobID] = "The question was cancelled: not needed."
		if i%2 == 1 {
			c = bridge.Cancel{Tenant: "acme", JobID: q.JobID, TaskVersion: 2}
			want[q.JobID] = "The question was superseded by task version 2."
		}
		if err := bridge.Publish(ctx, env.NATS.JS, bridge.CancelSubject("acme", q.JobID), "cx-"+q.JobID, c); err != nil {
			t.Fatal(err)
		}
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := len(resumes.Resumes()); got < n {
			return fmt.Errorf("%d of %d questions ended", got, n)
		}
		return nil
	})
	for _, res := range resumes.Resumes() {
		if res.Outcome != bridge.OutcomeCanceled || res.Text != want[res.JobID] {
			t.Errorf("%s: outcome %s %q, want cancelled %q", res.JobID, res.Outcome, res.Text, want[res.JobID])
		}
	}
}

// TestQuestionOnABadJobIDIsRefusedBack checks a question published on a
// subject NATS takes but whose job id askbridge does not (too long, not
// ASCII) is refused back on the matching resume subject, naming the id.
func TestQuestionOnABadJobIDIsRefusedBack(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	resumes := env.Record(t, bridge.StreamResumes, "ask.v1.resume.acme.>")
	long := strings.Repeat("j", 65)
	for _, job := range []string{long, "jöb"} {
		q := choiceQuestion(job)
		body, _ := json.Marshal(q)
		if _, err := env.NATS.JS.Publish(context.Background(), bridge.PrefixQuestion+".acme."+job, body); err != nil {
			t.Fatal(err)
		}
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if n := len(resumes.Resumes()); n != 2 {
			return fmt.Errorf("%d resumes, want 2", n)
		}
		return nil
	})
	for _, res := range resumes.Resumes() {
		want := fmt.Sprintf("The question was refused: job_id: %q must be 1 to 64 letters, digits, '-' or '_'.", res.JobID)
		if res.Outcome != bridge.OutcomeInvalid || res.Text != want || res.QuestionID != "q-1" || (res.JobID != long && res.JobID != "jöb") {
			t.Errorf("resume %+v\nwant text %q", res, want)
		}
	}
}

// TestBumpThenAskKeepsTheNewQuestion checks an agent that asks, bumps the
// task version and at once asks at the new version: the old question is
// superseded and the new one waits, although the new question can reach
// the store before the bump does.
func TestBumpThenAskKeepsTheNewQuestion(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	resumes := env.Record(t, bridge.StreamResumes, "ask.v1.resume.acme.>")
	ctx := context.Background()
	const n = 20
	for i := range n {
		job := fmt.Sprintf("job-bump%d", i)
		if err := env.Agent.Publish(ctx, choiceQuestion(job)); err != nil {
			t.Fatal(err)
		}
		if err := bridge.Publish(ctx, env.NATS.JS, bridge.CancelSubject("acme", job), "bump-"+job, bridge.Cancel{Tenant: "acme", JobID: job, TaskVersion: 2}); err != nil {
			t.Fatal(err)
		}
		q2 := choiceQuestion(job)
		q2.QuestionID, q2.TaskVersion = "q-2", 2
		if err := env.Agent.Publish(ctx, q2); err != nil {
			t.Fatal(err)
		}
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := len(resumes.Resumes()); got < n {
			return fmt.Errorf("%d of %d first questions ended", got, n)
		}
		return nil
	})
	for _, res := range resumes.Resumes() {
		if res.QuestionID != "q-1" || res.Text != "The question was superseded by task version 2." {
			t.Errorf("%s/%s ended: %s %q", res.JobID, res.QuestionID, res.Outcome, res.Text)
		}
	}
	for i := range n {
		if r := show(t, env, "slack:UADMIN", fmt.Sprintf("job-bump%d", i), "q-2"); r.Question == nil || r.Question.State != bridge.StatePending {
			t.Errorf("job-bump%d q-2: %+v", i, r)
		}
	}
}

// TestInvalidQuestionAfterTheQuestionsStreamIsMadeAnew checks that the
// refusal of an invalid question reaches its agent after the questions
// stream was deleted and made anew (as docs/contract.md tells operators
// to do to make it a work queue), whose sequence numbers start again:
// the refusal of the first invalid question since is not taken for the
// refusal of the first invalid question before.
func TestInvalidQuestionAfterTheQuestionsStreamIsMadeAnew(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	invalid := func(job string) *bridge.Question {
		q := choiceQuestion(job)
		q.OnTimeout = "retry"
		return q
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := env.Agent.Ask(ctx, invalid("job-inv1")); err != nil || out.Outcome != bridge.OutcomeInvalid {
		t.Fatalf("first: %+v, %v", out, err)
	}
	if err := env.NATS.JS.DeleteStream(ctx, bridge.StreamQuestions); err != nil {
		t.Fatal(err)
	}
	dir := env.Dir
	env.Stop()
	env = testenv.Start(t, testenv.Options{Dir: dir, Roles: roles})
	if out, err := env.Agent.Ask(ctx, invalid("job-inv2")); err != nil || out.Outcome != bridge.OutcomeInvalid ||
		!strings.Contains(out.Text, `on_timeout: must be continue or fail, not "retry"`) {
		t.Fatalf("second: %+v, %v", out, err)
	}
}

// TestCardOfAVersionlessQuestionIsStaleOnceReasked checks a question
// asked without a task version (version 0) and asked again at version 1:
// an attempt from the version-0 card (exact_version) is refused as stale,
// while one that names no version (the CLI) answers the latest.
func TestCardOfAVersionlessQuestionIsStaleOnceReasked(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-v0")
	resumes := env.Record(t, bridge.StreamResumes, bridge.ResumeSubject("acme", "job-v0"))
	v0 := choiceQuestion("job-v0")
	v0.TaskVersion = 0
	ask(t, env, v0)
	waitState(t, env, v0, bridge.StatePending)
	v1 := choiceQuestion("job-v0")
	ch1 := ask(t, env, v1)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, res := range resumes.Resumes() {
			if res.TaskVersion == 0 && res.Text == "The question was superseded by task version 1." {
				return nil
			}
		}
		return fmt.Errorf("version 0 not superseded: %+v", resumes.Resumes())
	})
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-v0", QuestionID: "q-1", ExactVersion: true, AttemptID: "old-card",
		Answer: json.RawMessage(`"red"`), By: "slack:UOP"})
	if ev := refusalFor(t, events, "old-card"); ev.Reason != bridge.RefusedStale ||
		ev.Text != "This answer is stale: it belongs to task version 0, and the task is now at version 1." {
		t.Fatalf("old card's refusal = %+v", ev)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-v0", QuestionID: "q-1", AttemptID: "cli", Answer: json.RawMessage(`"blue"`), By: "slack:UOP"})
	if out := outcome(t, ch1); out.TaskVersion != 1 || out.Text != "The answer: blue" {
		t.Fatalf("version 1 outcome %+v", out)
	}
}
