package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/internal/testenv/sqliterecord"
)

// startTestService runs the whole service in-process on loopback ports in a
// temp dir, configured by set (nil: the defaults; testConfig), and stops it
// when the test ends. Its log is printed if the test fails.
func startTestService(t *testing.T, set func(*config.Config)) (*service, *config.Config) {
	t.Helper()
	cfg := testConfig(t, set)
	if cfg.Store == config.StoreSQLite {
		if err := sqliterecord.Seed(filepath.Join(cfg.DataDir, "askbridge.db")); err != nil {
			t.Fatal(err)
		}
	}
	// A hang detector: a cluster's JetStream may take a while to be ready
	// on a busy machine, and the start waits for it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*testenv.Patience)
	defer cancel()
	s, err := startService(ctx, cfg, testenv.FailureLogger(t))
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { s.stop(context.Background()) })
	return s, cfg
}

// testConfig is the default configuration on loopback ports (port 0) in a
// temp dir, changed by set (when not nil) and validated as the service's
// own is at start. Tests build it, never the process environment, which
// tests running side by side share.
func testConfig(t *testing.T, set func(*config.Config)) *config.Config {
	t.Helper()
	c := config.Defaults()
	c.DataDir, c.HTTPAddr, c.NATSListen = t.TempDir(), "127.0.0.1:0", "127.0.0.1:0"
	if set != nil {
		set(&c)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	return &c
}

func testCLI(s *service, identity string) (*cli, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &cli{stdout: &out, stderr: &errOut, identity: identity, natsURL: s.natsURL(), natsOpts: []nats.Option{s.nats.Admin()}}, &out, &errOut
}

func agentFor(t *testing.T, s *service) *agent.Client {
	t.Helper()
	nc, err := nats.Connect(s.natsURL(), s.nats.Admin())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	a, err := agent.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// asked is what an agent's Ask returned.
type asked struct {
	res *bridge.Resume
	err error
}

// askAsync asks through the Go agent package and returns a channel that
// gets what Ask returned. The ask lives as long as the test, so the test's
// own waits (readiness, waitOutcome) bound it rather than a deadline of
// its own that could end first.
func askAsync(t *testing.T, a *agent.Client, q *bridge.Question) <-chan asked {
	ch := make(chan asked, 1)
	go func() {
		res, err := a.Ask(t.Context(), q)
		ch <- asked{res, err}
	}()
	return ch
}

// waitOutcome waits for the ask to end and fails the test with the agent's
// error if it got no outcome.
func waitOutcome(t *testing.T, ch <-chan asked) *bridge.Resume {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("the agent got no outcome: %v", a.err)
		}
		return a.res
	case <-time.After(testenv.Patience):
		t.Fatal("timed out waiting for the outcome")
	}
	return nil
}

// waitPending waits until the CLI user can see the question pending.
func waitPending(t *testing.T, c *cli, job, question string) {
	t.Helper()
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		nc, _, err := c.connect("")
		if err != nil {
			return err
		}
		defer nc.Close()
		v, _, err := c.lookup(nc, "", job, question)
		if err != nil {
			return err
		}
		if v.State != bridge.StatePending {
			return fmt.Errorf("state %s", v.State)
		}
		return nil
	})
}
