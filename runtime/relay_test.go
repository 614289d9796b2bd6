package runtime_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/store/record"
)

var errCrash = errors.New("crash")

// crashTest answers a question while the relay fails at one stage, stops,
// restarts cleanly, and checks the job is resumed exactly once.
func crashTest(t *testing.T, before bool) { crashAwayTest(t, before, nil) }

// crashAwayTest is crashTest with away run while the service is down.
func crashAwayTest(t *testing.T, before bool, away func(dir string)) {
	isResume := func(row record.OutboxRow) error {
		if strings.HasPrefix(row.Subject, bridge.PrefixResume+".") {
			return errCrash
		}
		return nil
	}
	o := testenv.Options{Roles: roles}
	if before {
		o.BeforePublish = isResume
	} else {
		o.AfterPublish = isResume
	}
	env := testenv.Start(t, o)
	q := choiceQuestion("job-crash")
	ask(t, env, q)
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-crash", QuestionID: "q-1", AttemptID: "cr1", Answer: json.RawMessage(`"blue"`), By: "slack:UOP"})
	waitState(t, env, q, bridge.StateAnswered)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		n, err := env.Store.OutboxBacklog(context.Background())
		if err != nil || n != 1 {
			return fmt.Errorf("backlog %d, %v; want the resume left unsent", n, err)
		}
		return nil
	})
	dir := env.Dir
	env.Stop()
	if away != nil {
		away(dir)
	}

	env = testenv.Start(t, testenv.Options{Dir: dir, Roles: roles})
	resumes := env.Record(t, bridge.StreamResumes, "ask.v1.resume.acme.job-crash")
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		n, err := env.Store.OutboxBacklog(context.Background())
		if err != nil || n != 0 {
			return fmt.Errorf("backlog %d, %v", n, err)
		}
		if n := len(resumesOf(resumes, "q-1")); n != 1 {
			return fmt.Errorf("%d resumes of q-1", n)
		}
		return nil
	})
	if got := resumesOf(resumes, "q-1")[0]; got.Text != "The answer: blue" {
		t.Fatalf("resume = %+v", got)
	}
}

// resumesOf are the recorded resumes of one question.
func resumesOf(r *testenv.Recorder, questionID string) []bridge.Resume {
	var out []bridge.Resume
	for _, res := range r.Resumes() {
		if res.QuestionID == questionID {
			out = append(out, res)
		}
	}
	return out
}

func TestCrashAfterCommitBeforePublish(t *testing.T)   { crashTest(t, true) }
func TestCrashAfterPublishBeforeMarkSent(t *testing.T) { crashTest(t, false) }

// TestCrashAfterPublishDownPastDuplicateWindow: the resume reached its
// stream, the process died before marking it sent, and it stayed down
// longer than JetStream remembers message ids. Published again, the copy
// would be stored and the job resumed twice.
func TestCrashAfterPublishDownPastDuplicateWindow(t *testing.T) {
	t.Parallel()
	crashAwayTest(t, false, func(dir string) { downPastDuplicateWindow(t, dir) })
}

// TestCrashBeforePublishDownPastDuplicateWindow: a row never published is
// published after a long stop, though old enough to be looked for first.
func TestCrashBeforePublishDownPastDuplicateWindow(t *testing.T) {
	t.Parallel()
	crashAwayTest(t, true, func(dir string) { downPastDuplicateWindow(t, dir) })
}

// TestCrashAfterPublishThenMoreDownPastDuplicateWindow: as above, and the
// job's resume subject got another message after the crash (a refusal of
// another question goes there straight): the resume is not the subject's
// last message, and is still found.
func TestCrashAfterPublishThenMoreDownPastDuplicateWindow(t *testing.T) {
	t.Parallel()
	crashAwayTest(t, false, func(dir string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		n, err := bridge.ConnectNATS(ctx, bridge.NATSOptions{Listen: "127.0.0.1:0", StoreDir: filepath.Join(dir, "nats")})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		other := bridge.Resume{Tenant: "acme", JobID: "job-crash", QuestionID: "q-other", Outcome: bridge.OutcomeInvalid, Text: "The question was refused: test."}
		if err := bridge.Publish(ctx, n.JS, bridge.ResumeSubject("acme", "job-crash"), "other-resume", other); err != nil {
			t.Fatal(err)
		}
		n.Close()
		downPastDuplicateWindow(t, dir)
	})
}

// downPastDuplicateWindow makes it as if eleven minutes passed while the
// service was down: its unsent outbox row is that old, and JetStream has
// forgotten the message ids it saw (its window shrunk for a moment; the
// restart puts it back).
func downPastDuplicateWindow(t *testing.T, dir string) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "askbridge.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec("UPDATE outbox SET created_at = created_at - ? WHERE sent_at IS NULL", (11 * time.Minute).Milliseconds())
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("unsent rows aged: %d, want the resume", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := bridge.ConnectNATS(ctx, bridge.NATSOptions{Listen: "127.0.0.1:0", StoreDir: filepath.Join(dir, "nats")})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	s, err := n.JS.Stream(ctx, bridge.StreamResumes)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.Duplicates = 100 * time.Millisecond
	if _, err := n.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
}

