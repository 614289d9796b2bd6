package slack

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// dmsIn returns the texts of the messages Slack holds in a DM channel
// (a post that never got an answer is not among them).
func dmsIn(f *fakeSlack, channel string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range f.msgs {
		if m.Channel == channel {
			out = append(out, m.Text)
		}
	}
	return out
}

// TestStopDuringAReminderDoesNotLoseIt checks that an adapter stopped
// (a deploy, a scale-down) while it sends a reminder DM leaves the DM to
// whoever runs next: the step is sent once after the restart, not
// dropped because the stopped adapter had claimed it.
func TestStopDuringAReminderDoesNotLoseIt(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"conversations.open", "chat.postMessage"} {
		t.Run(method, func(t *testing.T) {
			n := plainNATS(t)
			fake := newFakeSlack(t)
			h := startBot(t, n, fake)
			if method == "chat.postMessage" {
				// The DM channel is known; the post itself is in flight.
				h.bot.dmMu.Lock()
				h.bot.dmChannels["U0KEV"] = "D0KEV"
				h.bot.dmMu.Unlock()
			}
			fake.hangNext(method)
			q := question("job-stop", "q-stop")
			now := time.Now().UTC()
			publishEvent(t, n, bridge.Event{Type: bridge.EventReminded, EventID: "ob-stop-1", Tenant: "acme", JobID: "job-stop",
				QuestionID: "q-stop", TaskVersion: 1, Step: bridge.TargetAnswerers, Targets: []string{"slack:U0KEV"},
				Question: q, AskedAt: now, Deadline: now.Add(4 * time.Hour)})
			testenv.CheckFor(t, wait, tick, func() error {
				if len(fake.Calls(method)) == 0 {
					return fmt.Errorf("no %s yet", method)
				}
				return nil
			})
			h.Stop()

			startBot(t, n, fake)
			testenv.CheckFor(t, wait, tick, func() error {
				if got := dmsIn(fake, "D0KEV"); len(got) != 1 || !strings.Contains(got[0], "Which colour") {
					return fmt.Errorf("DMs after the restart: %q", got)
				}
				return nil
			})
			consumerSettled(t, n, 1)
			if got := dmsIn(fake, "D0KEV"); len(got) != 1 {
				t.Fatalf("%d DMs, want 1", len(got))
			}
		})
	}
}

// TestStopDuringARefusalDoesNotLoseIt is the same for the private note
// that tells a person their answer was refused.
func TestStopDuringARefusalDoesNotLoseIt(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	fake.hangNext("chat.postEphemeral")
	publishEvent(t, n, bridge.Event{Type: bridge.EventRefused, EventID: "ob-stop-r", Tenant: "acme", JobID: "job-stop", QuestionID: "q-stop",
		TaskVersion: 1, To: "slack:U0KEV", Reason: bridge.RefusedInvalid, Text: "copies: must be at most 9", AttemptID: "slack-view-V1",
		ReplyTo: map[string]string{replyUser: "U0KEV", replyChannel: "C0123", replyThread: "1600000000.000042"}})
	testenv.CheckFor(t, wait, tick, func() error {
		if len(fake.Calls("chat.postEphemeral")) == 0 {
			return fmt.Errorf("no chat.postEphemeral yet")
		}
		return nil
	})
	h.Stop()

	startBot(t, n, fake)
	consumerSettled(t, n, 1)
	if got := len(fake.Calls("chat.postEphemeral")); got != 2 {
		t.Fatalf("%d chat.postEphemeral calls, want the cut one and one after the restart", got)
	}
}

// TestRouteThreadWithoutChannelUsesTheDefaultChannel checks a question
// whose route names a Slack thread but no channel is shown in that
// thread of ASK_SLACK_CHANNEL, not in a new job thread beside it.
func TestRouteThreadWithoutChannelUsesTheDefaultChannel(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	q := question("job-rtd", "q-rtd")
	q.Route = &bridge.Route{Slack: &bridge.SlackRoute{ThreadTS: "1600000000.000042"}}
	publishEvent(t, n, askedEvent(q))
	d := deliveredTS(t, n, deliveries, "q-rtd")
	posts := fake.Calls("chat.postMessage")
	if !d.OK || d.Message == nil || d.Message.Thread != "1600000000.000042" || len(posts) != 1 ||
		posts[0].Str("channel") != "C0123" || posts[0].Str("thread_ts") != "1600000000.000042" {
		t.Fatalf("delivery %+v; %d posts, the first in %q thread %q", d, len(posts), posts[0].Str("channel"), posts[0].Str("thread_ts"))
	}
}

