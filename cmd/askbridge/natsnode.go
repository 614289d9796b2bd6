package main

import (
	"context"
	"fmt"

	"github.com/askbridge/askbridge/internal/testenv/cluster"
)

// natsNode runs one nats-server from a configuration file until SIGTERM:
// the node process of `askbridge torture --cluster`, which SIGKILLs it. It
// is not in the usage: operators run nats-server itself.
func (c *cli) natsNode(ctx context.Context, args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(c.stderr, "askbridge nats-node takes one argument: a nats-server configuration file")
		return exitConfig
	}
	if err := cluster.RunNode(ctx, args[0]); err != nil {
		return c.fail("nats-node: %v", err)
	}
	return exitOK
}
