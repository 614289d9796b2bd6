package discord

// End-to-end: the real runtime (internal/testenv: embedded NATS, SQLite
// store, runtime), the bot, the fake Discord API, and signed interactions.

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
	"github.com/askbridge/askbridge/store/record"
)

func startE2E(t *testing.T, roles runtime.Roles) (*testenv.Env, *harness) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{Roles: roles,
		Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	h := start(t, harnessOptions{nats: env.NATS})
	return env, h
}

// resumeCount is how many resumes the stream holds: exact once a resume
// has been awaited, where a recorder may not have received it yet.
func resumeCount(t *testing.T, env *testenv.Env) uint64 {
	t.Helper()
	return testenv.StreamCount(t, env.NATS, bridge.StreamResumes, bridge.PrefixResume+".>")
}

// await waits for the question's outcome on ask.v1.resume.
func await(t *testing.T, env *testenv.Env, q bridge.Question) *bridge.Resume {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
	defer cancel()
	res, err := env.Agent.Await(ctx, q.Tenant, q.JobID, q.QuestionID)
	if err != nil {
		t.Fatalf("await %s: %v; %s", q.QuestionID, err, env.WhereIs(&q))
	}
	return res
}

func ask(t *testing.T, env *testenv.Env, q bridge.Question) {
	t.Helper()
	if err := env.Agent.Publish(context.Background(), &q); err != nil {
		t.Fatalf("ask: %v", err)
	}
}

// settledCard waits for a card to lose its components and show an outcome
// containing want.
func (f *fakeDiscord) settledCard(t *testing.T, messageID, want string) {
	t.Helper()
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		m := f.message(messageID)
		if n := len(components(m)); n != 0 {
			return fmt.Errorf("the card still has %d components", n)
		}
		if got := fieldValue(embedOf(t, m), "Outcome"); !strings.Contains(got, want) {
			return fmt.Errorf("outcome = %q, want %q in it", got, want)
		}
		return nil
	})
}

func TestE2EChoiceClickResumesJob(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	h.interact(h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string)))
	res := await(t, env, q)
	if res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: blue" || res.By != "discord:"+kevin.ID ||
		res.ByName != "kevin" || res.Via != "discord" || res.TaskVersion != 3 {
		t.Fatalf("resume = %+v", res)
	}
	h.fake.settledCard(t, msg["id"].(string), "Answered by <@"+kevin.ID+">: blue")
	// The runtime recorded where the card is.
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		var reply bridge.ShowReply
		if err := h.bot.request(context.Background(), bridge.APIShow, bridge.ShowRequest{As: "discord:" + kevin.ID,
			Tenant: "acme", JobID: "job-1", QuestionID: "q-1"}, &reply); err != nil {
			return err
		}
		if reply.Question == nil || len(reply.Question.Messages) != 1 || reply.Question.Messages[0].MessageID != msg["id"] {
			return fmt.Errorf("show = %+v", reply.Question)
		}
		return nil
	})
}

func TestE2EFreeTextModal(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	q.Choices, q.Question = nil, "What should the subject line say?"
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	modal := h.interact(h.click(kevin, findComponent(t, msg, "Answer…")["custom_id"].(string)))
	h.interact(h.submit(kevin, modal["data"].(map[string]any)["custom_id"].(string), map[string]string{"answer": "Q3 report, final"}))
	if res := await(t, env, q); res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: Q3 report, final" {
		t.Fatalf("resume = %+v", res)
	}
	h.fake.settledCard(t, msg["id"].(string), "Q3 report, final")
}

func TestE2EDeclineWithReason(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	modal := h.interact(h.click(kevin, findComponent(t, msg, "Decline")["custom_id"].(string)))
	h.interact(h.submit(kevin, modal["data"].(map[string]any)["custom_id"].(string), map[string]string{"reason": "ask Ana"}))
	res := await(t, env, q)
	if want := "discord:" + kevin.ID + " (kevin) declined to answer: ask Ana."; res.Outcome != bridge.OutcomeDeclined || res.Text != want {
		t.Fatalf("resume = %+v, want text %q", res, want)
	}
	h.fake.settledCard(t, msg["id"].(string), "Declined by <@"+kevin.ID+">: ask Ana")
}

