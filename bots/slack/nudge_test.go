package slack

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

// threadPosts are the messages posted into threads (not DMs, not cards)
// whose text holds want.
func threadPosts(h *harness, want string) []apiCall {
	var out []apiCall
	for _, c := range h.fake.Calls("chat.postMessage") {
		if c.Str("thread_ts") != "" && strings.HasPrefix(c.Str("channel"), "C") && strings.Contains(c.Str("blocks")+c.Str("text"), want) {
			out = append(out, c)
		}
	}
	return out
}

// Three pending questions of mixed priority on one job: one ladder round
// re-surfaces only the blocking one in the thread, with "2 more questions
// wait", and ana gets one DM listing the three; /ask queue lists them in
// order; once the blocking one is answered, the next round re-surfaces
// the high one.
func TestOneNudgeOneQuestionSlack(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Clock: clock, Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C0123"}}})
	h := startBot(t, env.NATS, newFakeSlack(t))
	texts := map[string]string{"q-low": "Should the footer name the team?", "q-high": "How many copies?", "q-block": "Which region should the report cover?"}
	for _, c := range []struct{ id, priority string }{{"q-low", bridge.PriorityLow}, {"q-high", bridge.PriorityHigh}, {"q-block", ""}} {
		q := question("job-nudge", c.id)
		q.Question, q.Priority = texts[c.id], c.priority
		publishQuestion(t, env, q)
		h.posted(t, c.id)
	}
	resp, body := h.command("U0KEV", "kevin", "queue job-nudge", "trig-q1")
	var reply commandReply
	_ = json.Unmarshal([]byte(body), &reply)
	if resp.StatusCode != 200 || reply.ResponseType != "ephemeral" || !inOrder(reply.Text, "q-block   blocking", "q-high    high", "q-low     low") ||
		!strings.Contains(reply.Text, "Which region should the report cover?") {
		t.Fatalf("/ask queue: %d %s", resp.StatusCode, body)
	}

	clock.Advance(time.Hour + time.Second) // the answerers' step of all three
	testenv.CheckFor(t, wait, tick, func() error {
		if n := len(threadPosts(h, "Still waiting for an answer")); n != 1 {
			return fmt.Errorf("%d re-surfaced questions", n)
		}
		if n := len(dmsIn(h.fake, "D0KEV")); n != 1 {
			return fmt.Errorf("%d DMs to kevin", n)
		}
		return nil
	})
	post := threadPosts(h, "Still waiting for an answer")[0]
	if s := post.Str("blocks"); !strings.Contains(s, "Which region should the report cover?") || !strings.Contains(s, "2 more questions wait for this job") ||
		strings.Contains(s, "How many copies?") || strings.Contains(s, "footer") {
		t.Fatalf("re-surfaced: %s", s)
	}
	dm := dmsIn(h.fake, "D0KEV")[0]
	if !strings.HasPrefix(dm, ":bell: Reminder: 3 questions of job `job-nudge` wait for your answer.") ||
		!inOrder(dm, "`blocking` Which region", "`high` How many copies?", "`low` Should the footer") {
		t.Fatalf("kevin's DM: %q", dm)
	}

	if err := env.Attempt(context.Background(), bridge.AnswerAttempt{Tenant: "acme", JobID: "job-nudge", QuestionID: "q-block", TaskVersion: 1,
		AttemptID: "a-block", Action: bridge.ActionAnswer, Answer: json.RawMessage(`"red"`), By: "slack:U0KEV"}); err != nil {
		t.Fatal(err)
	}
	awaitOutcome(t, env, &bridge.Question{Tenant: "acme", JobID: "job-nudge", QuestionID: "q-block"})
	clock.Advance(time.Hour) // the owner's step
	testenv.CheckFor(t, wait, tick, func() error {
		if n := len(threadPosts(h, "Still waiting for an answer")); n != 2 {
			return fmt.Errorf("%d re-surfaced questions", n)
		}
		if n := len(dmsIn(h.fake, "D0OWNER")); n != 1 {
			return fmt.Errorf("%d DMs to the owner", n)
		}
		return nil
	})
	if s := threadPosts(h, "Still waiting for an answer")[1].Str("blocks"); !strings.Contains(s, "How many copies?") || !strings.Contains(s, "1 more question waits for this job") {
		t.Fatalf("second re-surface: %s", s)
	}
	if dm := dmsIn(h.fake, "D0OWNER")[0]; !strings.HasPrefix(dm, ":rotating_light: Nobody has answered 2 questions on your job `job-nudge` yet.") ||
		!inOrder(dm, "How many copies?", "Should the footer") || strings.Contains(dm, "Which region") {
		t.Fatalf("owner's DM: %q", dm)
	}
	if n := len(dmsIn(h.fake, "D0KEV")); n != 1 {
		t.Fatalf("kevin got %d DMs; the owner's step reminds only the owner", n)
	}
}

