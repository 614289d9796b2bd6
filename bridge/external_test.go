package bridge

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/internal/testenv/poll"
)

// startExternal runs a nats-server with JetStream on a random loopback
// port, as an operator's own server, stopped when the test ends.
func startExternal(t *testing.T, o server.Options) *server.Server {
	t.Helper()
	o.Host, o.JetStream, o.NoSigs, o.NoLog = "127.0.0.1", true, true, true
	if o.Port == 0 {
		o.Port = -1
	}
	if o.StoreDir == "" {
		o.StoreDir = t.TempDir()
	}
	ns, err := server.NewServer(&o)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns
}

// syncBuffer is a log destination tests read while writers write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestConnectNATSAdoptsExistingStreams checks askbridge's streams made
// beforehand on an external server, with other settings, are adopted:
// what an operator tuned is kept (and said), what askbridge relies on is
// set (and said), and a stream it cannot use is refused by name.
func TestConnectNATSAdoptsExistingStreams(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		made    jetstream.StreamConfig
		check   func(cfg jetstream.StreamConfig) bool
		logs    []string
		refused string
	}{
		{name: "operator limits and a longer age kept",
			made: jetstream.StreamConfig{Name: StreamEvents, Subjects: []string{PrefixEvent + ".>"}, MaxBytes: 1 << 30,
				MaxAge: 90 * 24 * time.Hour, Compression: jetstream.S2Compression, Description: "tuned by ops"},
			check: func(c jetstream.StreamConfig) bool {
				return c.MaxBytes == 1<<30 && c.MaxAge == 90*24*time.Hour && c.Compression == jetstream.S2Compression &&
					c.Description == "tuned by ops" && c.Duplicates == DuplicateWindow && c.Retention == jetstream.InterestPolicy
			},
			logs: []string{"stream ASK_EVENTS keeps the limits it was given", "max bytes 1073741824",
				"stream ASK_EVENTS existed with other settings", "duplicate window 2m0s -> 10m0s", "retention Limits -> Interest"}},
		{name: "an events stream made as a work queue refused",
			made:    jetstream.StreamConfig{Name: StreamEvents, Subjects: []string{PrefixEvent + ".>"}, Retention: jetstream.WorkQueuePolicy},
			refused: "nats: stream ASK_EVENTS exists with WorkQueue retention, and askbridge keeps it until every adapter has read it"},
		{name: "a shorter age, a narrower subject and no acks changed",
			made: jetstream.StreamConfig{Name: StreamResumes, Subjects: []string{PrefixResume + ".acme.>"}, MaxAge: time.Hour,
				Duplicates: DuplicateWindow, NoAck: true},
			check: func(c jetstream.StreamConfig) bool {
				return c.MaxAge == 30*24*time.Hour && len(c.Subjects) == 1 && c.Subjects[0] == PrefixResume+".>" && !c.NoAck
			},
			logs: []string{"stream ASK_RESUMES existed with other settings", "max age 1h0m0s -> 720h0m0s",
				"subjects [ask.v1.resume.acme.>] -> [ask.v1.resume.>]", "no_ack was set"}},
		{name: "memory storage refused",
			made:    jetstream.StreamConfig{Name: StreamAnswers, Subjects: []string{PrefixAnswer + ".>"}, Storage: jetstream.MemoryStorage},
			refused: "nats: stream ASK_ANSWERS exists with Memory storage, and askbridge keeps questions and answers on disk"},
		{name: "a work queue made with another retention refused",
			made:    jetstream.StreamConfig{Name: StreamQuestions, Subjects: []string{PrefixQuestion + ".>"}},
			refused: "nats: stream ASK_QUESTIONS exists with Limits retention, and askbridge keeps what only its runtime reads in a work queue"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := startExternal(t, server.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			nc, err := nats.Connect(ns.ClientURL())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := js.CreateStream(ctx, c.made); err != nil {
				t.Fatal(err)
			}
			var logs syncBuffer
			n, err := ConnectNATS(ctx, NATSOptions{URL: ns.ClientURL(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if c.refused != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.refused) {
					t.Fatalf("ConnectNATS = %v, want %q", err, c.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("ConnectNATS: %v", err)
			}
			defer n.Close()
			s, err := n.JS.Stream(ctx, c.made.Name)
			if err != nil {
				t.Fatal(err)
			}
			if cfg := s.CachedInfo().Config; !c.check(cfg) {
				t.Errorf("adopted stream: %+v", cfg)
			}
			for _, want := range c.logs {
				if !strings.Contains(logs.String(), want) {
					t.Errorf("logs lack %q:\n%s", want, logs.String())
				}
			}
		})
	}
}

// TestConnectNATSReplicasOnASingleServer checks ASK_NATS_REPLICAS above 1
// against an external server that is not clustered is refused in its own
// terms, naming the variable and what to do.
func TestConnectNATSReplicasOnASingleServer(t *testing.T) {
	t.Parallel()
	ns := startExternal(t, server.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := ConnectNATS(ctx, NATSOptions{URL: ns.ClientURL(), Replicas: 3})
	want := "nats: stream ASK_QUESTIONS: ASK_NATS_REPLICAS is 3, but the NATS server at ASK_NATS_URL is not part of a JetStream cluster " +
		"and keeps one copy of a stream: set ASK_NATS_REPLICAS=1, or point ASK_NATS_URL at a cluster of at least 3 servers"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("ConnectNATS with 3 replicas on one server = %v\nwant %q", err, want)
	}
	n, err := ConnectNATS(ctx, NATSOptions{URL: ns.ClientURL(), Replicas: 1})
	if err != nil {
		t.Fatalf("ConnectNATS with 1 replica: %v", err)
	}
	n.Close()
}

// TestEnsureKVRefusesAMemoryBucket checks a bucket of askbridge's that
// exists in memory on an external server is refused by name, saying
// what to do, rather than with JetStream's bare update error.
func TestEnsureKVRefusesAMemoryBucket(t *testing.T) {
	t.Parallel()
	ns := startExternal(t, server.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := ConnectNATS(ctx, NATSOptions{URL: ns.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if _, err := n.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "ASK_TEST", Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	_, err = EnsureKV(ctx, n.JS, jetstream.KeyValueConfig{Bucket: "ASK_TEST", History: 1, TTL: time.Hour, Storage: jetstream.FileStorage})
	want := "nats: key-value bucket ASK_TEST exists with Memory storage, and askbridge keeps its records on disk " +
		"(JetStream cannot change a bucket's storage): delete the bucket while askbridge is stopped to have it made anew"
	if err == nil || err.Error() != want {
		t.Fatalf("EnsureKV over a memory bucket = %v\nwant %q", err, want)
	}
}

// TestConnectionLossAndReturnAreLogged checks an outage of an external
// NATS shows in the log as it begins and ends, without the password the
// URL carries.
func TestConnectionLossAndReturnAreLogged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	auth := server.Options{Username: "ask", Password: "s3cret-pass", StoreDir: dir}
	ns := startExternal(t, auth)
	port := ns.Addr().(*net.TCPAddr).Port
	logs := &syncBuffer{}
	n, err := ConnectNATS(context.Background(), NATSOptions{
		URL:    fmt.Sprintf("nats://ask:s3cret-pass@127.0.0.1:%d", port),
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ns.Shutdown()
	ns.WaitForShutdown()
	poll.CheckFor(t, poll.Patience, 20*time.Millisecond, func() error {
		if !strings.Contains(logs.String(), "nats: connection lost; reconnecting") {
			return fmt.Errorf("no loss logged:\n%s", logs.String())
		}
		return nil
	})
	auth.Port = port
	startExternal(t, auth)
	poll.CheckFor(t, poll.Patience, 20*time.Millisecond, func() error {
		if !strings.Contains(logs.String(), "nats: reconnected") {
			return fmt.Errorf("no return logged:\n%s", logs.String())
		}
		return nil
	})
	if strings.Contains(logs.String(), "s3cret-pass") {
		t.Fatalf("the password is in the log:\n%s", logs.String())
	}
}

// TestAdoptStreamKeepsReplicasNotAskedFor checks an existing stream keeps
// its replica count when ASK_NATS_REPLICAS is not set (an operator made it
// with three), and takes the count when it is.
func TestAdoptStreamKeepsReplicasNotAskedFor(t *testing.T) {
	t.Parallel()
	have := jetstream.StreamConfig{Name: StreamEvents, Subjects: []string{PrefixEvent + ".>"}, Storage: jetstream.FileStorage,
		MaxAge: EventRetention, Duplicates: DuplicateWindow, Replicas: 3}
	want := have
	want.Replicas = 0
	got, changes, err := adoptStream(have, want)
	if err != nil || got.Replicas != 3 || len(changes) != 0 {
		t.Fatalf("not asked for: replicas %d, changes %q, %v; want 3 kept, no change", got.Replicas, changes, err)
	}
	want.Replicas = 1
	got, changes, err = adoptStream(have, want)
	if err != nil || got.Replicas != 1 || len(changes) != 1 || !strings.Contains(changes[0], "replicas 3 -> 1") {
		t.Fatalf("asked for 1: replicas %d, changes %q, %v", got.Replicas, changes, err)
	}
}
