package slack

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// queueOf is the worker queue Run gives a job's events.
func queueOf(b *Bot, job string) int {
	return engine.QueueOf(bridge.EventSubject("acme", job), b.workers)
}

// sameQueue returns two job names, one starting with each prefix, whose
// events Run hands to the same worker.
func sameQueue(t *testing.T, b *Bot, p1, p2 string) (string, string) {
	t.Helper()
	for i := range 100 {
		for j := range 100 {
			a, c := fmt.Sprintf("%s-%d", p1, i), fmt.Sprintf("%s-%d", p2, j)
			if queueOf(b, a) == queueOf(b, c) {
				return a, c
			}
		}
	}
	t.Fatal("no two jobs share a queue")
	return "", ""
}

// logLine is one record of the adapter's JSON log.
type logLine struct {
	Time     time.Time `json:"time"`
	Msg      string    `json:"msg"`
	Question string    `json:"question"`
	Op       string    `json:"op"`
}

func logLines(t *testing.T, logs *testenv.LockedBuffer) []logLine {
	t.Helper()
	var out []logLine
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}

// waitHeld waits until the adapter has read the 429 on a call of op and
// holds the channel: a call the fake has received is not yet one whose
// answer the adapter has read.
func waitHeld(t *testing.T, logs *testenv.LockedBuffer, op string) {
	t.Helper()
	testenv.CheckFor(t, wait, tick, func() error {
		for _, l := range logLines(t, logs) {
			if l.Msg == "slack: rate limited" && l.Op == op {
				return nil
			}
		}
		return fmt.Errorf("the 429 on %s was not read yet", op)
	})
}

// cardIn returns the card posted in channel for question id, if any.
func cardIn(fake *fakeSlack, channel, id string) (apiCall, bool) {
	for _, c := range fake.Calls("chat.postMessage") {
		if c.Str("channel") == channel && strings.Contains(actionsBlock(c), "."+id+".") {
			return c, true
		}
	}
	return apiCall{}, false
}

// TestLongRetryAfterHoldsOnlyItsChannel checks a 429 on chat.postMessage
// asking to wait longer than a call waits in-process holds that channel
// without holding the worker: a later event for the same channel is put
// off at once rather than slept on, so an event behind it for another
// channel goes at once, and nothing is posted in the held channel before
// Slack's Retry-After has passed.
func TestLongRetryAfterHoldsOnlyItsChannel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
	}{
		{"429", 429},
		{"200 ratelimited", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := plainNATS(t)
			fake := newFakeSlack(t)
			logs := &testenv.LockedBuffer{}
			h := startBot(t, n, fake, func(o *Options) { o.Logger = slog.New(slog.NewJSONHandler(logs, nil)) }) // waits up to 5 s in-process
			const hold = 6 * time.Second
			fake.fail("chat.postMessage", tc.status, map[string]string{"Retry-After": "6"}, `{"ok":false,"error":"ratelimited"}`)
			first := question("job-first", "q-first")
			publishEvent(t, n, askedEvent(first))
			testenv.CheckFor(t, wait, tick, func() error {
				if len(fake.Calls("chat.postMessage")) == 0 {
					return fmt.Errorf("no post yet")
				}
				return nil
			})
			limited := fake.Calls("chat.postMessage")[0].At
			waitHeld(t, logs, "chat.postMessage")

			// A job in the held channel, then one in another channel, both
			// handled by one worker.
			heldJob, otherJob := sameQueue(t, h.bot, "job-held", "job-other")
			held := question(heldJob, "q-held")
			other := question(otherJob, "q-other")
			other.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0999"}}
			publishEvent(t, n, askedEvent(held))
			publishEvent(t, n, askedEvent(other))
			testenv.CheckFor(t, wait, tick, func() error {
				if _, ok := cardIn(fake, "C0999", "q-other"); !ok {
					return fmt.Errorf("no card in C0999")
				}
				return nil
			})
			// Order, not time: the card for C0999 goes before C0123 is
			// called again, which Slack's wait puts at least 6 s on.
			if calls := callsIn(fake, "chat.postMessage", "C0123"); len(calls) > 1 {
				t.Errorf("the card for C0999 waited behind the 429 in C0123: C0123 was called again first")
			}
			testenv.CheckFor(t, 3*wait, tick, func() error {
				for _, id := range []string{"q-first", "q-held"} {
					if _, ok := cardIn(fake, "C0123", id); !ok {
						return fmt.Errorf("no card for %s in C0123", id)
					}
				}
				return nil
			})
			for _, c := range fake.Calls("chat.postMessage")[1:] {
				if c.Str("channel") == "C0123" && c.At.Sub(limited) < hold {
					t.Errorf("a post in C0123 %v after Slack asked to wait %v", c.At.Sub(limited), hold)
				}
			}
		})
	}
}

