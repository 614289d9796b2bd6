package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestServeNamesTheNATSItCannotReach checks a NATS serve cannot connect to
// stops the start with one message naming ASK_NATS_URL and the address
// (and ASK_NATS_CREDS when set), never a password or the credentials.
func TestServeNamesTheNATSItCannotReach(t *testing.T) {
	t.Parallel()
	closed := closedAddr(t)
	guarded := natsWithPassword(t, "ask", "right-password")
	creds := filepath.Join(t.TempDir(), "Sekr3t-pasted-into-the-path.creds")
	for _, c := range []struct {
		name        string
		url, creds  string
		want, never string
	}{
		{"nothing listens", "nats://ask:Sekr3t-pw@" + closed, "",
			"nats: cannot connect to nats://" + closed + " (ASK_NATS_URL): nats: no servers available for connection: is a NATS server listening there, and reachable from this machine?", "Sekr3t"},
		{"several addresses with credentials", "nats://" + closed + ", tls://Sekr3t-token@" + closed, creds,
			"nats: cannot connect to nats://" + closed + ", tls://" + closed + " (ASK_NATS_URL, with the credentials file ASK_NATS_CREDS names): nats: open the file ASK_NATS_CREDS names: no such file or directory", "Sekr3t"},
		{"the server refuses the password", "nats://ask:Sekr3t-wrong@" + guarded, "",
			"nats: cannot connect to nats://" + guarded + " (ASK_NATS_URL): nats: Authorization Violation", "Sekr3t"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t, func(cfg *config.Config) { cfg.NATSURL, cfg.NATSCreds = c.url, c.creds })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			logs := &testenv.LockedBuffer{}
			s, err := startService(ctx, cfg, slog.New(slog.NewTextHandler(logs, nil)))
			if err == nil {
				s.stop(context.Background())
				t.Fatal("the service started")
			}
			t.Log(err)
			if !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q\nwant one line starting %q", err, c.want)
			}
			if strings.Contains(err.Error()+logs.String(), c.never) {
				t.Errorf("a secret shows: error %q, logs:\n%s", err, logs)
			}
		})
	}
}

// closedAddr is a loopback address nothing listens on: port 1, which no
// test binds and the kernel never hands out. A free port found and closed
// is not one: under load another test's server was given it meanwhile,
// and the connection was taken and never answered.
func closedAddr(t *testing.T) string {
	t.Helper()
	return "127.0.0.1:1"
}

// natsWithPassword runs a NATS server with JetStream that takes user with
// password only, and returns its host:port.
func natsWithPassword(t *testing.T, user, password string) string {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true, Username: user, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats not ready")
	}
	return ns.Addr().String()
}

// TestServeWarnsOfAHalfConfiguredPlatform checks a chat platform given
// some settings but not its bot token is named in a warning at start, and
// stays off.
func TestServeWarnsOfAHalfConfiguredPlatform(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		set  func(*config.Config)
		want string
	}{
		{"discord public key alone", func(c *config.Config) { c.DiscordPublicKey = strings.Repeat("ab", 32) },
			`level=WARN msg="Discord is off: ASK_DISCORD_PUBLIC_KEY is set, but not ASK_DISCORD_BOT_TOKEN and ASK_DISCORD_APP_ID; set them to switch Discord on (docs/discord.md)"`},
		{"slack channel alone", func(c *config.Config) { c.SlackChannel = "C0123" },
			`level=WARN msg="Slack is off: ASK_SLACK_CHANNEL is set, but not ASK_SLACK_BOT_TOKEN with ASK_SLACK_SIGNING_SECRET (or ASK_SLACK_APP_TOKEN for Socket Mode); set them to switch Slack on (docs/slack.md)"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, logs := startPolicyService(t, c.set)
			if !strings.Contains(logs.String(), c.want) {
				t.Errorf("logs lack %s:\n%s", c.want, logs)
			}
			if !strings.Contains(logs.String(), `msg="askbridge serving"`) || !strings.Contains(logs.String(), "slack=false discord=false") {
				t.Errorf("the service does not say both platforms are off:\n%s", logs)
			}
		})
	}
}

// TestServeWarnsOfAnOpenNATS checks that joining a NATS that lets clients
// without credentials publish answer attempts is named in a warning at
// start, and joining one that refuses them is not.
func TestServeWarnsOfAnOpenNATS(t *testing.T) {
	t.Parallel()
	const warning = `level=WARN msg="NATS lets clients without credentials publish answer attempts: anyone who reaches it may answer and approve as anyone; run it with accounts (docs/deploy.md)"`
	open := testenv.StartExternalNATS(t).URL()
	guarded := "nats://ask:right-password@" + natsWithPassword(t, "ask", "right-password")
	for _, c := range []struct {
		name, url string
		warns     bool
	}{
		{"anyone may publish", open, true},
		{"a password is needed", guarded, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t, func(cfg *config.Config) { cfg.NATSURL = c.url })
			ctx, cancel := context.WithTimeout(context.Background(), 2*testenv.Patience)
			defer cancel()
			logs := &testenv.LockedBuffer{}
			s, err := startService(ctx, cfg, slog.New(slog.NewTextHandler(logs, nil)))
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			defer s.stop(context.Background())
			if got := strings.Contains(logs.String(), warning); got != c.warns {
				t.Errorf("warned %v, want %v:\n%s", got, c.warns, logs)
			}
			if strings.Contains(logs.String(), "right-password") {
				t.Errorf("the logs show the password:\n%s", logs)
			}
		})
	}
}
