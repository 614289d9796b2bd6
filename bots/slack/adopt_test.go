package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// The posts a replica made before it died, as Slack shows them: the
// metadata is written out here as the wire format, not built with the
// adapter's own helpers.
func questionMetaJSON(job, id string, version int) map[string]any {
	var m map[string]any
	raw := fmt.Sprintf(`{"event_type":"askbridge_question","event_payload":{"tenant":"acme","job_id":%q,"question_id":%q,"task_version":%d}}`, job, id, version)
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		panic(err)
	}
	return m
}

func threadMetaJSON(job string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(fmt.Sprintf(`{"event_type":"askbridge_thread","event_payload":{"tenant":"acme","job_id":%q}}`, job)), &m); err != nil {
		panic(err)
	}
	return m
}

// tsAt is a Slack ts at t, told apart by n.
func tsAt(t time.Time, n int) string { return fmt.Sprintf("%d.%06d", t.Unix(), n) }

// claimedAt is when the questions of a crashed try were asked, five
// minutes ago: a lookup for what that try left starts a little before.
var claimedAt = time.Now().Add(-5 * time.Minute).UTC()

// again hands ev to the adapter as the consumer does after a try that
// did not finish (the adapter died or stopped, or the try failed): its
// second delivery.
func again(t *testing.T, h *harness, ev bridge.Event) {
	t.Helper()
	if err := h.bot.handleEvent(context.Background(), &ev, engine.Delivery{Attempt: 2}); err != nil {
		t.Fatalf("second delivery: %v", err)
	}
}

// remembered is the card the adapter remembers for a question of job.
func remembered(h *harness, job, id string) *rememberedCard {
	c, _ := h.bot.loadCard(context.Background(), blockkit.Ref{Tenant: "acme", JobID: job, QuestionID: id, Version: 1})
	return c
}

// lookupOK checks one history/replies call: the channel, include_all_metadata
// and an oldest a little before the question was asked.
func lookupOK(t *testing.T, c apiCall, channel, thread string) {
	t.Helper()
	if c.Str("channel") != channel || c.Str("ts") != thread || c.Str("include_all_metadata") != "1" {
		t.Fatalf("%s: %v", c.Method, c.Form)
	}
	oldest := c.Str("oldest")
	if !tsLess(oldest, tsAt(claimedAt, 0)) || tsLess(oldest, tsAt(claimedAt.Add(-5*time.Minute), 0)) {
		t.Fatalf("%s oldest %s, want a little before the claim at %s", c.Method, oldest, tsAt(claimedAt, 0))
	}
}

// metaOf decodes the metadata a chat.postMessage sent.
func metaOf(t *testing.T, c apiCall) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(c.Str("metadata")), &m); err != nil {
		t.Fatalf("metadata %q: %v", c.Str("metadata"), err)
	}
	return m
}

func TestFirstPostSendsMetadataAndLooksNothingUp(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	q := question("job-hot", "q-hot")
	publishEvent(t, n, askedEvent(q))
	d := deliveredTS(t, n, deliveries, "q-hot")
	posts := fake.Calls("chat.postMessage")
	if !d.OK || len(posts) != 2 {
		t.Fatalf("delivery %+v, %d posts, want parent + card", d, len(posts))
	}
	if got := len(fake.Calls("conversations.history")) + len(fake.Calls("conversations.replies")); got != 0 {
		t.Fatalf("%d lookups on a first post", got)
	}
	if got, want := metaOf(t, posts[0]), threadMetaJSON("job-hot"); !reflect.DeepEqual(got, want) {
		t.Fatalf("thread parent metadata %v, want %v", got, want)
	}
	if got, want := metaOf(t, posts[1]), questionMetaJSON("job-hot", "q-hot", 1); !reflect.DeepEqual(got, want) {
		t.Fatalf("card metadata %v, want %v", got, want)
	}
	if parent, ok := fake.message(d.Message.Thread); !ok || !reflect.DeepEqual(parent.Metadata, threadMetaJSON("job-hot")) ||
		posts[1].Str("thread_ts") != d.Message.Thread {
		t.Fatalf("card not in the job's thread: %+v, %v", d.Message, posts[1].Form)
	}
	if card, ok := fake.message(d.Message.MessageID); !ok || !reflect.DeepEqual(card.Metadata, questionMetaJSON("job-hot", "q-hot", 1)) {
		t.Fatalf("the fake holds no card at %s with its metadata: %+v", d.Message.MessageID, card)
	}
	_ = h
}

