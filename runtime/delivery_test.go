package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/store/record"
)

func report(t *testing.T, env *testenv.Env, q *bridge.Question, d bridge.Delivery) {
	t.Helper()
	d.Tenant, d.JobID, d.QuestionID, d.TaskVersion = q.Tenant, q.JobID, q.QuestionID, q.TaskVersion
	id := fmt.Sprintf("delivery.%s.%s.%s.%s.%d", d.Platform, q.Tenant, q.JobID, q.QuestionID, q.TaskVersion)
	if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.DeliverySubject(q.Tenant, q.JobID), id, d); err != nil {
		t.Fatal(err)
	}
}

var channelNotFound = &bridge.Failure{
	Code: bridge.CodeReferenceUnresolved, Dependency: "slack", Operation: "chat.postMessage",
	OperatorMessage: "Slack channel C0123 was not found.",
}

func TestDeliveryFailureOnEveryPlatformFailsTheJob(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles, Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {}}})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-df")
	q := choiceQuestion("job-df")
	q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0123"}}
	ch := ask(t, env, q)
	report(t, env, q, bridge.Delivery{Platform: bridge.PlatformSlack, Failure: channelNotFound})
	out := outcome(t, ch)
	if out.Outcome != bridge.OutcomeFailed || out.Code != bridge.CodeReferenceUnresolved || out.Failure == nil ||
		out.Failure.OperatorMessage != "Slack channel C0123 was not found." ||
		out.Text != "The question could not be shown to anyone: Slack channel C0123 was not found." {
		t.Fatalf("outcome = %+v (failure %+v)", out, out.Failure)
	}
	// docs/contract.md: delivery_failed carries failure and via (the platform).
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := events.EventTypes(); got != "asked,delivery_failed" {
			return fmt.Errorf("events = %s", got)
		}
		return nil
	})
	if ev := events.Events()[1]; ev.Via != bridge.PlatformSlack || ev.Failure == nil || ev.Failure.Code != bridge.CodeReferenceUnresolved {
		t.Fatalf("delivery_failed = %+v", ev)
	}
}

func TestDeliveryFailureWhileAnotherPlatformShowsIt(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles, Platforms: map[string]bridge.Platform{
		bridge.PlatformSlack: {DefaultChannel: "C1"}, bridge.PlatformDiscord: {DefaultChannel: "42"},
	}})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-dp")
	q := choiceQuestion("job-dp")
	ch := ask(t, env, q)
	ref := &bridge.MessageRef{Platform: bridge.PlatformDiscord, Channel: "42", MessageID: "777"}
	report(t, env, q, bridge.Delivery{Platform: bridge.PlatformDiscord, OK: true, Message: ref})
	report(t, env, q, bridge.Delivery{Platform: bridge.PlatformSlack, Failure: channelNotFound})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := events.EventTypes(); got != "asked,delivery_failed" {
			return fmt.Errorf("events = %s", got)
		}
		return nil
	})
	if ev := events.Events()[1]; ev.Via != bridge.PlatformSlack || ev.Failure == nil || ev.Failure.Code != bridge.CodeReferenceUnresolved {
		t.Fatalf("delivery_failed = %+v", ev)
	}
	if got := counters(t, env, "askbridge_deliveries_total"); got != "platform=discord,result=ok 1; platform=slack,result=REFERENCE_UNRESOLVED 1" {
		t.Fatalf("askbridge_deliveries_total: %s", got)
	}
	waitState(t, env, q, bridge.StatePending)
	// The outcome event names the message that showed the question.
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-dp", QuestionID: "q-1", AttemptID: "dp", Answer: json.RawMessage(`"red"`), By: "slack:UOP"})
	outcome(t, ch)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		evs := events.Events()
		if len(evs) < 3 {
			return fmt.Errorf("events = %s", events.EventTypes())
		}
		if m := evs[2].Messages; len(m) != 1 || m[0] != *ref {
			return fmt.Errorf("messages = %+v", m)
		}
		return nil
	})
}

func TestQuestionRoutedToAnUnconfiguredPlatformFails(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-nc")
	q := choiceQuestion("job-nc")
	q.Route = &bridge.Route{Discord: &bridge.DiscordRoute{ChannelID: "1234"}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := env.Agent.Ask(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if out.Outcome != bridge.OutcomeFailed || out.Code != bridge.CodeCapabilityUnavailable ||
		!strings.Contains(out.Text, "Discord (ASK_DISCORD_BOT_TOKEN), which is not configured") {
		t.Fatalf("outcome = %+v", out)
	}
	if strings.Contains(out.Text, "token") && !strings.Contains(out.Text, "ASK_DISCORD_BOT_TOKEN") {
		t.Fatalf("outcome text mentions a token: %q", out.Text)
	}
	// The delivery_failed event names the platform, as the contract says.
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, ev := range events.Events() {
			if ev.Type == bridge.EventDeliveryFailed {
				if ev.Via != bridge.PlatformDiscord || ev.Failure == nil {
					return fmt.Errorf("delivery_failed via %q, failure %+v", ev.Via, ev.Failure)
				}
				return nil
			}
		}
		return fmt.Errorf("no delivery_failed event in %s", events.EventTypes())
	})
}

