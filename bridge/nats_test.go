package bridge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge/principal"

	"github.com/askbridge/askbridge/internal/testenv/poll"
)

func startNATS(t *testing.T) *NATS {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := ConnectNATS(ctx, NATSOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", Name: "test"})
	if err != nil {
		t.Fatalf("ConnectNATS: %v", err)
	}
	t.Cleanup(n.Close)
	return n
}

func TestNATS(t *testing.T) {
	t.Parallel()
	n := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	url := n.ClientURL()
	if !strings.HasPrefix(url, "nats://127.0.0.1:") || strings.HasSuffix(url, ":0") || strings.HasSuffix(url, ":-1") {
		t.Fatalf("ClientURL = %q, want the loopback address with the picked port", url)
	}

	t.Run("streams exist with their limits", func(t *testing.T) {
		if err := CheckStreams(ctx, n.JS); err != nil {
			t.Fatal(err)
		}
		want := map[string]time.Duration{
			StreamQuestions: 30 * 24 * time.Hour, StreamCancels: 30 * 24 * time.Hour,
			StreamAnswers: 30 * 24 * time.Hour, StreamEvents: 7 * 24 * time.Hour,
			StreamResumes: 30 * 24 * time.Hour, StreamDelivery: 7 * 24 * time.Hour,
			StreamExecuted: 30 * 24 * time.Hour, StreamNotices: 30 * 24 * time.Hour,
		}
		if names := StreamNames(); len(names) != len(want) {
			t.Errorf("StreamNames = %v", names)
		}
		for _, name := range StreamNames() {
			s, err := n.JS.Stream(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			cfg := s.CachedInfo().Config
			if cfg.MaxAge != want[name] || cfg.Duplicates != DuplicateWindow || cfg.Storage != jetstream.FileStorage {
				t.Errorf("%s: max age %v, duplicates %v, storage %v", name, cfg.MaxAge, cfg.Duplicates, cfg.Storage)
			}
			// Only the runtime reads the work queues, and it keeps what it
			// reads; events stay until every adapter has them.
			wantRetention := map[string]jetstream.RetentionPolicy{
				StreamQuestions: jetstream.WorkQueuePolicy, StreamCancels: jetstream.WorkQueuePolicy, StreamDelivery: jetstream.WorkQueuePolicy,
				StreamExecuted: jetstream.WorkQueuePolicy, StreamNotices: jetstream.WorkQueuePolicy,
				StreamEvents: jetstream.InterestPolicy, StreamAnswers: jetstream.LimitsPolicy, StreamResumes: jetstream.LimitsPolicy,
			}[name]
			if cfg.Retention != wantRetention {
				t.Errorf("%s: retention %v, want %v", name, cfg.Retention, wantRetention)
			}
		}
	})

	t.Run("EnsureStreams is idempotent", func(t *testing.T) {
		for range 2 {
			if err := EnsureStreams(ctx, n.JS, StreamOptions{Replicas: 1}); err != nil {
				t.Fatal(err)
			}
		}
		// A second replica pointed at the first's NATS ensures them again.
		other, err := ConnectNATS(ctx, NATSOptions{URL: url, Name: "replica", ConnOptions: []nats.Option{n.Admin()}})
		if err != nil {
			t.Fatalf("second ConnectNATS: %v", err)
		}
		defer other.Close()
		if other.Server != nil {
			t.Error("a URL must not start an embedded server")
		}
		if err := CheckStreams(ctx, other.JS); err != nil {
			t.Fatal(err)
		}
		if got := other.ClientURL(); got != url {
			t.Errorf("ClientURL of the second = %q, want %q", got, url)
		}
	})

	t.Run("Nats-Msg-Id dedupes", func(t *testing.T) {
		subject := QuestionSubject("acme", "job-dedupe")
		q := validQuestion()
		for range 2 {
			if err := Publish(ctx, n.JS, subject, "q.acme.job-dedupe.q-1.3", q); err != nil {
				t.Fatal(err)
			}
		}
		if err := Publish(ctx, n.JS, subject, "q.acme.job-dedupe.q-2.3", q); err != nil {
			t.Fatal(err)
		}
		s, err := n.JS.Stream(ctx, StreamQuestions)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			t.Fatal(err)
		}
		if got := info.State.Subjects[subject]; got != 2 {
			t.Errorf("stored %d messages on %s, want 2 (one per message id)", got, subject)
		}
		msg, err := s.GetLastMsgForSubject(ctx, subject)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeQuestion(msg.Data)
		if err != nil || got.QuestionID != q.QuestionID {
			t.Errorf("stored question decodes to %+v, %v", got, err)
		}
	})

	t.Run("durable publish needs a message id", func(t *testing.T) {
		err := PublishRaw(ctx, n.JS, AnswerSubject("acme", "job-1"), "", []byte(`{}`))
		if err == nil || err.Error() != "nats: durable publish without a message id" {
			t.Errorf("PublishRaw without id = %v", err)
		}
		if err := Publish(ctx, n.JS, AnswerSubject("acme", "job-1"), "", struct{}{}); err == nil {
			t.Error("Publish without id succeeded")
		}
	})

	t.Run("a value that is not JSON", func(t *testing.T) {
		err := Publish(ctx, n.JS, AnswerSubject("acme", "job-1"), "x", func() {})
		if err == nil || !strings.HasPrefix(err.Error(), "nats: encode ask.v1.answer.acme.job-1:") {
			t.Errorf("Publish(func) = %v", err)
		}
	})

	t.Run("a subject without a stream", func(t *testing.T) {
		if err := PublishRaw(ctx, n.JS, "nowhere.at.all", "x", []byte(`{}`)); err == nil {
			t.Error("publishing where no stream listens succeeded")
		}
	})
}

// An embedded server asked for replicas (ASK_NATS_REPLICAS meant for a
// cluster) still starts: one server holds one copy.
func TestConnectNATSEmbeddedIgnoresReplicas(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := ConnectNATS(ctx, NATSOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", Replicas: 3})
	if err != nil {
		t.Fatalf("ConnectNATS: %v", err)
	}
	defer n.Close()
	if err := CheckStreams(ctx, n.JS); err != nil {
		t.Fatal(err)
	}
}

func TestCheckStreamsReportsMissing(t *testing.T) {
	t.Parallel()
	n := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.JS.DeleteStream(ctx, StreamEvents); err != nil {
		t.Fatal(err)
	}
	err := CheckStreams(ctx, n.JS)
	if err == nil || !strings.Contains(err.Error(), "nats: stream ASK_EVENTS") || !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("CheckStreams = %v, want ASK_EVENTS not found", err)
	}
	if err := EnsureStreams(ctx, n.JS, StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := CheckStreams(ctx, n.JS); err != nil {
		t.Errorf("after EnsureStreams: %v", err)
	}
}

// TestEnsureStreamsPastAStreamRefused: a stream askbridge cannot adopt
// (the first made, in memory) is named in the error, and does not keep
// the streams after it from being made again.
func TestEnsureStreamsPastAStreamRefused(t *testing.T) {
	t.Parallel()
	n := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range streamSpecs {
		if err := n.JS.DeleteStream(ctx, s.name); err != nil {
			t.Fatal(err)
		}
	}
	first := streamSpecs[0]
	if _, err := n.JS.CreateStream(ctx, jetstream.StreamConfig{Name: first.name, Subjects: []string{first.subjects},
		Storage: jetstream.MemoryStorage, Retention: first.retention}); err != nil {
		t.Fatal(err)
	}
	err := EnsureStreams(ctx, n.JS, StreamOptions{})
	if err == nil || !strings.Contains(err.Error(), "nats: stream "+first.name+" exists with Memory storage") {
		t.Fatalf("EnsureStreams = %v, want %s refused for its memory storage", err, first.name)
	}
	for _, s := range streamSpecs[1:] {
		if _, err := n.JS.Stream(ctx, s.name); err != nil {
			t.Errorf("stream %s after EnsureStreams: %v", s.name, err)
		}
	}
}

func TestStartEmbeddedBadListen(t *testing.T) {
	t.Parallel()
	for listen, want := range map[string]string{
		"localhost":      `nats: listen address "localhost":`,
		"127.0.0.1:nats": `nats: listen port "nats" is not a number`,
	} {
		keys, err := principal.LoadOrCreateKeys(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		_, err = StartEmbedded(NATSOptions{Listen: listen, StoreDir: t.TempDir()}, keys)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("StartEmbedded(%q) = %v, want %q", listen, err, want)
		}
	}
}

func TestConnectNATSUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := ConnectNATS(ctx, NATSOptions{URL: "nats://127.0.0.1:1"})
	if err == nil || !strings.HasPrefix(err.Error(), "nats: connect:") {
		t.Errorf("ConnectNATS to a closed port = %v", err)
	}
}

// TestAsyncPersist checks which streams are written without a per-message
// fsync: the two the outbox fills and the delivery reports, only when
// asked, and a stream that exists keeps its mode (JetStream refuses to
// change it).
func TestAsyncPersist(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	modes := func(n *NATS) map[string]jetstream.PersistModeType {
		t.Helper()
		got := map[string]jetstream.PersistModeType{}
		for _, name := range StreamNames() {
			s, err := n.JS.Stream(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			got[name] = s.CachedInfo().Config.PersistMode
		}
		return got
	}
	dir := t.TempDir()
	n, err := ConnectNATS(ctx, NATSOptions{StoreDir: dir, Listen: "127.0.0.1:0", SyncAlways: true, SyncInterval: time.Second, AsyncPersist: true})
	if err != nil {
		t.Fatal(err)
	}
	got := modes(n)
	for _, name := range StreamNames() {
		want := jetstream.DefaultPersistMode
		if name == StreamEvents || name == StreamResumes || name == StreamDelivery {
			want = jetstream.AsyncPersistMode
		}
		if got[name] != want {
			t.Errorf("%s: persist mode %v, want %v", name, got[name], want)
		}
	}
	// Publishing and reading back works in both modes.
	if err := Publish(ctx, n.JS, ResumeSubject("acme", "job-1"), "r1", Resume{Tenant: "acme", JobID: "job-1", QuestionID: "q-1"}); err != nil {
		t.Fatal(err)
	}
	n.Close()

	// The same data dir without the option: the streams keep their modes.
	n, err = ConnectNATS(ctx, NATSOptions{StoreDir: dir, Listen: "127.0.0.1:0", SyncAlways: true})
	if err != nil {
		t.Fatalf("restart without AsyncPersist: %v", err)
	}
	if again := modes(n); again[StreamEvents] != jetstream.AsyncPersistMode || again[StreamQuestions] != jetstream.DefaultPersistMode {
		t.Errorf("after restart: %v", again)
	}
	s, err := n.JS.Stream(ctx, StreamResumes)
	if err != nil {
		t.Fatal(err)
	}
	if msgs := s.CachedInfo().State.Msgs; msgs != 1 {
		t.Errorf("resumes stream holds %d messages after a clean restart, want 1", msgs)
	}
	n.Close()

	// A stream made without the option keeps the default when it is asked later.
	dir2 := t.TempDir()
	for _, async := range []bool{false, true} {
		n, err = ConnectNATS(ctx, NATSOptions{StoreDir: dir2, Listen: "127.0.0.1:0", AsyncPersist: async})
		if err != nil {
			t.Fatalf("AsyncPersist %v: %v", async, err)
		}
		if m := modes(n); m[StreamEvents] != jetstream.DefaultPersistMode {
			t.Errorf("AsyncPersist %v on an existing default stream: %v", async, m[StreamEvents])
		}
		n.Close()
	}
}

// TestWorkQueues checks a question waits in its stream until the runtime
// has acknowledged it, however long no consumer exists, and goes then.
func TestWorkQueues(t *testing.T) {
	t.Parallel()
	n := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Publish(ctx, n.JS, QuestionSubject("acme", "job-1"), "q-1", map[string]string{"question_id": "q-1"}); err != nil {
		t.Fatal(err)
	}
	msgs := func() uint64 {
		t.Helper()
		s, err := n.JS.Stream(ctx, StreamQuestions)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}
	if got := msgs(); got != 1 {
		t.Fatalf("%d questions held with no consumer, want 1", got)
	}
	cons, err := n.JS.CreateOrUpdateConsumer(ctx, StreamQuestions, jetstream.ConsumerConfig{Durable: "runtime", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got := msgs(); got != 1 {
		t.Fatalf("%d questions held before the ack, want 1", got)
	}
	if err := m.DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, poll.Patience, 20*time.Millisecond, func() error {
		if got := msgs(); got != 0 {
			return fmt.Errorf("%d questions held after the ack, want 0", got)
		}
		return nil
	})
	// The same message id again within the window is still a duplicate.
	ack, err := n.JS.Publish(ctx, QuestionSubject("acme", "job-1"), []byte(`{}`), jetstream.WithMsgID("q-1"))
	if err != nil || !ack.Duplicate {
		t.Fatalf("republish: %+v, %v; want a duplicate", ack, err)
	}

}

func TestStreamOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ subject, want string }{
		{EventSubject("acme", "job-1"), StreamEvents},
		{ResumeSubject("acme", "job-1"), StreamResumes},
		{AnswerSubject("acme", "job-1"), StreamAnswers},
		{QuestionSubject("acme", "job-1"), StreamQuestions},
		{CancelSubject("acme", "job-1"), StreamCancels},
		{DeliverySubject("acme", "job-1"), StreamDelivery},
		{ExecutedSubject("acme", "job-1"), StreamExecuted},
		{NoticeSubject("acme", "job-1"), StreamNotices},
		{GateSubject("acme", "job-1"), ""},
		{PrefixEvent, ""},
		{PrefixEvent + ".", ""},
		{PrefixEvent + "s.acme.job-1", ""},
		{APIList, ""},
		{"", ""},
	} {
		if got := StreamOf(tc.subject); got != tc.want {
			t.Errorf("StreamOf(%q) = %q, want %q", tc.subject, got, tc.want)
		}
	}
}