// crashedCard hands the adapter, a second time, the asked event of a
// question of a job whose thread exists (the event names it, as the
// runtime does); the fake holds the thread parent and, in it, the
// replies in msgs.
func crashedCard(t *testing.T, job, id string, replies ...fakeMsg) (*harness, *collector[bridge.Delivery], *bridge.Question, string) {
	t.Helper()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	q := question(job, id)
	ev := askedEvent(q)
	ev.AskedAt = claimedAt
	parent := tsAt(claimedAt.Add(-time.Hour), 1)
	ev.Threads = []bridge.MessageRef{{Platform: bridge.PlatformSlack, Channel: "C0123", Thread: parent}}
	fake.hold(fakeMsg{Channel: "C0123", TS: parent, Text: "thread", Metadata: threadMetaJSON(job)})
	for _, m := range replies {
		m.Channel, m.Thread = "C0123", parent
		fake.hold(m)
	}
	again(t, h, ev)
	return h, deliveries, q, parent
}

func TestTakeoverAdoptsTheCardACrashedReplicaPosted(t *testing.T) {
	t.Parallel()
	card := tsAt(claimedAt.Add(time.Second), 7)
	h, deliveries, q, parent := crashedCard(t, "job-cc", "q-cc",
		// Someone's reply, the card of another version, of another question.
		fakeMsg{TS: tsAt(claimedAt, 3), Text: "on it"},
		fakeMsg{TS: tsAt(claimedAt, 4), Text: "v2", Metadata: questionMetaJSON("job-cc", "q-cc", 2)},
		fakeMsg{TS: tsAt(claimedAt, 5), Text: "other", Metadata: questionMetaJSON("job-cc", "q-other", 1)},
		fakeMsg{TS: card, Text: "the card", Metadata: questionMetaJSON("job-cc", "q-cc", 1)},
	)
	d := deliveredTS(t, h.nats, deliveries, q.QuestionID)
	if !d.OK || d.Message == nil || d.Message.MessageID != card || d.Message.Channel != "C0123" || d.Message.Thread != parent {
		t.Fatalf("delivery %+v (message %+v), want the card already in Slack", d, d.Message)
	}
	if got := len(h.fake.Calls("chat.postMessage")); got != 0 {
		t.Fatalf("%d posts, want none: the card is in Slack", got)
	}
	looks := h.fake.Calls("conversations.replies")
	if len(looks) != 1 || len(h.fake.Calls("conversations.history")) != 0 {
		t.Fatalf("%d replies and %d history lookups, want one of the thread", len(looks), len(h.fake.Calls("conversations.history")))
	}
	lookupOK(t, looks[0], "C0123", parent)
	if rec := remembered(h, "job-cc", "q-cc"); rec == nil || rec.TS != card || rec.Channel != "C0123" || rec.Thread != parent {
		t.Fatalf("remembered %+v: want the adopted card", rec)
	}
}

func TestTakeoverPostsWhenTheCrashedReplicaDidNot(t *testing.T) {
	t.Parallel()
	h, deliveries, q, parent := crashedCard(t, "job-cn", "q-cn",
		fakeMsg{TS: tsAt(claimedAt, 4), Text: "v2", Metadata: questionMetaJSON("job-cn", "q-cn", 2)},
		// The right card, but before the claim (and its margin): not this post's.
		fakeMsg{TS: tsAt(claimedAt.Add(-10*time.Minute), 1), Text: "old", Metadata: questionMetaJSON("job-cn", "q-cn", 1)},
	)
	d := deliveredTS(t, h.nats, deliveries, q.QuestionID)
	posts := h.fake.Calls("chat.postMessage")
	if !d.OK || len(posts) != 1 || posts[0].Str("thread_ts") != parent || d.Message.Thread != parent || d.Message.MessageID == "" {
		t.Fatalf("delivery %+v, %d posts: want the card posted once in the thread", d, len(posts))
	}
	if got, want := metaOf(t, posts[0]), questionMetaJSON("job-cn", "q-cn", 1); !reflect.DeepEqual(got, want) {
		t.Fatalf("card metadata %v, want %v", got, want)
	}
	looks := h.fake.Calls("conversations.replies")
	if len(looks) != 1 {
		t.Fatalf("%d lookups, want 1", len(looks))
	}
	lookupOK(t, looks[0], "C0123", parent)
}

func TestTakeoverPostsWhenTheLookupFails(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	// An app installed before the history scopes were added.
	fake.fail("conversations.replies", 200, nil, `{"ok":false,"error":"missing_scope","needed":"channels:history","provided":"chat:write"}`)
	h := startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	q := question("job-cf", "q-cf")
	ev := askedEvent(q)
	ev.AskedAt = claimedAt
	parent := tsAt(claimedAt.Add(-time.Hour), 1)
	ev.Threads = []bridge.MessageRef{{Platform: bridge.PlatformSlack, Channel: "C0123", Thread: parent}}
	fake.hold(fakeMsg{Channel: "C0123", TS: parent, Metadata: threadMetaJSON("job-cf")})
	again(t, h, ev)
	d := deliveredTS(t, n, deliveries, "q-cf")
	posts := fake.Calls("chat.postMessage")
	if !d.OK || len(posts) != 1 || d.Message == nil || d.Message.MessageID == "" || d.Message.Thread != parent {
		t.Fatalf("delivery %+v, %d posts: a failed lookup must post, once", d, len(posts))
	}
	if got := len(fake.Calls("conversations.replies")); got != 1 {
		t.Fatalf("%d lookups, want 1 (a permanent error is not retried)", got)
	}
}