// With a JetStream that syncs only every so often, published rows stay
// unsent for a while, and a restart in that time publishes them again
// under the same message id: the job still gets one resume.
func TestLazyMarkSentRepublishesOnceAfterRestart(t *testing.T) {
	t.Parallel()
	const delay = 10 * time.Second
	// The stream keeps the events for the recorder after the restart.
	env := testenv.Start(t, testenv.Options{Roles: roles, MarkSentAfter: delay, KeepEvents: true})
	q := choiceQuestion("job-lazy")
	ch := ask(t, env, q)
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-lazy", QuestionID: "q-1", AttemptID: "lz", Answer: json.RawMessage(`"red"`), By: "slack:UOP"})
	if out := outcome(t, ch); out.Text != "The answer: red" {
		t.Fatalf("outcome = %+v", out)
	}
	// Published, not yet marked: the asked and answered events and the resume.
	if n, err := env.Store.OutboxBacklog(context.Background()); err != nil || n != 3 {
		t.Fatalf("backlog %d, %v; want 3 rows published but not yet marked", n, err)
	}
	// The backlog an operator reads counts only what is not in JetStream.
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		msg, err := env.NATS.Conn.Request(bridge.APIStats, []byte(`{}`), 5*time.Second)
		if err != nil {
			return err
		}
		var reply bridge.StatsReply
		if err := json.Unmarshal(msg.Data, &reply); err != nil || reply.OutboxBacklog != 0 {
			return fmt.Errorf("stats %s (%v), want outbox_backlog 0", msg.Data, err)
		}
		if got := gauge(t, env, "askbridge_outbox_backlog"); got != 0 {
			return fmt.Errorf("askbridge_outbox_backlog %v, want 0", got)
		}
		return nil
	})
	dir := env.Dir
	env.Stop()

	// The restarted runtime marks what it publishes again sooner: only
	// that it publishes the rows again, and marks them, is checked here.
	env = testenv.Start(t, testenv.Options{Dir: dir, Roles: roles, MarkSentAfter: 300 * time.Millisecond})
	resumes := env.Record(t, bridge.StreamResumes, "ask.v1.resume.acme.job-lazy")
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-lazy")
	testenv.CheckFor(t, 40*time.Second, 20*time.Millisecond, func() error {
		if n, err := env.Store.OutboxBacklog(context.Background()); err != nil || n != 0 {
			return fmt.Errorf("backlog %d, %v", n, err)
		}
		return nil
	})
	if resumes.Len() != 1 || events.EventTypes() != "asked,answered" {
		t.Fatalf("%d resumes, events %s", resumes.Len(), events.EventTypes())
	}
}

// TestCleanStopMarksPublishedRows checks the relay writes its gathered
// marks when it stops: after a clean stop, every row JetStream
// acknowledged is marked sent, so a restart publishes none again.
func TestCleanStopMarksPublishedRows(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	for i := range 3 {
		job := fmt.Sprintf("job-stop-%d", i)
		ch := ask(t, env, choiceQuestion(job))
		attempt(t, env, bridge.AnswerAttempt{JobID: job, QuestionID: "q-1", AttemptID: "st-" + job, Answer: json.RawMessage(`"red"`), By: "slack:UOP"})
		if out := outcome(t, ch); out.Text != "The answer: red" {
			t.Fatalf("outcome = %+v", out)
		}
	}
	// Wait until the relay has seen the acknowledgements (published
	// counts them), then stop at once, well within a marking period.
	testenv.CheckFor(t, testenv.Patience, time.Millisecond, func() error {
		if got := counters(t, env, "askbridge_outbox_published_total"); got != " 9" {
			return fmt.Errorf("published %q, want 9", got)
		}
		return nil
	})
	dir := env.Dir
	env.Stop()
	st, err := store.Open(context.Background(), filepath.Join(dir, "askbridge.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n, err := st.OutboxBacklog(context.Background()); err != nil || n != 0 {
		t.Fatalf("after a clean stop, %d rows not marked sent (%v)", n, err)
	}
}

func gauge(t *testing.T, env *testenv.Env, name string) float64 {
	t.Helper()
	families, err := env.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// TestRelayPublishesAgainWhenNoAckComes: a resume published while no
// stream takes its subject, but a subscriber does (an agent waiting on
// it), reaches the subscriber and is acknowledged by nobody. The relay
// publishes it again after bridge.AckWithin, and once the stream takes
// the subject again the resume is stored: a lost acknowledgement does not
// hold the outbox back for ever.
func TestRelayPublishesAgainWhenNoAckComes(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	ctx := context.Background()
	q := choiceQuestion("job-noack")
	ch := ask(t, env, q)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		_, err := env.Store.Find(ctx, record.Key{Tenant: "acme", JobID: q.JobID, QuestionID: q.QuestionID})
		return err
	})

	heard := make(chan struct{}, 16)
	sub, err := env.NATS.Conn.Subscribe(bridge.PrefixResume+".>", func(*nats.Msg) { heard <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	st, err := env.NATS.JS.Stream(ctx, bridge.StreamResumes)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	subjects := cfg.Subjects
	cfg.Subjects = []string{"elsewhere.>"}
	if _, err := env.NATS.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: 1, AttemptID: "noack",
		Answer: json.RawMessage(`"red"`), By: "slack:UOP"})
	select {
	case <-heard: // published, and taken by the subscriber alone
	case <-time.After(testenv.Patience):
		t.Fatal("the resume was never published")
	}
	cfg.Subjects = subjects
	if _, err := env.NATS.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		if n := testenv.StreamCount(t, env.NATS, bridge.StreamResumes, bridge.ResumeSubject("acme", q.JobID)); n != 1 {
			return fmt.Errorf("%d resumes stored, want the one whose acknowledgement never came", n)
		}
		return nil
	})
	if out := outcome(t, ch); out.Text != "The answer: red" {
		t.Fatalf("outcome %+v", out)
	}
}
