package slack

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
	"github.com/nats-io/nats.go/jetstream"
)

// postCut sends a signed Slack request whose connection is cut before
// any answer: the error a client sees from a replica that died.
func postCut(t *testing.T, url, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", sign(testSecret, ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("the click cut off before its publication was answered %d", resp.StatusCode)
	}
}

// TestClickRetriedAfterAReplicaDiedBeforePublishing cuts a click off
// between its double-click claim and the publication of its attempt (the
// replica's death, as a kill -9 leaves it: the claim written, nothing
// published, no answer). The person's retry of the same button within
// the fold window, wherever it lands, is acknowledged with its attempt
// recorded: the question is answered and the job resumed once.
func TestClickRetriedAfterAReplicaDiedBeforePublishing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		retryOn func(t *testing.T, env *testenv.Env, fake *fakeSlack, dead, other *harness) *harness
	}{
		{"the other replica", func(_ *testing.T, _ *testenv.Env, _ *fakeSlack, dead, other *harness) *harness {
			dead.Stop()
			return other
		}},
		{"the replica started again", func(t *testing.T, env *testenv.Env, fake *fakeSlack, dead, other *harness) *harness {
			dead.Stop()
			other.Stop()
			return startBot(t, env.NATS, fake)
		}},
		{"the same replica, its connection cut", func(_ *testing.T, _ *testenv.Env, _ *fakeSlack, dead, _ *harness) *harness {
			dead.bot.clickClaimed.Store(nil)
			return dead
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := testenv.Start(t, testenv.Options{Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C0123"}}})
			fake := newFakeSlack(t)
			a, b := startBot(t, env.NATS, fake), startBot(t, env.NATS, fake)
			deliveries := collect[bridge.Delivery](t, env.NATS, bridge.PrefixDelivery+".>")
			resumes := collect[bridge.Resume](t, env.NATS, bridge.PrefixResume+".>")
			q := question("job-cut", "q-cut")
			publishQuestion(t, env, q)
			card := a.posted(t, "q-cut")
			ts := deliveredTS(t, env.NATS, deliveries, "q-cut").Message.MessageID

			die := func() { panic(http.ErrAbortHandler) }
			a.bot.clickClaimed.Store(&die)
			postCut(t, a.web.URL+"/slack/interactions", fake.click("U0KEV", "kevin", "trig-cut-1", "C0123", ts, actionsBlock(card), "choice.1", "blue", ""))
			if n := testenv.StreamCount(t, env.NATS, bridge.StreamAnswers, bridge.AnswerSubject("acme", "job-cut")); n != 0 {
				t.Fatalf("%d attempts recorded by the click cut off before its publication", n)
			}

			retry := tc.retryOn(t, env, fake, a, b)
			resp, body := retry.interact(fake.click("U0KEV", "kevin", "trig-cut-2", "C0123", ts, actionsBlock(card), "choice.1", "blue", ""))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("the retried click got %d %q, want 200", resp.StatusCode, body)
			}
			if n := testenv.StreamCount(t, env.NATS, bridge.StreamAnswers, bridge.AnswerSubject("acme", "job-cut")); n != 1 {
				t.Fatalf("%d attempts recorded once the retry was acknowledged, want 1", n)
			}
			out := awaitOutcome(t, env, q)
			if out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: blue" || out.By != "slack:U0KEV" {
				t.Fatalf("resume: %+v", out)
			}
			// A third click of the button is still the one attempt.
			if resp, body := retry.interact(fake.click("U0KEV", "kevin", "trig-cut-3", "C0123", ts, actionsBlock(card), "choice.1", "blue", "")); resp.StatusCode != http.StatusOK {
				t.Fatalf("a third click got %d %q, want 200", resp.StatusCode, body)
			}
			testenv.CheckFor(t, wait, tick, func() error {
				if n := len(resumes.All()); n == 0 {
					return fmt.Errorf("no resume seen yet")
				}
				return nil
			})
			if n := testenv.StreamCount(t, env.NATS, bridge.StreamAnswers, bridge.AnswerSubject("acme", "job-cut")); n != 1 {
				t.Fatalf("%d attempts recorded for one click and its retries, want 1", n)
			}
			if n := testenv.StreamCount(t, env.NATS, bridge.StreamResumes, bridge.ResumeSubject("acme", "job-cut")); n != 1 {
				t.Fatalf("%d resumes on the stream, want 1", n)
			}
		})
	}
}

// TestClickAfterTheFoldWindowIsANewClick: the same person's same click
// folds into their first for clickFold by the adapter's clock, and is a
// click of its own after it, though the claim's key has not expired on
// the server yet (a server removes expired keys late while it elects a
// leader): its attempt is published, not the first one again.
func TestClickAfterTheFoldWindowIsANewClick(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C0123"}}})
	h := startBotAt(t, env.NATS, newFakeSlack(t), clock.Now)
	attempts := testenv.Published(t, env.NATS.Conn, bridge.AnswerSubject("acme", "job-fw"))
	q := question("job-fw", "q-fw")
	publishQuestion(t, env, q)
	card := h.posted(t, "q-fw")
	ts := h.cardTS(t, q)
	click := func(trigger string) {
		t.Helper()
		if resp, body := h.interact(h.fake.click("U0KEV", "kevin", trigger, "C0123", ts, actionsBlock(card), "choice.1", "blue", "")); resp.StatusCode != http.StatusOK {
			t.Fatalf("click %s: %d %q, want 200", trigger, resp.StatusCode, body)
		}
	}
	click("trig-fw-1")
	clock.Advance(clickFold / 2)
	click("trig-fw-2")
	if n := attempts.Count(t); n != 1 {
		t.Fatalf("%d attempts for a click and its double within the window, want 1", n)
	}
	clock.Advance(clickFold / 2)
	click("trig-fw-3")
	if n := attempts.Count(t); n != 2 {
		t.Fatalf("%d attempts once the window had passed, want 2: the third click folded into the first", n)
	}
}

