package slack

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge/bots/apimetrics"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
	"github.com/askbridge/askbridge/store/record"
)

// Posts whose answer was lost: the card or thread parent Slack made is
// adopted on the next try, and a failed post is looked for, then posted once.

// withThread starts an adapter whose job already has its thread, so that
// the job's next chat.postMessage is a card; it returns the parent's ts.
func withThread(t *testing.T, job string, opts ...func(*Options)) (*harness, *collector[bridge.Delivery], string) {
	t.Helper()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake, opts...)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	parent := tsAt(time.Now().Add(-time.Hour), 1)
	fake.hold(fakeMsg{Channel: "C0123", TS: parent, Text: "thread", Metadata: threadMetaJSON(job)})
	h.bot.threads.Put(threadKey("acme", job, "C0123"), parent)
	return h, deliveries, parent
}

// retryLookupOK checks the lookup made after the failed try post: the
// channel (or thread), include_all_metadata, and an oldest a minute
// before that try, not more than two.
func retryLookupOK(t *testing.T, c apiCall, post apiCall, channel, thread string) {
	t.Helper()
	if c.Str("channel") != channel || c.Str("ts") != thread || c.Str("include_all_metadata") != "1" {
		t.Fatalf("%s: %v", c.Method, c.Form)
	}
	oldest := c.Str("oldest")
	if !tsLess(oldest, tsAt(post.At.Add(-59*time.Second), 0)) || tsLess(oldest, tsAt(post.At.Add(-2*time.Minute), 0)) {
		t.Fatalf("%s oldest %s, want a minute before the first try at %s", c.Method, oldest, tsAt(post.At, 0))
	}
	if !c.At.After(post.At) {
		t.Fatalf("lookup at %v, not after the failed try at %v", c.At, post.At)
	}
}

// Slack posted the card but answered 500: the retry finds the card and
// adopts it instead of posting it again.
func TestCardPostedButAnswerLostIsAdopted(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	h, deliveries, parent := withThread(t, "job-la", func(o *Options) { o.Registerer = reg })
	h.fake.failAfter("chat.postMessage", 500, "upstream timeout")
	q := question("job-la", "q-la")
	publishEvent(t, h.nats, askedEvent(q))
	d := deliveredTS(t, h.nats, deliveries, "q-la")
	cards := h.fake.marked(questionMetaJSON("job-la", "q-la", 1))
	if len(cards) != 1 {
		t.Fatalf("the fake holds %d cards, want 1", len(cards))
	}
	if !d.OK || d.Message == nil || d.Message.MessageID != cards[0].TS || d.Message.Thread != parent || d.Message.Channel != "C0123" {
		t.Fatalf("delivery %+v (message %+v), want the card Slack holds at %s", d, d.Message, cards[0].TS)
	}
	posts := h.fake.Calls("chat.postMessage")
	if len(posts) != 1 {
		t.Fatalf("%d posts, want the one Slack took", len(posts))
	}
	looks := h.fake.Calls("conversations.replies")
	if len(looks) != 1 || len(h.fake.Calls("conversations.history")) != 0 {
		t.Fatalf("%d replies and %d history lookups, want one of the thread", len(looks), len(h.fake.Calls("conversations.history")))
	}
	retryLookupOK(t, looks[0], posts[0], "C0123", parent)
	if rec := remembered(h, "job-la", "q-la"); rec == nil || rec.TS != cards[0].TS || rec.Thread != parent {
		t.Fatalf("remembered %+v: want the adopted card", rec)
	}
	// /metrics: the post succeeded after one transient retry; the lookup
	// is its own operation.
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"askbridge_platform_api_calls_total", map[string]string{"platform": "slack", "op": "chat.postMessage", "result": "ok"}, 1},
		{"askbridge_platform_api_retries_total", map[string]string{"platform": "slack", "op": "chat.postMessage", "reason": "transient"}, 1},
		{"askbridge_platform_api_calls_total", map[string]string{"platform": "slack", "op": "conversations.replies", "result": "ok"}, 1},
	} {
		if got, ok := apimetrics.Value(reg, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
}

// Slack opened the thread but the answer was lost (a 500, a dropped
// connection): the retry adopts the parent, and the card goes in it.
func TestThreadParentPostedButAnswerLostIsAdopted(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		lose func(*fakeSlack)
	}{
		{"500", func(f *fakeSlack) { f.failAfter("chat.postMessage", 500, "upstream timeout") }},
		{"connection closed", func(f *fakeSlack) { f.dropAfter("chat.postMessage") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := plainNATS(t)
			fake := newFakeSlack(t)
			c.lose(fake)
			h := startBot(t, n, fake)
			deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
			q := question("job-lt", "q-lt")
			publishEvent(t, n, askedEvent(q))
			d := deliveredTS(t, n, deliveries, "q-lt")
			parents := fake.marked(threadMetaJSON("job-lt"))
			if len(parents) != 1 {
				t.Fatalf("the fake holds %d thread parents, want 1", len(parents))
			}
			posts := fake.Calls("chat.postMessage")
			if !d.OK || d.Message == nil || d.Message.Thread != parents[0].TS || len(posts) != 2 || posts[1].Str("thread_ts") != parents[0].TS {
				t.Fatalf("delivery %+v (message %+v), %d posts: want the parent once, the card in it", d, d.Message, len(posts))
			}
			if cards := fake.marked(questionMetaJSON("job-lt", "q-lt", 1)); len(cards) != 1 || cards[0].TS != d.Message.MessageID {
				t.Fatalf("cards %+v, want one at %s", cards, d.Message.MessageID)
			}
			looks := fake.Calls("conversations.history")
			if len(looks) != 1 || len(fake.Calls("conversations.replies")) != 0 {
				t.Fatalf("%d history and %d replies lookups, want one of the channel", len(looks), len(fake.Calls("conversations.replies")))
			}
			retryLookupOK(t, looks[0], posts[0], "C0123", "")
			if ts, ok := h.bot.threads.Get(threadKey("acme", "job-lt", "C0123")); !ok || ts != parents[0].TS {
				t.Fatalf("thread %q, %v: want the adopted parent", ts, ok)
			}
		})
	}
}