// inOrder reports whether s holds each of parts, in that order.
func inOrder(s string, parts ...string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

// A round draws what its nudge says: a restricted top question is
// re-surfaced without its content; a person reminded of one other question
// of the job gets a DM about that one; once the top question has ended, a
// later round re-surfaces nothing and still reminds of the others.
func TestNudgeDrawing(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	h := startBot(t, n, newFakeSlack(t))
	top := question("job-nd", "q-top")
	top.Question, top.Visibility, top.Answerers = "Which salary band should the offer use?", bridge.VisibilityRestricted, []string{"slack:U0KEV"}
	low := question("job-nd", "q-low")
	low.Question, low.Priority, low.Answerers = "Should the footer name the team?", bridge.PriorityLow, []string{"slack:U0BEN"}
	publishEvent(t, n, askedEvent(top))
	h.posted(t, "q-top")
	publishEvent(t, n, askedEvent(low))
	h.posted(t, "q-low")
	item := func(q *bridge.Question, targets ...string) bridge.NudgeQuestion {
		return bridge.NudgeQuestion{QueueItem: bridge.QueueItem{QuestionID: q.QuestionID, TaskVersion: 1, Priority: q.PriorityOf(), Staleness: 1},
			Question: q, Step: bridge.TargetAnswerers, Targets: targets}
	}
	round := func(id string, resurface bool, qs ...bridge.NudgeQuestion) {
		now := time.Now().UTC()
		var all []string
		for _, q := range qs {
			all = append(all, q.Targets...)
		}
		publishEvent(t, n, bridge.Event{Type: bridge.EventReminded, EventID: id, Tenant: "acme", JobID: "job-nd", QuestionID: "q-top", TaskVersion: 1,
			Question: top, State: bridge.StatePending, AskedAt: now, Deadline: now.Add(4 * time.Hour), Step: bridge.TargetAnswerers,
			Targets: all, Nudge: &bridge.Nudge{Resurface: resurface, Questions: qs}})
	}
	round("round-1", true, item(top, "slack:U0KEV"), item(low, "slack:U0BEN"))
	testenv.CheckFor(t, wait, tick, func() error {
		if len(threadPosts(h, "Still waiting")) != 1 || len(dmsIn(h.fake, "D0KEV")) != 1 || len(dmsIn(h.fake, "D0BEN")) != 1 {
			return fmt.Errorf("thread posts %d, DMs kevin %d, ben %d", len(threadPosts(h, "Still waiting")), len(dmsIn(h.fake, "D0KEV")), len(dmsIn(h.fake, "D0BEN")))
		}
		return nil
	})
	if s := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(threadPosts(h, "Still waiting")[0].Str("blocks")); strings.Contains(s, "salary") ||
		!strings.Contains(s, "A restricted question waits for <@U0KEV>, <@U0OWNER> and admins; only they may read it.") || !strings.Contains(s, "1 more question waits for this job") {
		t.Fatalf("re-surfaced restricted question: %s", s)
	}
	if dm := dmsIn(h.fake, "D0BEN")[0]; !strings.Contains(dm, "Should the footer name the team?") || strings.Contains(dm, "salary") {
		t.Fatalf("ben's DM: %q", dm)
	}
	if dm := dmsIn(h.fake, "D0KEV")[0]; !strings.Contains(dm, "Which salary band") || strings.Contains(dm, "footer") {
		t.Fatalf("kevin's DM: %q", dm)
	}

	publishEvent(t, n, bridge.Event{Type: bridge.EventAnswered, Tenant: "acme", JobID: "job-nd", QuestionID: "q-top", TaskVersion: 1,
		By: "slack:U0KEV", ByName: "kevin", AnswerText: "B2", Answer: json.RawMessage(`"B2"`)})
	h.updated(t, h.cardTS(t, top), "Answered by @kevin") // restricted: no answer shown
	round("round-2", true, item(top, "slack:U0KEV"), item(low, "slack:U0KEV", "slack:U0BEN"))
	testenv.CheckFor(t, wait, tick, func() error {
		if len(dmsIn(h.fake, "D0KEV")) != 2 || len(dmsIn(h.fake, "D0BEN")) != 2 {
			return fmt.Errorf("DMs kevin %d, ben %d", len(dmsIn(h.fake, "D0KEV")), len(dmsIn(h.fake, "D0BEN")))
		}
		return nil
	})
	if dm := dmsIn(h.fake, "D0KEV")[1]; !strings.Contains(dm, "Should the footer name the team?") || strings.Contains(dm, "salary") {
		t.Fatalf("kevin's second DM: %q", dm)
	}
	if n := len(threadPosts(h, "Still waiting")); n != 1 {
		t.Fatalf("%d re-surfaces; an answered question is not re-surfaced", n)
	}
}