func TestE2EStrangerRefusedEphemerally(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	in := h.click(stranger, findComponent(t, msg, "red")["custom_id"].(string))
	h.interact(in)
	f := h.fake.followups(t, in["token"].(string), 1)[0].JSON(t)
	if f["flags"] != float64(64) || !strings.HasPrefix(f["content"].(string), "You can't answer this question: ") {
		t.Fatalf("follow-up = %v", f)
	}
	// Still waiting: the card keeps its buttons, nothing resumed; Kevin
	// can still answer.
	if n := len(components(h.fake.message(msg["id"].(string)))); n != 7 {
		t.Fatalf("card components = %d after a refusal", n)
	}
	if n := resumeCount(t, env); n != 0 {
		t.Fatalf("%d resumes after a refused attempt", n)
	}
	h.interact(h.click(kevin, findComponent(t, msg, "green")["custom_id"].(string)))
	if res := await(t, env, q); res.Text != "The answer: green" {
		t.Fatalf("resume = %+v", res)
	}
}

func TestE2EStaleCardRefused(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	old := colorQuestion()
	old.TaskVersion = 2
	ask(t, env, old)
	msg := h.posted(channelA, 1)
	// The agent moves the task to version 3: version 2 is superseded.
	if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.CancelSubject("acme", "job-1"), "bump-3",
		bridge.Cancel{Tenant: "acme", JobID: "job-1", TaskVersion: 3}); err != nil {
		t.Fatal(err)
	}
	h.fake.settledCard(t, msg["id"].(string), "Superseded by task version")
	ask(t, env, colorQuestion()) // v3, same question id
	h.posted(msg["id"].(string), 1)
	// A click on the old card (a client that still shows it).
	in := h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string))
	h.interact(in)
	f := h.fake.followups(t, in["token"].(string), 1)[0].JSON(t)
	if f["flags"] != float64(64) || !strings.Contains(f["content"].(string), "version") {
		t.Fatalf("follow-up = %v", f)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		var reply bridge.ShowReply
		if err := h.bot.request(context.Background(), bridge.APIShow, bridge.ShowRequest{As: "discord:" + kevin.ID,
			Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3}, &reply); err != nil {
			return err
		}
		if reply.Question == nil || reply.Question.State != bridge.StatePending || reply.Question.TaskVersion != 3 {
			return fmt.Errorf("v3 = %+v, want pending", reply.Question)
		}
		return nil
	})
}

func TestE2EDoubleClickOneResume(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	id := findComponent(t, msg, "blue")["custom_id"].(string)
	first, second := h.click(kevin, id), h.click(kevin, id)
	h.interact(first)
	h.interact(second)
	if res := await(t, env, q); res.Text != "The answer: blue" {
		t.Fatalf("resume = %+v", res)
	}
	// The second click is refused as no longer pending, to Kevin alone.
	f := h.fake.followups(t, second["token"].(string), 1)[0].JSON(t)
	if f["flags"] != float64(64) {
		t.Fatalf("follow-up = %v", f)
	}
	h.fake.settledCard(t, msg["id"].(string), "Answered by <@"+kevin.ID+">: blue")
	if n := resumeCount(t, env); n != 1 {
		t.Fatalf("%d resumes for a double click, want 1", n)
	}
	if n := len(h.fake.requests("PATCH", "/channels/")); n != 1 {
		t.Fatalf("%d card edits, want 1", n)
	}
}

func TestE2EAccessDeniedFailsTheJob(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/" + channelA + "/messages", Status: 403, Code: 50013, Times: -1})
	q := colorQuestion()
	ask(t, env, q)
	res := await(t, env, q)
	if res.Outcome != bridge.OutcomeFailed || res.Code != bridge.CodeAccessDenied || res.Failure == nil ||
		res.Failure.Code != bridge.CodeAccessDenied || res.Failure.Dependency != "discord" {
		t.Fatalf("resume = %+v (failure %+v)", res, res.Failure)
	}
	if strings.Contains(res.Text, testToken) || strings.Contains(res.Text, "error 50013") {
		t.Fatalf("the agent reads a secret or a raw response: %q", res.Text)
	}
	_ = h
}

