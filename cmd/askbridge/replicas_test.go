package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestReplicasShareTheConsoleSecret checks that replicas sharing a record
// in JetStream sign console links with one key, made once by whichever
// comes first and kept in NATS rather than in either data directory, and
// that askbridge link signs with it too: a link one replica's adapter gave
// opens on every replica behind the load balancer.
// It runs alone (no t.Parallel): askbridge link reads the process
// environment, which t.Setenv sets for it.
func TestReplicasShareTheConsoleSecret(t *testing.T) {
	ext := testenv.StartExternalNATS(t)
	t.Setenv("ASK_STORE", "jetstream")
	t.Setenv("ASK_NATS_URL", ext.URL())
	t.Setenv("ASK_CONSOLE_SECRET", "")
	t.Setenv("ASK_DATA_DIR", t.TempDir())

	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut, identity: "cli:kevin"}
	code := c.link(context.Background(), []string{"--as", "console:alice"})
	if code != exitError || out.Len() != 0 ||
		!strings.Contains(errOut.String(), "no console secret: ASK_CONSOLE_SECRET is not set and the bucket "+SecretsBucket+" holds none") {
		t.Fatalf("link before any replica started: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}

	const replicas = 3
	secrets := make([][]byte, replicas)
	dirs := make([]string, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		dirs[i] = t.TempDir()
		n, err := bridge.ConnectNATS(context.Background(), bridge.NATSOptions{URL: ext.URL()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Close)
		s := &service{cfg: &config.Config{CLI: config.CLI{DataDir: dirs[i], NATSURL: ext.URL()}, Store: config.StoreJetStream},
			log: slog.New(slog.NewTextHandler(io.Discard, nil)), nats: n}
		wg.Go(func() {
			var err error
			if secrets[i], err = s.consoleSecret(context.Background()); err != nil {
				t.Errorf("replica %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	for i := range replicas {
		if len(secrets[i]) != 64 || !bytes.Equal(secrets[i], secrets[0]) {
			t.Fatalf("replica %d signs with %d bytes, replica 0 with %d: not one shared key", i, len(secrets[i]), len(secrets[0]))
		}
		if _, err := os.Stat(filepath.Join(dirs[i], "console.secret")); !os.IsNotExist(err) {
			t.Fatalf("replica %d kept a secret of its own in its data dir: %v", i, err)
		}
	}

	errOut.Reset()
	if code := c.link(context.Background(), []string{"--as", "console:alice"}); code != exitOK {
		t.Fatalf("link once the replicas started: exit %d, %s", code, errOut.String())
	}
	u, err := url.Parse(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	exp, _ := strconv.ParseInt(u.Query().Get("exp"), 10, 64)
	l := console.Link{Identity: "console:alice", Scope: console.ScopeList, Expires: time.Unix(exp, 0)}
	if err := (console.Signer{Secret: secrets[1]}).Verify(l, u.Query().Get("sig"), time.Now()); err != nil {
		t.Fatalf("link %s does not open on the replicas: %v", u, err)
	}
}