// TestLongRetryAfterOnACardUpdateIsWaitedOut checks a settled card whose
// update Slack rate-limits for longer than a call waits is tried again no
// sooner than Slack asked (not after the adapter's own backoff, to be
// refused again), and that an event behind it for another channel goes
// at once.
func TestLongRetryAfterOnACardUpdateIsWaitedOut(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	logs := &testenv.LockedBuffer{}
	h := startBot(t, n, fake, func(o *Options) { o.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	heldJob, otherJob := sameQueue(t, h.bot, "job-upd", "job-rem")
	q := question(heldJob, "q-upd")
	q2 := question(heldJob, "q-upd2")
	for _, x := range []*bridge.Question{q, q2} {
		publishEvent(t, n, askedEvent(x))
		if d := deliveredTS(t, n, deliveries, x.QuestionID); !d.OK {
			t.Fatalf("delivery %+v", d.Failure)
		}
	}
	// Longer than the harness's in-process wait (5 s) plus the adapter's
	// first backoff (2 s): a redelivery after the backoff would still be held.
	const hold = 8 * time.Second
	fake.fail("chat.update", 429, map[string]string{"Retry-After": "8"}, `{"ok":false,"error":"ratelimited"}`)
	publishEvent(t, n, bridge.Event{Type: bridge.EventAnswered, Tenant: "acme", JobID: heldJob, QuestionID: "q-upd", TaskVersion: 1,
		By: "slack:U0KEV", ByName: "kevin", AnswerText: "blue", Answer: json.RawMessage(`"blue"`)})
	testenv.CheckFor(t, wait, tick, func() error {
		if len(fake.Calls("chat.update")) == 0 {
			return fmt.Errorf("no update yet")
		}
		return nil
	})
	limited := fake.Calls("chat.update")[0].At
	waitHeld(t, logs, "chat.update")
	// A second update in the held channel, then a reminder DM, one worker.
	publishEvent(t, n, bridge.Event{Type: bridge.EventCancelled, Tenant: "acme", JobID: heldJob, QuestionID: "q-upd2", TaskVersion: 1})
	rem := question(otherJob, "q-rem")
	publishEvent(t, n, bridge.Event{Type: bridge.EventReminded, Tenant: "acme", JobID: otherJob, QuestionID: "q-rem", TaskVersion: 1,
		Step: bridge.TargetAnswerers, Targets: []string{"slack:U0KEV"}, Question: rem, Deadline: time.Now().Add(time.Hour)})
	testenv.CheckFor(t, wait, tick, func() error {
		for _, c := range fake.Calls("chat.postMessage") {
			if c.Str("channel") == "D0KEV" {
				return nil
			}
		}
		return fmt.Errorf("no reminder DM")
	})
	// Order, not time: the reminder goes before the held channel's card
	// is updated again, which Slack's wait puts at least 8 s on.
	if got := len(fake.Calls("chat.update")); got > 1 {
		t.Errorf("the reminder waited behind the rate-limited card update: %d updates came first", got)
	}
	testenv.CheckFor(t, 3*wait, tick, func() error {
		if got := len(fake.Calls("chat.update")); got < 3 {
			return fmt.Errorf("%d updates, want both cards updated after the rate-limited try", got)
		}
		return nil
	})
	for _, c := range fake.Calls("chat.update")[1:] {
		if c.At.Sub(limited) < hold {
			t.Errorf("a card update %v after Slack asked to wait %v", c.At.Sub(limited), hold)
		}
	}
	// Each event was tried again once, after the wait, not sooner.
	tries := map[string][]time.Time{}
	for _, l := range logLines(t, logs) {
		if strings.HasPrefix(l.Msg, "slack: event") && (l.Question == "q-upd" || l.Question == "q-upd2") {
			tries[l.Question] = append(tries[l.Question], l.Time)
		}
	}
	for id, at := range tries {
		if len(at) > 1 {
			t.Errorf("%s: put off %d times (at %v), want once until Slack's wait is over", id, len(at), at)
		}
	}
}

// TestFractionalRetryAfterIsWaitedOut checks a 429 whose Retry-After has a
// fraction (1.5, as a proxy may send) is waited out like any other, not
// taken for an unknown error that fails the question.
func TestFractionalRetryAfterIsWaitedOut(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	startBot(t, n, fake)
	fake.fail("chat.postMessage", 429, map[string]string{"Retry-After": "1.5"}, `{"ok":false,"error":"ratelimited"}`)
	q := question("job-frac", "q-frac")
	publishEvent(t, n, askedEvent(q))
	testenv.CheckFor(t, wait, tick, func() error {
		if _, ok := cardIn(fake, "C0123", "q-frac"); !ok {
			return fmt.Errorf("no card yet")
		}
		return nil
	})
	// The refused post (the job thread's parent), its retry, the card.
	calls := fake.Calls("chat.postMessage")
	if len(calls) != 3 {
		t.Fatalf("%d posts, want the refused one, its retry after the wait, and the card", len(calls))
	}
	if d := calls[1].At.Sub(calls[0].At); d < 1500*time.Millisecond {
		t.Errorf("posted again %v after Slack asked to wait 1.5 s", d)
	}
}

// TestFirstQuestionTakesTwoTurnsInARow checks a job's first question in a
// channel, which posts the thread parent and then the card, is given two
// turns in a row: another job asking at the same moment comes after both,
// so each card follows its parent instead of every job's parent.
func TestFirstQuestionTakesTwoTurnsInARow(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	p := newPacer(time.Second, 1)
	p.now = func() time.Time { return now }
	var a, b engine.Reserved
	ctxA, ctxB := engine.WithReserved(context.Background(), &a), engine.WithReserved(context.Background(), &b)
	if err := p.readyPair(ctxA, "C1"); err != nil {
		t.Fatalf("job a's first turn is now: %v", err)
	}
	var hold *engine.Hold
	if err := p.readyPair(ctxB, "C1"); !errors.As(err, &hold) || !hold.Until.Equal(now.Add(2*time.Second)) {
		t.Fatalf("job b's turn = %v; want a hold until after job a's two (%v)", err, now.Add(2*time.Second))
	}
	// Job a posts its parent in its first turn; its card has the second.
	if err := p.take(ctxA, "C1", time.Minute); err != nil {
		t.Fatalf("job a's parent: %v", err)
	}
	p.handOn(ctxA, "C1")
	if err := p.take(ctxA, "C1", time.Minute); !errors.As(err, &hold) || !hold.Until.Equal(now.Add(time.Second)) {
		t.Fatalf("job a's card = %v; want its reserved turn at %v", err, now.Add(time.Second))
	}
}
