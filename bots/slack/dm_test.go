package slack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// TestDMChannelOpenedOnce checks reminders to a person open their DM
// channel once: conversations.open is paced, and a reminder step to many
// people should not pay it again for each later step.
func TestDMChannelOpenedOnce(t *testing.T) {
	t.Parallel()
	_, h := e2e(t, runtime.Roles{})
	ctx := context.Background()
	for _, text := range []string{"first reminder", "second reminder"} {
		if err := h.bot.dm(ctx, "U0KEV", text); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(h.fake.Calls("conversations.open")); n != 1 {
		t.Fatalf("%d conversations.open calls for two DMs to one person, want 1", n)
	}
	var texts []string
	for _, c := range h.fake.Calls("chat.postMessage") {
		if c.Str("channel") == "D0KEV" {
			texts = append(texts, c.Str("text"))
		}
	}
	if !slices.Equal(texts, []string{"first reminder", "second reminder"}) {
		t.Fatalf("DMs %q", texts)
	}
}

func TestEscalationDMs(t *testing.T) {
	t.Parallel()
	// The runtime's ladder and the adapter's reading of deadlines on one
	// injected clock: on the real one, a step handled after a short
	// question's deadline is rightly dropped, and the events handled again
	// below would be dropped for that, not for having been sent.
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Roles: runtime.Roles{Admins: []string{"slack:U0ADM"}}, Clock: clock,
		Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C0123"}}})
	h := startBotAt(t, env.NATS, newFakeSlack(t), clock.Now)
	q := question("job-esc", "q-esc") // 4h
	events := env.Record(t, bridge.StreamEvents, bridge.EventSubject("acme", "job-esc"))
	publishQuestion(t, env, q)
	h.posted(t, "q-esc")
	// The ladder: answerers at ¼, owner at ½, admins at ¾, then the timeout.
	dmTo := func(ch string) (apiCall, error) {
		for _, c := range h.fake.Calls("chat.postMessage") {
			if c.Str("channel") == ch {
				return c, nil
			}
		}
		return apiCall{}, fmt.Errorf("no DM in %s", ch)
	}
	step := func(advance time.Duration, ch string) apiCall {
		t.Helper()
		clock.Advance(advance)
		var dm apiCall
		testenv.CheckFor(t, wait, tick, func() (err error) {
			dm, err = dmTo(ch)
			return err
		})
		return dm
	}
	kev := step(time.Hour+time.Second, "D0KEV")
	owner := step(time.Hour, "D0OWNER")
	adm := step(time.Hour, "D0ADM")
	opened := map[string]bool{}
	for _, c := range h.fake.Calls("conversations.open") {
		opened[c.Str("users")] = true
	}
	if !opened["U0KEV"] || !opened["U0OWNER"] || !opened["U0ADM"] {
		t.Fatalf("conversations.open for %v", opened)
	}
	for name, c := range map[string]struct {
		dm   apiCall
		left string
	}{"answerer": {kev, "2:59:59"}, "owner": {owner, "1:59:59"}, "admin": {adm, "0:59:59"}} {
		text := c.dm.Str("text")
		if !strings.Contains(text, "Which colour should the report use?") || !strings.Contains(text, "https://acme.slack.com/archives/C0123/p") ||
			!strings.Contains(text, "Time left: "+c.left+" (until ") {
			t.Errorf("%s DM: %q", name, text)
		}
	}
	for name, c := range map[string]apiCall{"owner": owner, "admin": adm} {
		if !strings.Contains(c.Str("text"), "Asked of <@U0KEV> since <!date^") {
			t.Errorf("%s DM does not say who was asked since when: %q", name, c.Str("text"))
		}
	}
	if strings.Contains(kev.Str("text"), "Asked of") {
		t.Errorf("answerer DM carries the owner's details: %q", kev.Str("text"))
	}
	// One DM per person and step, even if the runtime's events come again
	// while the question waits.
	var ladder []bridge.Event
	testenv.CheckFor(t, wait, tick, func() error {
		ladder = ladder[:0]
		for _, ev := range events.Events() {
			if ev.Type == bridge.EventEscalated || ev.Type == bridge.EventReminded {
				ladder = append(ladder, ev)
			}
		}
		if len(ladder) != 3 {
			return fmt.Errorf("%d ladder events recorded (%s), want 3", len(ladder), events.EventTypes())
		}
		return nil
	})
	for _, ev := range ladder {
		if err := h.bot.handleEvent(context.Background(), &ev, engine.Delivery{Attempt: 2}); err != nil {
			t.Fatal(err)
		}
	}
	dms := 0
	for _, c := range h.fake.Calls("chat.postMessage") {
		if strings.HasPrefix(c.Str("channel"), "D") {
			dms++
		}
	}
	if dms != 3 {
		t.Fatalf("%d DMs after the ladder's events came again, want 3", dms)
	}
	clock.Advance(time.Hour)
	out := awaitOutcome(t, env, q)
	if out.Outcome != bridge.OutcomeTimedOut {
		t.Fatalf("resume: %+v", out)
	}
	h.updatedBy(t, h.cardTS(t, q), "Nobody answered within 4:00:00", clock.Now)
}

func TestRoutedThreadAndPrivateRefusalFallback(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	q := question("job-rt", "q-rt")
	q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0777", ThreadTS: "1600000000.000042"}}
	publishEvent(t, n, askedEvent(q))
	d := deliveredTS(t, n, deliveries, "q-rt")
	posts := fake.Calls("chat.postMessage")
	if !d.OK || len(posts) != 1 || posts[0].Str("channel") != "C0777" || posts[0].Str("thread_ts") != "1600000000.000042" {
		t.Fatalf("routed thread: %+v, %d posts", d, len(posts))
	}
	// A refusal of a modal submission (no response_url) and one whose
	// reply_to names a foreign URL: both go through chat.postEphemeral.
	for i, to := range []map[string]string{
		{replyUser: "U0KEV", replyChannel: "C0777", replyThread: "1600000000.000042"},
		{replyUser: "U0KEV", replyChannel: "C0777", replyThread: "1600000000.000042", replyResponseURL: "http://169.254.169.254/latest"},
	} {
		publishEvent(t, n, bridge.Event{Type: bridge.EventRefused, EventID: fmt.Sprintf("ob-r%d", i), Tenant: "acme", JobID: "job-rt", QuestionID: "q-rt",
			TaskVersion: 1, To: "slack:U0KEV", Reason: bridge.RefusedInvalid, Text: "copies: must be at most 9",
			AttemptID: fmt.Sprintf("slack-view-V%d", i), ReplyTo: to})
	}
	testenv.CheckFor(t, wait, tick, func() error {
		if got := len(fake.Calls("chat.postEphemeral")); got != 2 {
			return fmt.Errorf("%d ephemerals", got)
		}
		return nil
	})
	for _, c := range fake.Calls("chat.postEphemeral") {
		if c.Str("channel") != "C0777" || c.Str("user") != "U0KEV" || c.Str("thread_ts") != "1600000000.000042" || c.Str("text") != "copies: must be at most 9" {
			t.Fatalf("ephemeral: %v", c.Form)
		}
	}
	if got := len(fake.Calls("response_url")); got != 0 {
		t.Fatalf("POSTed to a response_url that is not Slack's")
	}
	// A refusal for someone else's attempt (the console's) is not ours to tell.
	publishEvent(t, n, bridge.Event{Type: bridge.EventRefused, EventID: "ob-r9", Tenant: "acme", JobID: "job-rt", QuestionID: "q-rt",
		TaskVersion: 1, To: "console:ana", Text: "no", ReplyTo: map[string]string{"nonce": "x"}})
	// Settled before it was shown: a late asked posts nothing.
	q2 := question("job-rt", "q-late")
	q2.Route = q.Route
	publishEvent(t, n, bridge.Event{Type: bridge.EventCancelled, Tenant: "acme", JobID: "job-rt", QuestionID: "q-late", TaskVersion: 1})
	publishEvent(t, n, askedEvent(q2))
	// A marker question after both proves they were handled (one queue per job).
	q3 := question("job-rt", "q-mark")
	q3.Route = q.Route
	publishEvent(t, n, askedEvent(q3))
	deliveredTS(t, n, deliveries, "q-mark")
	if got := len(fake.Calls("chat.postMessage")); got != 2 {
		t.Fatalf("%d posts, want q-rt and q-mark only", got)
	}
	if got := len(fake.Calls("chat.postEphemeral")); got != 2 {
		t.Fatalf("%d ephemerals, want 2", got)
	}
	_ = h
}