// TestClickMarkersCostNoFsyncWhereEventsDoNot checks the double-click
// markers are kept in their own bucket, written without a per-message
// fsync exactly where the events stream is (the embedded server in sync
// always), while the adapter's bucket, whose show claims keep a card from
// being posted twice after a kill, keeps its fsync; and that a double
// click still folds through it.
func TestClickMarkersCostNoFsyncWhereEventsDoNot(t *testing.T) {
	t.Parallel()
	for _, syncAlways := range []bool{true, false} {
		t.Run(fmt.Sprintf("sync always %v", syncAlways), func(t *testing.T) {
			t.Parallel()
			env := testenv.Start(t, testenv.Options{SyncAlways: syncAlways, Served: true,
				Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C0123"}}})
			fake := newFakeSlack(t)
			a, b := startBot(t, env.NATS, fake), startBot(t, env.NATS, fake)
			want := map[string]jetstream.PersistModeType{KVBucket: jetstream.DefaultPersistMode, ClicksBucket: jetstream.DefaultPersistMode}
			if syncAlways {
				want[ClicksBucket] = jetstream.AsyncPersistMode
			}
			for bucket, mode := range want {
				st, err := env.NATS.JS.Stream(context.Background(), "KV_"+bucket)
				if err != nil {
					t.Fatal(err)
				}
				if got := st.CachedInfo().Config.PersistMode; got != mode {
					t.Errorf("bucket %s written in mode %v, want %v", bucket, got, mode)
				}
			}

			deliveries := collect[bridge.Delivery](t, env.NATS, bridge.PrefixDelivery+".>")
			q := question("job-dbl", "q-dbl")
			publishQuestion(t, env, q)
			card := a.posted(t, "q-dbl")
			ts := deliveredTS(t, env.NATS, deliveries, "q-dbl").Message.MessageID
			for i, h := range []*harness{a, b} {
				resp, body := h.interact(fake.click("U0KEV", "kevin", fmt.Sprintf("trig-dbl-%d", i), "C0123", ts, actionsBlock(card), "choice.1", "blue", ""))
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("click %d got %d %q, want 200", i+1, resp.StatusCode, body)
				}
			}
			if n := testenv.StreamCount(t, env.NATS, bridge.StreamAnswers, bridge.AnswerSubject("acme", "job-dbl")); n != 1 {
				t.Fatalf("%d attempts recorded for a double click across two replicas, want 1", n)
			}
			if out := awaitOutcome(t, env, q); out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: blue" {
				t.Fatalf("resume: %+v", out)
			}
		})
	}
}

// TestClicksBucketDeletedIsMadeAgain deletes the clicks bucket alone: a
// click is still recorded (folded on its replica only), and the adapter
// makes the bucket again.
func TestClicksBucketDeletedIsMadeAgain(t *testing.T) {
	t.Parallel()
	env, h := e2e(t, runtime.Roles{})
	if err := env.NATS.JS.DeleteStream(context.Background(), "KV_"+ClicksBucket); err != nil {
		t.Fatal(err)
	}
	deliveries := collect[bridge.Delivery](t, env.NATS, bridge.PrefixDelivery+".>")
	q := question("job-1", "q-1")
	publishQuestion(t, env, q)
	card := h.posted(t, "q-1")
	ts := deliveredTS(t, env.NATS, deliveries, "q-1").Message.MessageID
	if resp, body := h.interact(h.fake.click("U0KEV", "kevin", "trig-1", "C0123", ts, actionsBlock(card), "choice.1", "blue", "")); resp.StatusCode != http.StatusOK {
		t.Fatalf("click: %d %s", resp.StatusCode, body)
	}
	if out := awaitOutcome(t, env, q); out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: blue" {
		t.Fatalf("resume: %+v", out)
	}
	testenv.CheckFor(t, wait, tick, func() error {
		_, err := env.NATS.JS.KeyValue(context.Background(), ClicksBucket)
		return err
	})
}

// TestButtonClickNeedsNoLookup: a click on a choice button of a card this
// replica does not remember (another posted it) is answered with the
// button's own text, without asking the runtime for the question.
func TestButtonClickNeedsNoLookup(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C0123"}}})
	fake := newFakeSlack(t)
	a := startBot(t, env.NATS, fake)
	deliveries := collect[bridge.Delivery](t, env.NATS, bridge.PrefixDelivery+".>")
	q := question("job-btn", "q-btn")
	publishQuestion(t, env, q)
	card := a.posted(t, "q-btn")
	ts := deliveredTS(t, env.NATS, deliveries, "q-btn").Message.MessageID
	a.Stop()
	b := startBot(t, env.NATS, fake)
	shows := collect[bridge.ShowRequest](t, env.NATS, bridge.APIShow)
	resp, body := b.interact(fake.click("U0KEV", "kevin", "trig-btn", "C0123", ts, actionsBlock(card), "choice.1", "blue", ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("click got %d %q, want 200", resp.StatusCode, body)
	}
	if out := awaitOutcome(t, env, q); out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: blue" {
		t.Fatalf("resume: %+v", out)
	}
	// The card's settling may read the record (as askbridge itself); the
	// click would ask as the clicker.
	for _, r := range shows.All() {
		if r.As == "slack:U0KEV" {
			t.Fatalf("the click asked the runtime for the question: %+v", r)
		}
	}
}