// TestTakeoverWaitsOutARateLimitedLookup checks a takeover whose lookup
// Slack rate-limits (its history methods allow a request a minute to many
// apps) does not post the card again, which the crashed replica may have
// posted: the event comes back after the wait Slack asked for.
func TestTakeoverWaitsOutARateLimitedLookup(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	fake.fail("conversations.replies", 429, map[string]string{"Retry-After": "60"}, `{"ok":false,"error":"ratelimited"}`)
	h := startBot(t, n, fake)
	q := question("job-rl", "q-rl")
	ev := askedEvent(q)
	ev.AskedAt = claimedAt
	parent := tsAt(claimedAt.Add(-time.Hour), 1)
	ev.Threads = []bridge.MessageRef{{Platform: bridge.PlatformSlack, Channel: "C0123", Thread: parent}}
	fake.hold(fakeMsg{Channel: "C0123", TS: parent, Metadata: threadMetaJSON("job-rl")})
	fake.hold(fakeMsg{Channel: "C0123", TS: tsAt(claimedAt, 3), Thread: parent, Text: "the card", Metadata: questionMetaJSON("job-rl", "q-rl", 1)})
	err := h.bot.handleEvent(context.Background(), &ev, engine.Delivery{Attempt: 2})
	// The loop tries the event again no sooner than Slack asked.
	if v := classifyEventError(err); err == nil || v.Kind != engine.RateLimited || v.RetryAfter < time.Minute {
		t.Fatalf("handleEvent = %v (%+v); want it tried again after Slack's 60 s", err, v)
	}
	if got := len(fake.Calls("chat.postMessage")); got != 0 {
		t.Fatalf("%d posts while the lookup was rate-limited, want none", got)
	}
	// Nothing else asks Slack for replies for the minute it asked for
	// (its history methods are limited per method, not per channel).
	h.bot.pace.mu.Lock()
	held := time.Until(h.bot.pace.next["method conversations.replies"])
	delete(h.bot.pace.next, "method conversations.replies") // the minute is over, for the test
	h.bot.pace.mu.Unlock()
	if held < 50*time.Second {
		t.Fatalf("conversations.replies paced for %v after a 60 s Retry-After", held)
	}
	// Once Slack answers, the card is adopted, not posted again.
	if err := h.bot.handleEvent(context.Background(), &ev, engine.Delivery{Attempt: 3}); err != nil {
		t.Fatal(err)
	}
	if got := len(fake.Calls("chat.postMessage")); got != 0 {
		t.Fatalf("%d posts after the lookup, want none: the card is in Slack", got)
	}
	if rec := remembered(h, "job-rl", "q-rl"); rec == nil || rec.TS != tsAt(claimedAt, 3) {
		t.Fatalf("remembered %+v; want the adopted card", rec)
	}
}

// TestLastTryPostsWhenTheLookupIsRateLimited checks that on an event's
// last try a post whose outcome is unknown, and whose lookup Slack
// rate-limits, is posted again rather than the question failed: shown
// twice beats failed while shown.
func TestLastTryPostsWhenTheLookupIsRateLimited(t *testing.T) {
	t.Parallel()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	q := question("job-lt", "q-lt")
	q.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0123", ThreadTS: "1600000000.000001"}}
	ev := askedEvent(q)
	fake.failAfter("chat.postMessage", 500, `{"ok":false,"error":"internal_error"}`)
	fake.fail("conversations.replies", 429, map[string]string{"Retry-After": "60"}, `{"ok":false,"error":"ratelimited"}`)
	if err := h.bot.handleEvent(context.Background(), &ev, engine.Delivery{Attempt: 1, Last: true}); err != nil {
		t.Fatalf("last try: %v", err)
	}
	if d := deliveredTS(t, n, deliveries, "q-lt"); !d.OK {
		t.Fatalf("delivery %+v %+v: want the card shown", d, d.Failure)
	}
}

// crashedThread hands the adapter, a second time, the asked event of a
// job's first question (no thread known); the fake holds the channel
// messages in msgs.
func crashedThread(t *testing.T, job string, msgs ...fakeMsg) (*harness, *collector[bridge.Delivery], *bridge.Question) {
	t.Helper()
	n := plainNATS(t)
	fake := newFakeSlack(t)
	h := startBot(t, n, fake)
	deliveries := collect[bridge.Delivery](t, n, bridge.PrefixDelivery+".>")
	for _, m := range msgs {
		m.Channel = "C0123"
		fake.hold(m)
	}
	q := question(job, "q-1")
	ev := askedEvent(q)
	ev.AskedAt = claimedAt
	again(t, h, ev)
	return h, deliveries, q
}