func TestE2EReminderDMThenTimeout(t *testing.T) {
	t.Parallel()
	// The runtime's ladder and the adapter's reading of a reminder's
	// deadline on one injected clock: on the real one, a reminder handled
	// after a short question's deadline is rightly dropped.
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Clock: clock,
		Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	h := start(t, harnessOptions{nats: env.NATS, tweak: func(b *Bot) { b.now = clock.Now }})
	q := colorQuestion()
	q.Timeout = "4h"
	q.Escalation = &bridge.Escalation{Steps: []bridge.LadderStep{{At: 0.25, To: bridge.TargetAnswerers}}}
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	kevinDMs := func() []fakeReq { return h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages") }
	if n := len(kevinDMs()); n != 0 {
		t.Fatalf("%d reminder DMs before the first quarter", n)
	}
	clock.Advance(time.Hour + time.Second)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		dms := kevinDMs()
		if len(dms) != 1 {
			return fmt.Errorf("%d reminder DMs to kevin", len(dms))
		}
		if e := dms[0].JSON(t)["embeds"].([]any)[0].(map[string]any); e["description"] != q.Question {
			return fmt.Errorf("DM embed = %v", e)
		}
		return nil
	})
	clock.Advance(3 * time.Hour)
	res := await(t, env, q)
	if res.Outcome != bridge.OutcomeTimedOut || res.Text != "Nobody answered within 4:00:00." {
		t.Fatalf("resume = %+v", res)
	}
	h.fake.settledCard(t, msg["id"].(string), "Nobody answered within 4:00:00 · ")
	if n := len(kevinDMs()); n != 1 {
		t.Fatalf("%d reminder DMs, want 1", n)
	}
}

// With AckAfterDecision, Discord gets its response only once the runtime
// has committed the decision: at that moment the question is answered in
// the store.
func TestE2EAckAfterDecision(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{
		Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	h := start(t, harnessOptions{nats: env.NATS, mutate: func(o *Options) { o.AckAfterDecision = true }})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	h.interact(h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string)))
	rec, err := env.Store.Find(context.Background(), record.Key{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID})
	if err != nil || rec.State != bridge.StateAnswered || string(rec.Answer) != `"blue"` {
		t.Fatalf("when Discord got its response the question was %+v, %v; want it answered", rec, err)
	}
	if res := await(t, env, q); res.Text != "The answer: blue" {
		t.Fatalf("resume = %+v", res)
	}
	// The deny form's submit too: opening the form is answered at once,
	// the submit once the denial is decided.
	ap := approvalQuestion()
	ask(t, env, ap)
	card := h.posted(channelA, 2)
	modalID := denyModalOf(t, h.interact(h.click(kevin, findComponent(t, card, "Deny")["custom_id"].(string))), ap)
	h.interact(h.submit(kevin, modalID, map[string]string{"reason": "too much"}))
	rec, err = env.Store.Find(context.Background(), record.Key{Tenant: ap.Tenant, JobID: ap.JobID, QuestionID: ap.QuestionID})
	if err != nil || rec.State != bridge.StateAnswered || string(rec.Answer) != `"denied"` || rec.Comment != "too much" {
		t.Fatalf("when Discord got its response the approval was %+v, %v; want it denied", rec, err)
	}
	if res := await(t, env, ap); res.Text != "The answer: denied. Reason: too much." {
		t.Fatalf("resume = %+v", res)
	}
}

// A form button (Decline) clicked, or a decline form submitted, on a card
// whose question was answered meanwhile (a client that has not redrawn
// the card, a form left open) opens no form and sends nothing: the person
// is told at once, privately, who answered and when, in the runtime's
// words.
func TestE2EFormsOnAnAnsweredCardSayWhoAnswered(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{Operators: []string{"discord:" + ana.ID}})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	// Ana opens the decline form while the question waits.
	form := h.interact(h.click(ana, findComponent(t, msg, "Decline")["custom_id"].(string)))
	if form["type"] != float64(9) {
		t.Fatalf("decline = %v, want a form", form)
	}
	formID := form["data"].(map[string]any)["custom_id"].(string)
	h.interact(h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string)))
	await(t, env, q)
	h.fake.settledCard(t, msg["id"].(string), "Answered by <@"+kevin.ID+">: blue")
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		c, err := h.bot.loadCard(context.Background(), q.Tenant, q.JobID, q.QuestionID, q.TaskVersion)
		if err != nil || c == nil || c.Outcome == nil {
			return fmt.Errorf("card record not settled: %+v %v", c, err)
		}
		return nil
	})
	late := regexp.MustCompile(`^This question was already answered by discord:` + kevin.ID + ` \(kevin\) at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\.$`)
	before := len(h.attemptsNow())
	for name, in := range map[string]map[string]any{
		"decline button": h.click(ana, findComponent(t, msg, "Decline")["custom_id"].(string)),
		"decline form":   h.submit(ana, formID, map[string]string{"reason": "ask someone else"}),
	} {
		resp := h.interact(in)
		data, _ := resp["data"].(map[string]any)
		content, _ := data["content"].(string)
		if resp["type"] != float64(4) || data["flags"] != float64(64) || !late.MatchString(content) {
			t.Errorf("%s on an answered card: %v, want an ephemeral saying who answered", name, resp)
		}
	}
	if n := len(h.attemptsNow()); n != before {
		t.Errorf("%d attempts sent for an answered question", n-before)
	}
}
