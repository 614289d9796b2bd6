package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/internal/testenv/nsclayout"
)

// TestServiceOnAnOperatorsOwnAccounts: an operator who runs NATS with nsc
// hands askbridge a signing key of each account and no other key
// (docs/deploy.md, "The same layout with nsc"). `creds import-keys` keeps
// them; the replica connects with a credential it mints with the service
// account's signing key, an agent asks with its credential, a person's
// answer crosses the intake as theirs, and `creds revoke` says what the
// operator runs for NATS to refuse the credential too.
func TestServiceOnAnOperatorsOwnAccounts(t *testing.T) {
	t.Parallel()
	l := nsclayout.New(t)
	export, data := t.TempDir(), t.TempDir()
	l.Export(t, export)
	var out, errOut strings.Builder
	admin := &cli{stdout: &out, stderr: &errOut, dataDir: data}
	if code := admin.credsCmd(context.Background(), []string{"import-keys", "--dir", export}); code != exitOK {
		t.Fatalf("creds import-keys: exit %d: %s", code, errOut.String())
	}
	if !regexp.MustCompile(`(?m)^AGENTS +A[A-Z0-9]{55} +A[A-Z0-9]{55}$`).MatchString(out.String()) ||
		!strings.Contains(out.String(), "written: "+filepath.Join(data, "nats-auth/keys.json")) {
		t.Fatalf("creds import-keys printed %q", out.String())
	}
	seeds, _ := filepath.Glob(filepath.Join(export, "*.nk"))
	for _, path := range seeds {
		if seed, _ := os.ReadFile(path); strings.Contains(out.String(), strings.TrimSpace(string(seed))) {
			t.Fatal("creds import-keys printed a seed")
		}
	}
	out.Reset()
	if code := admin.credsCmd(context.Background(), []string{"nats-config", "--out", filepath.Join(t.TempDir(), "accounts.conf")}); code == exitOK ||
		!strings.Contains(errOut.String(), "signing keys of an operator's own accounts") || !strings.Contains(errOut.String(), "nsc generate config") {
		t.Fatalf("creds nats-config with an operator's signing keys: exit %d: %s", code, errOut.String())
	}

	o := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true}
	l.Configure(t, o)
	ns, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(testenv.Patience) {
		t.Fatal("the operator's NATS did not start")
	}
	t.Cleanup(ns.Shutdown)

	_, cfg := startTestService(t, func(c *config.Config) {
		c.DataDir, c.NATSURL, c.Store, c.NATSReplicas, c.NATSReplicasSet = data, ns.ClientURL(), config.StoreJetStream, 1, true
		c.Operators = []string{"cli:alice"}
	})
	nc, err := nats.Connect(ns.ClientURL(), mustCreds(t, mintCreds(t, cfg, "agent", "--tenant", "acme", "--name", "nsc-bot"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	a, err := agent.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ch := askAsync(t, a, &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", Question: "Which colour?", Choices: []string{"red", "blue"}})
	var aout, aerr strings.Builder
	alice := &cli{stdout: &aout, stderr: &aerr, identity: "cli:mallory", natsURL: ns.ClientURL(), creds: mintCreds(t, cfg, "person", "--as", "cli:alice")}
	waitPending(t, alice, "job-1", "q-1")
	if code := alice.answer(context.Background(), []string{"--tenant", "acme", "job-1", "q-1", "blue"}); code != exitOK {
		t.Fatalf("answer: exit %d: %s", code, aerr.String())
	}
	if res := waitOutcome(t, ch); res.By != "cli:alice" || res.Text != "The answer: blue" {
		t.Fatalf("resume %+v", res)
	}

	if code := admin.credsCmd(context.Background(), []string{"revoke", "nsc-bot"}); code != exitOK {
		t.Fatalf("creds revoke: exit %d: %s", code, errOut.String())
	}
	if !regexp.MustCompile(`nsc revocations add-user --account AGENTS --user-public-key U[A-Z0-9]{55}, then pushes the account \(nsc push --account AGENTS\)`).MatchString(out.String()) {
		t.Fatalf("creds revoke printed %q", out.String())
	}
}

// TestEmbeddedNATSRefusesAnOperatorsSigningKeys: the embedded NATS needs
// askbridge's own operator; with an operator's signing keys the service
// refuses to start, saying to point it at that operator's NATS.
func TestEmbeddedNATSRefusesAnOperatorsSigningKeys(t *testing.T) {
	t.Parallel()
	l := nsclayout.New(t)
	export, data := t.TempDir(), t.TempDir()
	l.Export(t, export)
	var out, errOut strings.Builder
	if code := (&cli{stdout: &out, stderr: &errOut, dataDir: data}).credsCmd(context.Background(), []string{"import-keys", "--dir", export}); code != exitOK {
		t.Fatalf("creds import-keys: exit %d: %s", code, errOut.String())
	}
	cfg := testConfig(t, func(c *config.Config) { c.DataDir = data })
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
	defer cancel()
	s, err := startService(ctx, cfg, testenv.FailureLogger(t))
	if err == nil {
		s.stop(context.Background())
		t.Fatal("the embedded NATS started with an operator's signing keys")
	}
	if !strings.Contains(err.Error(), "signing keys of an operator's own accounts") || !strings.Contains(err.Error(), "set ASK_NATS_URL") {
		t.Fatalf("start: %v", err)
	}
}
