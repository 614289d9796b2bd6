package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv/cluster"
)

// TestClusterWithAccounts runs a replica on a 3-node NATS cluster that
// includes the accounts `askbridge creds nats-config` writes, as
// docs/deploy.md sets one up: the cluster refuses a client without a
// credential, an agent asks with its credential, and a person's answer
// is taken as theirs.
func TestClusterWithAccounts(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	accounts := filepath.Join(t.TempDir(), "askbridge-accounts.conf")
	var out, errOut strings.Builder
	admin := &cli{stdout: &out, stderr: &errOut, dataDir: data}
	if code := admin.credsCmd(context.Background(), []string{"nats-config", "--out", accounts}); code != exitOK {
		t.Fatalf("creds nats-config: exit %d: %s", code, errOut.String())
	}
	nodes := cluster.StartT(t, cluster.Options{Include: accounts})
	if _, err := nats.Connect(nodes.URLs()); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("the cluster admitted a client without credentials: %v", err)
	}
	s, cfg := startTestService(t, func(c *config.Config) {
		c.DataDir, c.NATSURL, c.Store, c.NATSReplicas, c.NATSReplicasSet = data, nodes.URLs(), config.StoreJetStream, 3, true
		c.Operators = []string{"cli:alice"}
	})
	nc, err := nats.Connect(nodes.URLs(), mustCreds(t, mintCreds(t, cfg, "agent", "--tenant", "acme", "--name", "cluster-bot"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	a, err := agent.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ch := askAsync(t, a, &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", Question: "Which colour?", Choices: []string{"red", "blue"}})
	alice := mintCreds(t, cfg, "person", "--as", "cli:alice")
	var aout, aerr strings.Builder
	c := &cli{stdout: &aout, stderr: &aerr, identity: "cli:mallory", natsURL: nodes.URLs(), creds: alice}
	waitPending(t, c, "job-1", "q-1")
	if code := c.answer(context.Background(), []string{"--tenant", "acme", "job-1", "q-1", "blue"}); code != exitOK {
		t.Fatalf("answer: exit %d: %s", code, aerr.String())
	}
	if res := waitOutcome(t, ch); res.By != "cli:alice" || res.Text != "The answer: blue" {
		t.Fatalf("resume %+v", res)
	}
	_ = s
}

// mustCreds are the options a client with a .creds file connects with.
func mustCreds(t *testing.T, path string) []nats.Option {
	t.Helper()
	opts, err := (&cli{creds: path}).credentials()
	if err != nil {
		t.Fatal(err)
	}
	return opts
}
