package discord

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// refuse publishes the refusal the runtime sends for an attempt.
func (h *harness) refuse(at bridge.AnswerAttempt, reason, text string) {
	h.publishEvent(bridge.Event{Type: bridge.EventRefused, Tenant: at.Tenant, JobID: at.JobID, QuestionID: at.QuestionID,
		TaskVersion: at.TaskVersion, To: at.By, Reason: reason, Text: text, AttemptID: at.AttemptID, ReplyTo: at.ReplyTo})
}

// followups waits for n follow-ups on an interaction token.
func (f *fakeDiscord) followups(t *testing.T, token string, n int) []fakeReq {
	t.Helper()
	var out []fakeReq
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		out = f.requests("POST", "/webhooks/"+testApp+"/"+token)
		if len(out) != n {
			return fmt.Errorf("%d follow-ups on the interaction, want %d", len(out), n)
		}
		return nil
	})
	return out
}

func TestStrangerRefusedEphemerally(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.publishEvent(asked(colorQuestion()))
	msg := h.posted(channelA, 1)
	h.interact(h.click(stranger, findComponent(t, msg, "red")["custom_id"].(string)))
	at := h.waitAttempts(1)[0]
	text := "You can't answer this question: it asks " + "discord:" + kevin.ID + "."
	h.refuse(at, bridge.RefusedForbidden, text)
	f := h.fake.followups(t, at.ReplyTo["token"], 1)[0]
	body := f.JSON(t)
	if body["flags"] != float64(64) || body["content"] != text {
		t.Fatalf("follow-up = %s, want the refusal, ephemeral", f.Body)
	}
	if !strings.Contains(f.Query, "wait=true") {
		t.Errorf("follow-up query = %q", f.Query)
	}
	// The card is untouched.
	if n := len(h.fake.requests("PATCH", "/channels/")); n != 0 {
		t.Fatalf("a refusal edited the card (%d edits)", n)
	}
	if n := len(components(h.fake.message(msg["id"].(string)))); n != 7 {
		t.Fatalf("the card has %d components after a refusal, want 7", n)
	}
	// Another front-end's refusal is not ours to show.
	h.publishEvent(bridge.Event{Type: bridge.EventRefused, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
		To: "slack:U1", Reason: bridge.RefusedForbidden, Text: "no", AttemptID: "slack-1", ReplyTo: map[string]string{"response_url": "x"}})
	// ...and a redelivered refusal is shown once: publish the same again
	// under a new event id; the attempt's refusal was already told.
	h.refuse(at, bridge.RefusedForbidden, text)
	h.markerEvent()
	if n := len(h.fake.requests("POST", "/webhooks/")); n != 1 {
		t.Fatalf("%d follow-ups, want 1", n)
	}
}

// markerEvent publishes events the bot handles visibly, one in each of
// the event loop's worker queues, and waits for them, so every event
// published before them has been processed.
func (h *harness) markerEvent() {
	h.t.Helper()
	jobs := map[string]bool{}
	for covered := map[int]bool{}; len(covered) < engine.DefaultWorkers; {
		job := "m-" + h.newSnowflake()
		if queue := engine.QueueOf(bridge.EventSubject("marker", job), engine.DefaultWorkers); !covered[queue] {
			covered[queue], jobs[job] = true, true
		}
	}
	for job := range jobs {
		q := bridge.Question{Tenant: "marker", JobID: job, QuestionID: "q", Question: "marker", Choices: []string{"x"}}
		q.Route = &bridge.Route{Discord: &bridge.DiscordRoute{ChannelID: "1999999999999999999"}}
		h.publishEvent(asked(q))
	}
	testenv.CheckFor(h.t, testenv.Patience, 10*time.Millisecond, func() error {
		seen := 0
		for _, d := range h.deliveriesNow() {
			if jobs[d.JobID] {
				seen++
			}
		}
		if seen < len(jobs) {
			return fmt.Errorf("%d of %d markers processed", seen, len(jobs))
		}
		return nil
	})
}

