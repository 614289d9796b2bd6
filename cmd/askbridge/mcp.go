package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/principal"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/mcpfront"
	"github.com/askbridge/askbridge/policy"
)

// mcp serves the MCP front door on stdin and stdout (docs/mcp.md). It
// binds nothing: it reaches the running service through its NATS, as
// the other tools do. Stdout is the protocol's, so everything it says
// goes to stderr.
func (c *cli) mcp(ctx context.Context, args []string) int {
	fs, natsURL := c.flags("mcp")
	if code, ok := c.parse(fs, args, false); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(c.stderr, "askbridge mcp takes no arguments; it is configured by ASK_ variables (see docs/mcp.md)\n")
		return exitConfig
	}
	cfg, ok := loadConfig(c.stderr, "askbridge mcp: ")
	if !ok {
		return exitConfig
	}
	log := newLogger(c.stderr, cfg.LogLevel)
	allow, err := mcpAutoAllow(cfg)
	if err != nil {
		fmt.Fprintln(c.stderr, "askbridge mcp: "+err.Error())
		return exitConfig
	}
	c.ownerAs = mcpOwner(cfg.MCPTenant)
	c.natsOpts = append(c.natsOpts, nats.Name("askbridge-mcp"), nats.MaxReconnects(-1))
	nc, _, err := c.connect(*natsURL)
	if err != nil {
		fmt.Fprintln(c.stderr, "askbridge mcp: "+err.Error())
		return exitError
	}
	defer nc.Close()
	front, err := mcpfront.New(nc, mcpfront.Options{
		Tenant: cfg.MCPTenant, Progress: cfg.MCPProgress, AutoAllow: allow, Logger: log,
	})
	if err != nil {
		fmt.Fprintln(c.stderr, "askbridge mcp: "+err.Error())
		return exitConfig
	}
	if err := front.RunStdio(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		log.Error("mcp", "err", err)
		return exitError
	}
	return exitOK
}

// mcpOwner is what askbridge mcp run by the data directory's owner
// without credentials of its own connects as: an agent of the MCP tenant,
// as an agent's credentials in ASK_NATS_CREDS would make it. An MCP client
// is an agent, never an admin.
func mcpOwner(tenant string) *principal.Spec {
	return &principal.Spec{Kind: principal.KindAgent, Name: "mcp-owner", Tenant: tenant}
}

// mcpAutoAllow is ASK_MCP_AUTO_ALLOW and the policy file's mcp.auto_allow
// together.
func mcpAutoAllow(cfg *config.Config) ([]string, error) {
	allow := cfg.MCPAutoAllow
	if cfg.Policy == "" {
		return allow, nil
	}
	p, err := policy.Load(cfg.Policy)
	if err != nil {
		return nil, err
	}
	return append(allow, p.MCPAutoAllow()...), nil
}

// routeMCP serves the MCP front door's streamable HTTP at /mcp, for
// clients with the bearer token ASK_MCP_TOKEN (docs/mcp.md). allow is
// ASK_MCP_AUTO_ALLOW and the policy's mcp.auto_allow (serviceAutoAllow).
func routeMCP(mux *http.ServeMux, nc *nats.Conn, cfg *config.Config, allow []string, log *slog.Logger) (*mcpfront.Front, error) {
	front, err := mcpfront.New(nc, mcpfront.Options{
		Tenant: cfg.MCPTenant, Progress: cfg.MCPProgress, AutoAllow: allow, Logger: log,
	})
	if err != nil {
		return nil, &bridge.SettingError{Err: fmt.Errorf("ASK_MCP_AUTO_ALLOW: %w", err)}
	}
	h := front.Handler(cfg.MCPToken)
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A tool call waits as long as a person takes, streaming progress:
		// the server's write timeout, meant for pages, must not end it.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		h.ServeHTTP(w, r)
	}))
	return front, nil
}

// serviceAutoAllow is ASK_MCP_AUTO_ALLOW and the mcp.auto_allow of p, the
// policy in force.
func serviceAutoAllow(cfg *config.Config, p *policy.Policy) []string {
	return append(slices.Clone(cfg.MCPAutoAllow), p.MCPAutoAllow()...)
}
