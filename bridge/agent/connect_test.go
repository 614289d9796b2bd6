package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/bridge/principal"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestConnectReadsRepliesOnTheCredentialsInbox: an agent that connects
// with its .creds file through Connect gets the gate's reply, which
// reaches it on the credential's own inbox prefix; connected with the
// credential alone, on the default inbox, it gets none.
func TestConnectReadsRepliesOnTheCredentialsInbox(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n, err := bridge.ConnectNATS(context.Background(), bridge.NATSOptions{Listen: "127.0.0.1:0", StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	keys, err := principal.LoadKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	issued, err := keys.Mint(principal.Spec{Kind: principal.KindAgent, Name: "report-bot", Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(t.TempDir(), "report-bot.creds")
	if err := os.WriteFile(creds, issued.Creds, 0o600); err != nil {
		t.Fatal(err)
	}
	// The runtime's gate, answering every request.
	if _, err := n.Conn.Subscribe(bridge.GateSubject("acme", ">"), func(m *nats.Msg) {
		_ = m.Respond([]byte(`{"allowed":true,"code":"allowed"}`))
	}); err != nil {
		t.Fatal(err)
	}
	if err := n.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	gate := func(ctx context.Context, nc *nats.Conn) (bridge.GateReply, error) {
		c, err := agent.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return c.Gate(ctx, "acme", "job-1", 1, "send_report")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
	defer cancel()

	nc, err := agent.Connect(n.ClientURL(), creds, nats.Name("report-bot"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if reply, err := gate(ctx, nc); err != nil || !reply.Allowed {
		t.Fatalf("gate through Connect: %+v, %v", reply, err)
	}

	// The credential alone: the server refuses the subscription to the
	// default inbox, where the reply would come.
	refused := make(chan error, 8)
	bare, err := nats.Connect(n.ClientURL(), nats.UserCredentials(creds), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case refused <- err:
		default:
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	bareCtx, bareCancel := context.WithCancel(ctx)
	got := make(chan error, 1)
	go func() {
		_, err := gate(bareCtx, bare)
		got <- err
	}()
	select {
	case err := <-refused:
		if !strings.Contains(err.Error(), "Permissions Violation for Subscription to \"_INBOX.") {
			t.Fatalf("the bare connection's error: %v", err)
		}
	case err := <-got:
		t.Fatalf("the gate answered a connection on the default inbox: %v", err)
	case <-ctx.Done():
		t.Fatal("the server never refused the default inbox")
	}
	bareCancel()
	if err := <-got; err == nil {
		t.Fatal("a reply reached an inbox the credential may not read")
	}

	if _, err := agent.Connect(n.ClientURL(), filepath.Join(t.TempDir(), "missing.creds")); err == nil || !strings.Contains(err.Error(), "missing.creds") {
		t.Fatalf("Connect with no credentials file: %v", err)
	}
}
