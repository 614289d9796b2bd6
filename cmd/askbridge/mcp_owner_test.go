package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestMCPOwnerConnectsAsAnAgent: askbridge mcp run by the data
// directory's owner without credentials of its own connects as an agent
// of the MCP tenant, so the MCP client may not use JetStream's API as an
// admin does; the owner's other tools still connect as an admin.
func TestMCPOwnerConnectsAsAnAgent(t *testing.T) {
	t.Parallel()
	s, cfg := startTestService(t, nil)
	owner := func() *cli {
		return &cli{stdout: io.Discard, stderr: io.Discard, identity: "cli:owner", natsURL: s.natsURL(), dataDir: cfg.DataDir}
	}
	admin := owner()
	nc, js, err := admin.connect("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
	defer cancel()
	if _, err := js.Stream(ctx, bridge.StreamResumes); err != nil {
		t.Fatalf("the owner's tools cannot read %s: %v", bridge.StreamResumes, err)
	}
	nc.Close()

	refused := make(chan error, 8)
	mcp := owner()
	mcp.ownerAs = mcpOwner(cfg.MCPTenant)
	mcp.natsOpts = append(mcp.natsOpts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		refused <- err
	}))
	nc, js, err = mcp.connect("")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if mcp.credKind != "agent" {
		t.Fatalf("askbridge mcp as the owner connected as %q, want an agent", mcp.credKind)
	}
	// The request is refused at the server; its own wait only ends it.
	short, stop := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer stop()
	_, _ = js.Stream(short, bridge.StreamResumes)
	select {
	case err := <-refused:
		if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), "$JS.API.STREAM.INFO") {
			t.Fatalf("askbridge mcp as the owner: %v; want a permissions violation for JetStream's API", err)
		}
	case <-time.After(testenv.Patience):
		t.Fatal("askbridge mcp as the owner used JetStream's API: it connected as an admin")
	}
}
