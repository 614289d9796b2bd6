package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestPersonReadsOnlyTheirTenantsFigures: a person's credential reads no
// agent's resumes, and the stats of the tenants it holds a role in only:
// every tenant's with a role in all of them, one it names with a role in
// it, nothing without.
func TestPersonReadsOnlyTheirTenantsFigures(t *testing.T) {
	t.Parallel()
	s, cfg := startTestService(t, func(c *config.Config) {
		c.Operators, c.Readers = []string{"cli:kevin", "acme/cli:bob"}, []string{"beta/cli:bob"}
	})
	admin := agentFor(t, s)
	kevin, _, _ := testCLI(s, "cli:kevin")
	ctx := context.Background()
	for _, tenant := range []string{"acme", "other"} {
		job := "job-" + tenant
		ch := askAsync(t, admin, &bridge.Question{Tenant: tenant, JobID: job, QuestionID: "q-1", Question: "Which colour?", Choices: []string{"red", "blue"}})
		waitPending(t, kevin, job, "q-1")
		if code := kevin.answer(ctx, []string{"--tenant", tenant, job, "q-1", "red"}); code != exitOK {
			t.Fatalf("answer in %s: exit %d", tenant, code)
		}
		waitOutcome(t, ch)
	}
	mallory := connectAs(t, s, mintCreds(t, cfg, "person", "--as", "cli:mallory"))
	bobCreds := mintCreds(t, cfg, "person", "--as", "cli:bob")
	bob := connectAs(t, s, bobCreds)
	kevinCreds := connectAs(t, s, mintCreds(t, cfg, "person", "--as", "cli:kevin"))
	rctx, cancel := context.WithTimeout(ctx, testenv.Patience)
	defer cancel()

	for who, nc := range map[string]*nats.Conn{"cli:mallory": mallory, "cli:kevin": kevinCreds} {
		var res bridge.ResumesReply
		if err := bridge.Request(rctx, nc, bridge.APIResumes, bridge.ResumesRequest{Tenant: "other", JobID: "job-other", QuestionID: "q-1"}, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Resumes) != 0 || !strings.Contains(res.Error, who+" is a person") {
			t.Errorf("%s read resumes: %+v", who, res)
		}
	}

	stats := func(nc *nats.Conn, tenant string) bridge.StatsReply {
		t.Helper()
		var r bridge.StatsReply
		if err := bridge.Request(rctx, nc, bridge.APIStats, bridge.StatsRequest{Tenant: tenant}, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	tenantsOf := func(r bridge.StatsReply) string {
		var out []string
		if r.Clarification != nil {
			for _, g := range r.Clarification.Groups {
				out = append(out, g.Tenant)
			}
		}
		return strings.Join(out, ",")
	}
	refused := []struct {
		nc     *nats.Conn
		tenant string
		want   string
	}{
		{mallory, "", "stats: cli:mallory holds no role"},
		{mallory, "acme", "stats: cli:mallory holds no role"},
		{bob, "", "stats: cli:bob holds roles in acme and beta only: name one of them"},
		{bob, "other", "stats: cli:bob holds no role in tenant other"},
	}
	for _, c := range refused {
		if r := stats(c.nc, c.tenant); !strings.Contains(r.Error, c.want) || r.ByState != nil || r.Clarification != nil {
			t.Errorf("stats of %q for a person: %+v, want refused with %q", c.tenant, r, c.want)
		}
	}
	if r := stats(bob, "acme"); r.Error != "" || r.ByState != nil || tenantsOf(r) != "acme" {
		t.Errorf("stats of acme for its operator: %+v (tenants %q), want acme's measures only", r, tenantsOf(r))
	}
	var out, errOut strings.Builder
	c := &cli{stdout: &out, stderr: &errOut, natsURL: s.natsURL(), creds: bobCreds}
	if code := c.stats(ctx, []string{"--tenant", "acme"}); code != exitOK || strings.Contains(out.String(), "outbox backlog") ||
		!strings.Contains(out.String(), "Clarification, questions asked since") {
		t.Errorf("askbridge stats --tenant acme for its operator: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if r := stats(kevinCreds, ""); r.Error != "" || r.ByState[bridge.StateAnswered] != 2 || tenantsOf(r) != "acme,other" {
		t.Errorf("stats for an operator of every tenant: %+v (tenants %q)", r, tenantsOf(r))
	}
}

// watched is a credential's connection whose asynchronous errors (the
// permissions violations NATS sends) are kept for the test to read.
type watched struct {
	nc   *nats.Conn
	mu   sync.Mutex
	errs []error
}

func connectWatched(t *testing.T, s *service, creds string) *watched {
	t.Helper()
	w := &watched{}
	opts := append(mustCreds(t, creds), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		w.mu.Lock()
		w.errs = append(w.errs, err)
		w.mu.Unlock()
	}))
	nc, err := nats.Connect(s.natsURL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	w.nc = nc
	return w
}

// cannotRead shows that w may not read subjects. It subscribes to them,
// then publish makes askbridge publish on each (in the service account,
// reaching other accounts through the stream exports) and returns once
// they were delivered; then an admin publishes on w's own inbox. NATS
// sends a connection what it handles in that order, so when that one
// arrives, nothing from subjects came before it. (A reply to a request
// crosses a service import, and may come later: publish uses none.) And
// nats.go reports the server's refusal of each subscription.
func (w *watched) cannotRead(t *testing.T, s *service, subjects []string, publish func()) {
	t.Helper()
	got := make(chan *nats.Msg, 64)
	for _, subject := range subjects {
		sub, err := w.nc.ChanSubscribe(subject, got)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
	}
	mine := make(chan *nats.Msg, 1)
	inbox := w.nc.NewInbox()
	sub, err := w.nc.ChanSubscribe(inbox, mine)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := w.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	publish()
	if err := s.nats.Conn.Publish(inbox, []byte("after")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-mine:
	case <-time.After(testenv.Patience):
		t.Fatalf("nothing reached %s", inbox)
	}
	for len(got) > 0 {
		m := <-got
		t.Errorf("the credential read %s: %.80s", m.Subject, m.Data)
	}
	for _, subject := range subjects {
		want := `Subscription to "` + subject + `"`
		testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
			w.mu.Lock()
			defer w.mu.Unlock()
			for _, err := range w.errs {
				if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), want) {
					return nil
				}
			}
			return fmt.Errorf("no permissions violation for %s among %v", subject, w.errs)
		})
	}
}