// TestStopDuringAPostShowsTheCardAfterTheRestart checks an adapter
// stopped while it posts a card (or opens the job's thread) leaves the
// post to whoever runs next at once, not after the two minutes a crashed
// replica's claim is respected: the next one looks for the post Slack may
// have taken, and adopts it or posts.
func TestStopDuringAPostShowsTheCardAfterTheRestart(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		threads int // thread parents posted before the stop
	}{{"card", 1}, {"thread parent", 0}} {
		t.Run(c.name, func(t *testing.T) {
			n := plainNATS(t)
			fake := newFakeSlack(t)
			h := startBot(t, n, fake)
			deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
			q := question("job-stop-post", "q-stop-post")
			if c.threads == 1 {
				// The job's thread is open; the card's post is cut short.
				first := question("job-stop-post", "q-first")
				publishEvent(t, n, askedEvent(first))
				deliveredTS(t, n, deliveries, "q-first")
			}
			fake.hangNext("chat.postMessage")
			publishEvent(t, n, askedEvent(q))
			testenv.CheckFor(t, wait, tick, func() error {
				if got := len(fake.Calls("chat.postMessage")); got != 2*c.threads+1 {
					return fmt.Errorf("%d posts", got)
				}
				return nil
			})
			h.Stop()

			startBot(t, n, fake)
			d := deliveredTS(t, n, deliveries, "q-stop-post")
			if !d.OK {
				t.Fatalf("delivery after the restart: %+v", d)
			}
			if got := fake.marked(questionMetaJSON("job-stop-post", "q-stop-post", 1)); len(got) != 1 {
				t.Fatalf("%d cards of the question in Slack, want 1", len(got))
			}
			if got := fake.marked(threadMetaJSON("job-stop-post")); len(got) != 1 {
				t.Fatalf("%d thread parents of the job in Slack, want 1", len(got))
			}
		})
	}
}

// TestStopHandsEventsBackAtOnce checks that events a stop cuts short
// reach the next adapter at once, stop after stop: handed back only once
// the stopped adapter no longer pulls, not redelivered to its dead pull
// request and left there until the consumer's AckWait.
func TestStopHandsEventsBackAtOnce(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	for i := range 8 {
		user := fmt.Sprintf("U0STOP%d", i)
		fake.hangNext("conversations.open")
		q := question("job-stops", "q-stops")
		now := time.Now().UTC()
		publishEvent(t, n, bridge.Event{Type: bridge.EventReminded, EventID: fmt.Sprintf("ob-stops-%d", i), Tenant: "acme", JobID: "job-stops",
			QuestionID: "q-stops", TaskVersion: 1, Step: bridge.TargetAnswerers, Targets: []string{"slack:" + user},
			Question: q, AskedAt: now, Deadline: now.Add(4 * time.Hour)})
		testenv.CheckFor(t, wait, tick, func() error {
			for _, c := range fake.Calls("conversations.open") {
				if c.Str("users") == user {
					return nil
				}
			}
			return fmt.Errorf("stop %d: no conversations.open for %s yet", i, user)
		})
		h.Stop()
		h = startBot(t, n, fake)
		testenv.CheckFor(t, testenv.Patience, tick, func() error {
			if got := dmsIn(fake, "D"+strings.TrimPrefix(user, "U")); len(got) != 1 {
				return fmt.Errorf("stop %d: %d DMs to %s after the restart, want 1", i, len(got), user)
			}
			return nil
		})
	}
}

// TestEventsOfAJobAreHandledInOrder checks the events of one job are
// handled in the order published while jobs go side by side: a question
// answered at once after it was asked is posted and then its card
// updated (handled the other way round, the answer would find no card,
// and the asked event would post nothing).
func TestEventsOfAJobAreHandledInOrder(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	const jobs = 12
	for i := range jobs {
		q := question(fmt.Sprintf("job-o%d", i), "q-o")
		ev := askedEvent(q)
		publishEvent(t, n, ev)
		publishEvent(t, n, bridge.Event{Type: bridge.EventAnswered, Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID,
			TaskVersion: q.TaskVersion, By: "slack:U0KEV", ByName: "kevin", Via: "slack", Answer: []byte(`"red"`), AnswerText: "red",
			Question: q, AskedAt: ev.AskedAt, Deadline: ev.Deadline})
	}
	testenv.CheckFor(t, wait, tick, func() error {
		cards := map[string]string{}
		for _, d := range deliveries.All() {
			if d.OK && d.Message != nil {
				cards[d.JobID] = d.Message.MessageID
			}
		}
		if len(cards) != jobs {
			return fmt.Errorf("%d of %d questions shown", len(cards), jobs)
		}
		updated := map[string]bool{}
		for _, c := range fake.Calls("chat.update") {
			updated[c.Str("ts")] = true
		}
		for job, ts := range cards {
			if !updated[ts] {
				return fmt.Errorf("%s: the card %s was not updated with its answer", job, ts)
			}
		}
		return nil
	})
}