// counters renders a counter vector of the runtime's metrics as
// "label=value,... count; ..." in the registry's order.
func counters(t *testing.T, env *testenv.Env, name string) string {
	t.Helper()
	families, err := env.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out = append(out, fmt.Sprintf("%s %g", strings.Join(labels, ","), m.GetCounter().GetValue()))
		}
	}
	return strings.Join(out, "; ")
}

// TestUndeliverableQuestionFailsAfterACrash checks a question recorded
// just before a crash, before it was failed for want of a platform to show
// it, is failed when JetStream redelivers it.
func TestUndeliverableQuestionFailsAfterACrash(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	q := choiceQuestion("job-ncc")
	q.Route = &bridge.Route{Discord: &bridge.DiscordRoute{ChannelID: "1234"}}
	body, _ := json.Marshal(q)
	now := time.Now().UTC()
	// What the runtime had committed when it crashed: the question, no failure.
	if _, err := env.Store.AskMany(context.Background(), []record.NewQuestion{{
		Key:  record.Key{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion},
		Kind: bridge.KindQuestion, Body: body, AskedAt: now, Deadline: now.Add(time.Hour),
	}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := env.Agent.Ask(ctx, q) // the redelivery
	if err != nil {
		t.Fatal(err)
	}
	if out.Outcome != bridge.OutcomeFailed || out.Code != bridge.CodeCapabilityUnavailable {
		t.Fatalf("outcome = %+v", out)
	}
}

// TestQuestionRoutedWithoutAChannelIsInputMissing checks a question routed
// to a platform that is switched on, without a channel and with no default
// channel, fails with INPUT_MISSING naming the channel it lacks.
func TestQuestionRoutedWithoutAChannelIsInputMissing(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles, Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {}}})
	q := choiceQuestion("job-nochan")
	q.Route = &bridge.Route{Slack: &bridge.SlackRoute{}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := env.Agent.Ask(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if out.Outcome != bridge.OutcomeFailed || out.Code != bridge.CodeInputMissing || out.Failure == nil ||
		!strings.Contains(out.Failure.OperatorMessage, "set route.slack.channel (ASK_SLACK_CHANNEL is not set)") {
		t.Fatalf("outcome = %+v, failure %+v", out, out.Failure)
	}
}

// TestOutcomeTimesAreTheStoredOnes checks that the at of a resume and of
// its event is the time the store keeps for the settlement: the
// settled_at that show gives and the audit's last entry, to the
// millisecond, whichever way the question ended.
func TestOutcomeTimesAreTheStoredOnes(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Roles: roles, Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {}}, Clock: clock})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.>")
	ends := map[string]func(q *bridge.Question){
		"answered": func(q *bridge.Question) {
			attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: q.QuestionID, AttemptID: "at-" + q.JobID, Answer: json.RawMessage(`"red"`), By: "slack:UOP"})
		},
		"timed_out": nil, // its one-second timeout
		"cancelled": func(q *bridge.Question) {
			if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.CancelSubject("acme", q.JobID), "at-"+q.JobID,
				bridge.Cancel{Tenant: "acme", JobID: q.JobID, Reason: "not needed"}); err != nil {
				t.Fatal(err)
			}
		},
		"failed": func(q *bridge.Question) {
			report(t, env, q, bridge.Delivery{Platform: bridge.PlatformSlack, Failure: channelNotFound})
		},
	}
	for state, end := range ends {
		t.Run(state, func(t *testing.T) {
			q := choiceQuestion("job-at-" + strings.ReplaceAll(state, "_", "-"))
			if end == nil {
				q.Timeout = "1s"
			}
			if state == "failed" {
				q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0123"}}
			}
			ch := ask(t, env, q)
			var out *bridge.Resume
			if end != nil {
				end(q)
				out = outcome(t, ch)
			} else {
				out = outcomeAdvancing(t, clock, ch)
			}
			r := show(t, env, "slack:UADMIN", q.JobID, q.QuestionID)
			if r.Question == nil || len(r.Audit) == 0 {
				t.Fatalf("show = %+v", r)
			}
			settled, audited := r.Question.SettledAt, r.Audit[len(r.Audit)-1].At
			if !out.At.Equal(settled) || !out.At.Equal(audited) {
				t.Errorf("resume at %s; show gives settled_at %s, the audit %s", out.At.Format(time.RFC3339Nano), settled.Format(time.RFC3339Nano), audited.Format(time.RFC3339Nano))
			}
			var ev *bridge.Event
			testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
				for _, e := range events.Events() {
					if e.JobID == q.JobID && e.State == r.Question.State && e.Type != bridge.EventAsked {
						ev = &e
						return nil
					}
				}
				return fmt.Errorf("no %s event: %s", r.Question.State, events.EventTypes())
			})
			if !ev.At.Equal(out.At) {
				t.Errorf("%s event at %s, resume at %s", ev.Type, ev.At.Format(time.RFC3339Nano), out.At.Format(time.RFC3339Nano))
			}
		})
	}
}