func TestStaleCardRefused(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	old := colorQuestion()
	old.TaskVersion = 2
	h.publishEvent(asked(old))
	msg := h.posted(channelA, 1)
	// The task moved on: version 2 is superseded, version 3 asked.
	h.publishEvent(bridge.Event{Type: bridge.EventSuperseded, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 2,
		Text: bridge.SupersededText(3)})
	h.publishEvent(asked(colorQuestion()))
	h.posted(msg["id"].(string), 1) // v3 in the job's thread
	// Kevin clicks the old card (an old client still shows the buttons).
	h.interact(h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string)))
	at := h.waitAttempts(1)[0]
	if at.TaskVersion != 2 {
		t.Fatalf("attempt version = %d, want the card's 2", at.TaskVersion)
	}
	text := "This question was asked for task version 2; the task is now at version 3."
	h.refuse(at, bridge.RefusedStale, text)
	f := h.fake.followups(t, at.ReplyTo["token"], 1)[0]
	if b := f.JSON(t); b["flags"] != float64(64) || b["content"] != text {
		t.Fatalf("follow-up = %s", f.Body)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		got := fieldValue(embedOf(t, h.fake.message(msg["id"].(string))), "Outcome")
		if !strings.Contains(got, "Superseded by task version 3") {
			return fmt.Errorf("old card outcome = %q", got)
		}
		return nil
	})
}

func TestDoubleClickTwoAttemptsOneID(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.publishEvent(asked(colorQuestion()))
	msg := h.posted(channelA, 1)
	id := findComponent(t, msg, "blue")["custom_id"].(string)
	h.interact(h.click(kevin, id))
	h.interact(h.click(kevin, id))
	ats := h.waitAttempts(2)
	// Two interactions are two attempts with their own ids; the runtime
	// settles the question once (see the end-to-end test).
	if ats[0].AttemptID == ats[1].AttemptID || ats[0].TaskVersion != 3 || ats[1].TaskVersion != 3 {
		t.Fatalf("attempts = %+v", ats)
	}
	// One outcome, delivered twice (redelivery), edits to the same result.
	ans := bridge.Event{Type: bridge.EventAnswered, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
		By: ats[0].By, ByName: "kevin", Answer: json.RawMessage(`"blue"`), AnswerText: "blue", At: time.Now().UTC()}
	h.publishEvent(ans)
	ans.EventID = "ob-again"
	h.publishEvent(ans)
	h.markerEvent()
	if n := len(h.fake.requests("PATCH", "/channels/")); n != 1 {
		t.Fatalf("%d edits for one outcome, want 1", n)
	}
}

// TestRefusalOvertakingTheResponseIsRetried checks a refusal whose
// follow-up reaches Discord before the bot's response to the interaction
// (Discord answers an unknown webhook, 10015) is tried again, not dropped
// as if the token had expired.
func TestRefusalOvertakingTheResponseIsRetried(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{tweak: func(b *Bot) { b.backoff = func(uint64) time.Duration { return 10 * time.Millisecond } }})
	h.publishEvent(asked(colorQuestion()))
	msg := h.posted(channelA, 1)
	h.interact(h.click(stranger, findComponent(t, msg, "red")["custom_id"].(string)))
	at := h.waitAttempts(1)[0]
	token := at.ReplyTo["token"]
	h.fake.failOn(failRule{Method: "POST", Prefix: "/webhooks/" + testApp + "/" + token, Status: 404, Code: 10015, Times: 1})
	text := "You can't answer this question: it asks discord:" + kevin.ID + "."
	h.publishEvent(bridge.Event{Type: bridge.EventRefused, Tenant: at.Tenant, JobID: at.JobID, QuestionID: at.QuestionID,
		TaskVersion: at.TaskVersion, To: at.By, Reason: bridge.RefusedForbidden, Text: text, AttemptID: at.AttemptID,
		ReplyTo: at.ReplyTo, At: time.Now()})
	tries := h.fake.followups(t, token, 2)
	if body := tries[1].JSON(t); body["content"] != text {
		t.Fatalf("second try = %s", tries[1].Body)
	}
}