// A 500 that posted nothing: the lookup finds nothing and the retry posts,
// once.
func TestFailedPostLooksThenPostsOnce(t *testing.T) {
	t.Parallel()
	h, deliveries, parent := withThread(t, "job-lf")
	h.fake.fail("chat.postMessage", 500, nil, "upstream down")
	q := question("job-lf", "q-lf")
	publishEvent(t, h.nats, askedEvent(q))
	d := deliveredTS(t, h.nats, deliveries, "q-lf")
	cards := h.fake.marked(questionMetaJSON("job-lf", "q-lf", 1))
	posts := h.fake.Calls("chat.postMessage")
	if len(cards) != 1 || len(posts) != 2 || !d.OK || d.Message == nil || d.Message.MessageID != cards[0].TS || d.Message.Thread != parent {
		t.Fatalf("delivery %+v (message %+v), %d posts, cards %+v: want the card posted once, on the retry", d, d.Message, len(posts), cards)
	}
	looks := h.fake.Calls("conversations.replies")
	if len(looks) != 1 || len(h.fake.Calls("conversations.history")) != 0 {
		t.Fatalf("%d replies and %d history lookups, want one of the thread", len(looks), len(h.fake.Calls("conversations.history")))
	}
	retryLookupOK(t, looks[0], posts[0], "C0123", parent)
	if !looks[0].At.Before(posts[1].At) {
		t.Fatalf("lookup at %v, not before the retry at %v", looks[0].At, posts[1].At)
	}
}

// TestLaterTryAfterTheQuestionEndedSettlesAnUnreportedCard checks an
// asked event that comes again after the adapter died between posting the
// card and reporting it, when the question has ended since (answered in
// the console), settles the card Slack holds rather than leaving its
// buttons live, and posts nothing.
func TestLaterTryAfterTheQuestionEndedSettlesAnUnreportedCard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, h := e2e(t, runtime.Roles{})
	h.Stop() // the adapter that posted the card died before reporting it
	q := question("job-gone", "q-gone")
	publishQuestion(t, env, q)
	ev := askedEvent(q)
	ev.AskedAt = time.Now().Add(-time.Minute).UTC()
	parent, card := tsAt(ev.AskedAt, 1), tsAt(ev.AskedAt.Add(time.Second), 2)
	h.fake.hold(fakeMsg{Channel: "C0123", TS: parent, Text: "thread", Metadata: threadMetaJSON("job-gone")})
	h.fake.hold(fakeMsg{Channel: "C0123", Thread: parent, TS: card, Text: "the card", Metadata: questionMetaJSON("job-gone", "q-gone", 1)})
	testenv.CheckFor(t, wait, tick, func() error { // recorded, so the answer is not refused as unknown
		_, err := env.Store.Find(ctx, record.Key{Tenant: "acme", JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: 1})
		return err
	})
	if err := env.Attempt(ctx, bridge.AnswerAttempt{Tenant: "acme", JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: 1,
		AttemptID: "console-gone", Action: bridge.ActionAnswer, Answer: json.RawMessage(`"blue"`), By: "slack:U0KEV", ByName: "kevin",
		Via: bridge.PlatformConsole, At: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	if out := awaitOutcome(t, env, q); out.Outcome != bridge.OutcomeAnswered {
		t.Fatalf("resume %+v, want answered", out)
	}
	if err := h.bot.handleEvent(ctx, &ev, engine.Delivery{Attempt: 2}); err != nil {
		t.Fatalf("second delivery: %v", err)
	}
	h.updated(t, card, "Answered by @kevin: blue")
	if got := len(h.fake.Calls("chat.postMessage")); got != 0 {
		t.Fatalf("%d posts for a question that ended, want none", got)
	}
}