func TestTakeoverAdoptsTheThreadParentACrashedReplicaPosted(t *testing.T) {
	t.Parallel()
	parent := tsAt(claimedAt.Add(2*time.Second), 9)
	h, deliveries, q := crashedThread(t, "job-tc",
		fakeMsg{TS: tsAt(claimedAt, 2), Text: "another job's", Metadata: threadMetaJSON("job-other")},
		fakeMsg{TS: parent, Text: "the parent", Metadata: threadMetaJSON("job-tc")},
		fakeMsg{TS: tsAt(claimedAt.Add(3*time.Second), 1), Text: "chatter"},
	)
	d := deliveredTS(t, h.nats, deliveries, q.QuestionID)
	posts := h.fake.Calls("chat.postMessage")
	if !d.OK || len(posts) != 1 || posts[0].Str("thread_ts") != parent || d.Message.Thread != parent {
		t.Fatalf("delivery %+v, %d posts: want only the card, in the thread already in Slack", d, len(posts))
	}
	// One lookup for the parent in the channel, one for the card in it.
	looks, replies := h.fake.Calls("conversations.history"), h.fake.Calls("conversations.replies")
	if len(looks) != 1 || len(replies) != 1 {
		t.Fatalf("%d history and %d replies lookups, want one of each", len(looks), len(replies))
	}
	lookupOK(t, looks[0], "C0123", "")
	lookupOK(t, replies[0], "C0123", parent)
	if ts, ok := h.bot.threads.Get(threadKey("acme", "job-tc", "C0123")); !ok || ts != parent {
		t.Fatalf("thread %q, %v: want the adopted parent", ts, ok)
	}
}

func TestTakeoverOpensTheThreadWhenTheCrashedReplicaDidNot(t *testing.T) {
	t.Parallel()
	h, deliveries, q := crashedThread(t, "job-tn",
		fakeMsg{TS: tsAt(claimedAt, 2), Text: "another job's", Metadata: threadMetaJSON("job-other")},
		fakeMsg{TS: tsAt(claimedAt, 3), Text: "a card, not a parent", Metadata: questionMetaJSON("job-tn", "q-1", 1)},
	)
	d := deliveredTS(t, h.nats, deliveries, q.QuestionID)
	posts := h.fake.Calls("chat.postMessage")
	if !d.OK || len(posts) != 2 || posts[1].Str("thread_ts") != d.Message.Thread {
		t.Fatalf("delivery %+v, %d posts: want a new parent and the card", d, len(posts))
	}
	if p, ok := h.fake.message(d.Message.Thread); !ok || p.TS == tsAt(claimedAt, 2) || !reflect.DeepEqual(p.Metadata, threadMetaJSON("job-tn")) {
		t.Fatalf("card in thread %s (%+v), want the new parent", d.Message.Thread, p)
	}
	if got, want := metaOf(t, posts[0]), threadMetaJSON("job-tn"); !reflect.DeepEqual(got, want) {
		t.Fatalf("parent metadata %v, want %v", got, want)
	}
	looks := h.fake.Calls("conversations.history")
	if len(looks) != 1 {
		t.Fatalf("%d lookups, want 1", len(looks))
	}
	lookupOK(t, looks[0], "C0123", "")
}

// The fake pages history as Slack does; a lookup follows the cursor.
func TestTakeoverFollowsHistoryPages(t *testing.T) {
	t.Parallel()
	parent := tsAt(claimedAt.Add(time.Second), 1)
	var msgs []fakeMsg
	msgs = append(msgs, fakeMsg{TS: parent, Metadata: threadMetaJSON("job-tp")})
	for i := range 2*lookupLimit + 10 { // newer chatter, more than two pages
		msgs = append(msgs, fakeMsg{TS: tsAt(claimedAt.Add(2*time.Second), i+1), Text: "chatter"})
	}
	h, deliveries, q := crashedThread(t, "job-tp", msgs...)
	d := deliveredTS(t, h.nats, deliveries, q.QuestionID)
	posts := h.fake.Calls("chat.postMessage")
	if !d.OK || len(posts) != 1 || posts[0].Str("thread_ts") != parent {
		t.Fatalf("delivery %+v, %d posts: want the card in the adopted thread", d, len(posts))
	}
	looks := h.fake.Calls("conversations.history")
	if len(looks) != 3 || looks[1].Str("cursor") == "" || looks[1].Str("oldest") != looks[0].Str("oldest") {
		t.Fatalf("%d history pages, want 3 following the cursor", len(looks))
	}
}
