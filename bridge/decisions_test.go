package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/internal/testenv/poll"
)

func TestValidNotifySubject(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"_INBOX.abc", true},
		{"_INBOX.abc.def", true},
		{"a", false},
		{"_INBOX", false},
		{"_INBOX.", false},
		{"$JS.API.STREAM.DELETE.ASK_QUESTIONS", false},
		{"ask.v1.resume.acme.job-1", false},
		{"", false},
		{"_INBOX.*", false},
		{"_INBOX.>", false},
		{"_INBOX..x", false},
		{".x", false},
		{"x.", false},
		{"has space", false},
		{"tab\there", false},
	} {
		if got := ValidNotifySubject(tc.s); got != tc.want {
			t.Errorf("ValidNotifySubject(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

// TestPublishAttemptWaits plays the runtime: it reads attempts from the
// answers stream's subject and tells the header's inbox, or announces the
// decision as an event, and checks each ends the wait.
func TestPublishAttemptWaits(t *testing.T) {
	t.Parallel()
	n := startNATS(t)
	d, err := WatchDecisions(n.Conn)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	viaEvent := map[string]bool{"by-event": true}
	var retried atomic.Int32
	sub, err := n.Conn.Subscribe(PrefixAnswer+".>", func(m *nats.Msg) {
		var a AnswerAttempt
		if err := json.Unmarshal(m.Data, &a); err != nil {
			t.Errorf("attempt on the bus: %v", err)
			return
		}
		if a.AttemptID == "ignored" {
			return
		}
		if a.AttemptID == "retried" {
			// Tell once, after the second copy, as the runtime tells once
			// for the one copy JetStream keeps.
			if retried.Add(1) != 2 {
				return
			}
		}
		if viaEvent[a.AttemptID] {
			ev, _ := json.Marshal(Event{Type: EventRefused, Tenant: a.Tenant, JobID: a.JobID, AttemptID: a.AttemptID})
			_ = n.Conn.Publish(EventSubject(a.Tenant, a.JobID), ev)
			return
		}
		to := m.Header.Get(HeaderDecidedTo)
		if a.AttemptID == "no-waiting" {
			if to != "" {
				t.Errorf("a nil Decisions asked to be told at %q", to)
			}
			return
		}
		if !ValidNotifySubject(to) {
			t.Errorf("attempt %s: %s = %q", a.AttemptID, HeaderDecidedTo, to)
			return
		}
		_ = n.Conn.Publish(to, []byte(a.AttemptID))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := n.Conn.Flush(); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		id      string
		d       *Decisions
		timeout time.Duration
		want    bool
	}{
		{"told", d, 10 * time.Second, true},
		{"by-event", d, 10 * time.Second, true},
		{"ignored", d, 200 * time.Millisecond, false},
		{"no-waiting", nil, 10 * time.Second, false},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
		a := &AnswerAttempt{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", AttemptID: tc.id, Answer: json.RawMessage(`"red"`), By: "slack:U1"}
		decided, err := tc.d.PublishAttempt(ctx, n.JS, a)
		cancel()
		if err != nil || decided != tc.want {
			t.Errorf("PublishAttempt(%s) = %v, %v; want %v, nil", tc.id, decided, err, tc.want)
		}
	}
	// A platform's retry of one interaction: two waits for one attempt id,
	// one word from the runtime; both end.
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			a := &AnswerAttempt{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", AttemptID: "retried", Answer: json.RawMessage(`"red"`), By: "slack:U1"}
			if decided, err := d.PublishAttempt(ctx, n.JS, a); err != nil || !decided {
				t.Errorf("copy %d of a retried attempt: %v, %v; want decided", i, decided, err)
			}
		}()
	}
	wg.Wait()

	info, err := n.JS.Stream(context.Background(), StreamAnswers)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.CachedInfo().State.Msgs; got != 5 {
		t.Errorf("answers stream holds %d attempts, want 5 (the retry is one)", got)
	}
	d.mu.Lock()
	left := len(d.waiting)
	d.mu.Unlock()
	if left != 0 {
		t.Errorf("%d waits left behind", left)
	}
}

// TestPublishAttemptRetriedAfterItsWaitRanOut: the wait for an attempt
// runs out before the runtime decides it; the decision comes after. A
// retry of the attempt (the same id, which JetStream drops as a
// duplicate, so the runtime never tells of it again) is decided at once.
func TestPublishAttemptRetriedAfterItsWaitRanOut(t *testing.T) {
	t.Parallel()
	n := startNATS(t)
	d, err := WatchDecisions(n.Conn)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	inbox := make(chan string, 4)
	sub, err := n.Conn.Subscribe(PrefixAnswer+".>", func(m *nats.Msg) {
		select {
		case inbox <- m.Header.Get(HeaderDecidedTo):
		default: // a publish tried again names the same inbox
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := n.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	a := &AnswerAttempt{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", AttemptID: "late", Answer: json.RawMessage(`"red"`), By: "slack:U1"}
	// The platform's budget: the runtime here never answers within it. A
	// publish that itself ran out of it (a stalled machine) goes again.
	poll.CheckFor(t, poll.Patience, 0, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		decided, err := d.PublishAttempt(ctx, n.JS, a)
		if decided {
			t.Fatalf("PublishAttempt with no decision says it was decided")
		}
		return err
	})
	// The runtime decides it now, and tells the inbox the attempt named.
	if err := n.Conn.Publish(<-inbox, []byte(a.AttemptID)); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, poll.Patience, 10*time.Millisecond, func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if !d.late[a.AttemptID] {
			return fmt.Errorf("the late decision is not known yet")
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), poll.Patience)
	decided, err := d.PublishAttempt(ctx, n.JS, a)
	cancel()
	if err != nil || !decided {
		t.Fatalf("the retry = %v, %v; want decided (its decision came after the first wait)", decided, err)
	}
	info, err := n.JS.Stream(context.Background(), StreamAnswers)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.CachedInfo().State.Msgs; got != 1 {
		t.Errorf("answers stream holds %d attempts, want 1", got)
	}
}

// TestDecisionsRememberBoundedLateAttempts: the attempts given up on are
// remembered up to maxLate, the oldest forgotten first.
func TestDecisionsRememberBoundedLateAttempts(t *testing.T) {
	t.Parallel()
	d := &Decisions{waiting: map[string]*waiter{}, late: map[string]bool{}}
	for i := range maxLate + 1 {
		id := fmt.Sprint("a-", i)
		if d.giveUp(id, d.expect(id)) {
			t.Fatalf("%s: given up as decided", id)
		}
	}
	if len(d.late) != maxLate || len(d.lateOrder) != maxLate || len(d.waiting) != 0 {
		t.Fatalf("%d remembered (%d in order), %d waiting; want %d, 0", len(d.late), len(d.lateOrder), len(d.waiting), maxLate)
	}
	if _, ok := d.late["a-0"]; ok {
		t.Errorf("the oldest is still remembered")
	}
	d.done("a-1")
	if ch := d.expect("a-1"); ch != decidedLate {
		t.Errorf("a remembered attempt decided since waits again")
	}
}