// TestDeliveryReportOfAVersionlessQuestionAskedAgain checks that a late
// delivery failure for a question asked without a version does not count
// against the same question asked again at version 1: that version waits
// for its own report.
func TestDeliveryReportOfAVersionlessQuestionAskedAgain(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles, Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {}}})
	v0 := choiceQuestion("job-dv")
	v0.TaskVersion = 0
	v0.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0GONE"}}
	ask(t, env, v0)
	v1 := choiceQuestion("job-dv")
	v1.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0123"}}
	ch := ask(t, env, v1)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if r := show(t, env, "slack:UADMIN", "job-dv", "q-1"); r.Question == nil || r.Question.TaskVersion != 1 {
			return fmt.Errorf("version 1 not stored yet: %+v", r.Question)
		}
		return nil
	})
	// Slack's failure to post version 0, reported after version 1 was
	// asked; then version 1's card, posted. Reports are handled in order.
	report(t, env, v0, bridge.Delivery{Platform: bridge.PlatformSlack, Failure: channelNotFound})
	report(t, env, v1, bridge.Delivery{Platform: bridge.PlatformSlack, OK: true,
		Message: &bridge.MessageRef{Platform: bridge.PlatformSlack, Channel: "C0123", MessageID: "1700000000.000100"}})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if got := counters(t, env, "askbridge_deliveries_total"); !strings.Contains(got, "result=ok 1") {
			return fmt.Errorf("reports not handled yet: %s", got)
		}
		return nil
	})
	if r := show(t, env, "slack:UADMIN", "job-dv", "q-1"); r.Question == nil || r.Question.TaskVersion != 1 || r.Question.State != bridge.StatePending {
		t.Fatalf("version 1 = %+v (%s); want it still pending", r.Question, r.Error)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-dv", QuestionID: "q-1", TaskVersion: 1, AttemptID: "dv", Answer: json.RawMessage(`"red"`), By: "slack:UOP"})
	if out := outcome(t, ch); out.Outcome != bridge.OutcomeAnswered {
		t.Fatalf("outcome = %+v", out)
	}
}

// findCounter counts the record's reads of a question by key.
type findCounter struct {
	record.Backend
	mu    sync.Mutex
	finds int
}

func (f *findCounter) Find(ctx context.Context, k record.Key) (*record.Record, error) {
	f.mu.Lock()
	f.finds++
	f.mu.Unlock()
	return f.Backend.Find(ctx, k)
}

func (f *findCounter) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.finds
}

// TestShownCardIsStoredWithoutReadingItsQuestion: the report of a card
// shown, for a question this runtime recorded, is stored from the report
// alone; after a restart, which forgets what it recorded, the question is
// read first, and the card stored all the same.
func TestShownCardIsStoredWithoutReadingItsQuestion(t *testing.T) {
	t.Parallel()
	finds := &findCounter{}
	env := testenv.Start(t, testenv.Options{Roles: roles, Shared: true,
		Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C1"}},
		WrapStore: func(b record.Backend) record.Backend { finds.Backend = b; return finds }})
	ctx := context.Background()
	recorded := func(q *bridge.Question) *record.Record {
		t.Helper()
		var rec *record.Record
		testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
			var err error
			rec, err = env.RecordStore.Find(ctx, record.Key{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion})
			return err
		})
		return rec
	}
	shown := func(q *bridge.Question, rec *record.Record, ts string) {
		t.Helper()
		report(t, env, q, bridge.Delivery{Platform: bridge.PlatformSlack, OK: true,
			Message: &bridge.MessageRef{Platform: bridge.PlatformSlack, Channel: "C1", MessageID: ts}})
		testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
			refs, err := env.RecordStore.Messages(ctx, rec.ID)
			if err != nil || len(refs) != 1 || refs[0].MessageID != ts {
				return fmt.Errorf("%s's card: %+v (%v)", q.JobID, refs, err)
			}
			return nil
		})
	}
	q1 := choiceQuestion("job-sc1")
	ask(t, env, q1)
	rec := recorded(q1)
	before := finds.count()
	shown(q1, rec, "1700000000.000100")
	if n := finds.count() - before; n != 0 {
		t.Fatalf("the question was read %d times to store its card; this runtime had just recorded it", n)
	}

	q2 := choiceQuestion("job-sc2")
	ask(t, env, q2)
	rec = recorded(q2)
	env.StopRuntime()
	env.StartReplica(t)
	before = finds.count()
	shown(q2, rec, "1700000000.000200")
	if n := finds.count() - before; n != 1 {
		t.Fatalf("the question was read %d times to store its card after a restart; want once", n)
	}
}