// TestCredentialsCannotReadFurther: an agent of acme reads neither
// another tenant's events and resumes nor another credential's replies,
// and a person not another person's, though askbridge publishes them
// while they listen.
func TestCredentialsCannotReadFurther(t *testing.T) {
	t.Parallel()
	s, cfg := startTestService(t, nil)
	askAsync(t, agentFor(t, s), &bridge.Question{Tenant: "other", JobID: "job-9", QuestionID: "q-9", Question: "Secret of another tenant?", Choices: []string{"a", "b"}})
	root, _, _ := testCLI(s, "")
	waitPending(t, root, "job-9", "q-9")
	acme := connectWatched(t, s, mintCreds(t, cfg, "agent", "--tenant", "acme"))
	otherBot, err := agent.New(connectAs(t, s, mintCreds(t, cfg, "agent", "--tenant", "other", "--name", "other-bot")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
	defer cancel()
	acme.cannotRead(t, s, []string{"ask.v1.event.other.>", "ask.v1.resume.other.>", "_INBOX.other-bot.>"}, func() {
		// other-bot's cancel of q-9: its decision on other-bot's inbox,
		// q-9's cancelled event and its resume.
		seen := make(chan *nats.Msg, 8)
		for _, subject := range []string{bridge.EventSubject("other", "job-9"), bridge.ResumeSubject("other", "job-9")} {
			sub, err := s.nats.Conn.ChanSubscribe(subject, seen)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
		}
		if d, err := otherBot.Cancel(ctx, bridge.Cancel{Tenant: "other", JobID: "job-9"}); err != nil || d.Ended != 1 {
			t.Fatalf("other-bot's cancel: %+v, %v", d, err)
		}
		for kinds := map[string]bool{}; len(kinds) < 2; {
			select {
			case m := <-seen:
				kinds[strings.Split(m.Subject, ".")[2]] = true
			case <-ctx.Done():
				t.Fatal("q-9's cancel published no event and resume")
			}
		}
	})
	mallory := connectWatched(t, s, mintCreds(t, cfg, "person", "--as", "cli:mallory"))
	alice := connectAs(t, s, mintCreds(t, cfg, "person", "--as", "cli:alice"))
	mallory.cannotRead(t, s, []string{"_INBOX.cli:alice.>"}, func() {
		// The runtime tells cli:alice's inbox what became of her attempt.
		body := `{"tenant":"other","job_id":"job-9","question_id":"q-9","attempt_id":"a-1","action":"answer","answer":"a"}`
		if typ, _ := decidedAttempt(t, alice, "other", "job-9", "attempt-a-1", body); typ != bridge.EventRefused {
			t.Fatalf("cli:alice's attempt: %s, want refused", typ)
		}
	})
}