// TestRefusalOnADeadTokenIsNotRetried checks a refusal whose interaction
// token is dead is not tried again, however fresh the refused event: an
// unknown webhook (10015) for an interaction made more than a few seconds
// ago is no refusal overtaking the bot's own response, and an interaction
// older than 15 minutes is tried once: its id's time is read against this
// host's clock, which is no proof that the token is dead. The
// interaction's age is in its id (a snowflake).
func TestRefusalOnADeadTokenIsNotRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		age   time.Duration
		tries int
	}{
		{"unknown webhook 11 s after the interaction", 11 * time.Second, 1},
		{"interaction older than its token", 16 * time.Minute, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := start(t, harnessOptions{tweak: func(b *Bot) { b.backoff = func(uint64) time.Duration { return 10 * time.Millisecond } }})
			id := snowflakeAt(time.Now().Add(-tc.age))
			token := "itoken-" + id
			h.fake.failOn(failRule{Method: "POST", Prefix: "/webhooks/" + testApp + "/" + token, Status: 404, Code: 10015, Times: -1})
			// The runtime decided just now (it was away, or the answers
			// stream was read late): the event is fresh, the token is not.
			h.publishEvent(bridge.Event{Type: bridge.EventRefused, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
				To: "discord:" + stranger.ID, Reason: bridge.RefusedForbidden, Text: "You can't answer this question: it asks someone else.",
				AttemptID: "discord-" + id, At: time.Now(),
				ReplyTo: map[string]string{replyPlatform: bridge.PlatformDiscord, replyAppID: testApp, replyToken: token, replyChannel: channelA}})
			// Handled once the bot has recorded the refusal as told (or as
			// not to be told).
			testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
				if done, err := h.bot.wasSeen(h.ctx, seenKey("refused", "discord-"+id)); err != nil || !done {
					return fmt.Errorf("refusal not handled yet (%v); %d tries", err, len(h.fake.requests("POST", "/webhooks/")))
				}
				return nil
			})
			if n := len(h.fake.requests("POST", "/webhooks/")); n != tc.tries {
				t.Fatalf("%d follow-up tries on a dead token, want %d", n, tc.tries)
			}
		})
	}
}

// TestRefusalWithAnOldLookingInteractionIdIsTold checks a refusal is
// told on its token whatever time the interaction id seems to carry: an id
// from another clock (a host clock running ahead of Discord's, a test's
// fixed ids such as 1400000000000000001) is no proof that the token is
// dead. Only Discord's "unknown webhook" ends the try.
func TestRefusalWithAnOldLookingInteractionIdIsTold(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{tweak: func(b *Bot) { b.backoff = func(uint64) time.Duration { return 10 * time.Millisecond } }})
	for _, id := range []string{"1400000000000000001", "42"} {
		token := "itoken-" + id
		h.publishEvent(bridge.Event{Type: bridge.EventRefused, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
			To: "discord:" + stranger.ID, Reason: bridge.RefusedForbidden, Text: "You can't answer this question: it asks someone else.",
			AttemptID: "discord-" + id, At: time.Now(),
			ReplyTo: map[string]string{replyPlatform: bridge.PlatformDiscord, replyAppID: testApp, replyToken: token, replyChannel: channelA}})
		testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
			for _, r := range h.fake.requests("POST", "/webhooks/"+testApp+"/"+token) {
				if strings.Contains(string(r.Body), "it asks someone else") {
					return nil
				}
			}
			return fmt.Errorf("interaction %s: no follow-up told the refusal", id)
		})
	}
}

// TestRefusalAfterA5xxIsToldNotLost checks a refusal whose follow-up gets
// Discord's 502 (after discordgo's own retry too) is tried again later and
// reaches the clicker. Discord's follow-ups take no nonce, so a 5xx after
// Discord stored the message cannot be told from one before: a rare
// duplicate private notice is preferred to a clicker never told why their
// answer was not taken (docs/discord.md).
func TestRefusalAfterA5xxIsToldNotLost(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{tweak: func(b *Bot) { b.backoff = func(uint64) time.Duration { return 10 * time.Millisecond } }})
	h.publishEvent(asked(colorQuestion()))
	msg := h.posted(channelA, 1)
	h.interact(h.click(stranger, findComponent(t, msg, "red")["custom_id"].(string)))
	at := h.waitAttempts(1)[0]
	token := at.ReplyTo["token"]
	h.fake.failOn(failRule{Method: "POST", Prefix: "/webhooks/" + testApp + "/" + token, Status: 502, Times: 2})
	text := "You can't answer this question: it asks discord:" + kevin.ID + "."
	h.refuse(at, bridge.RefusedForbidden, text)
	tries := h.fake.followups(t, token, 3) // 502, discordgo's retry: 502, the event's retry
	if body := tries[2].JSON(t); body["content"] != text || body["flags"] != float64(64) {
		t.Fatalf("last try = %s", tries[2].Body)
	}
	h.markerEvent()
	if n := len(h.fake.requests("POST", "/webhooks/")); n != 3 {
		t.Fatalf("%d follow-up tries, want 3 (told once it got through)", n)
	}
}
