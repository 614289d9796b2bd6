package main

import (
	"errors"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge/principal"
)

// benchTenant is the tenant the bench asks in.
const benchTenant = "bench"

// benchConnect connects to the NATS of a service whose data directory is
// dataDir, as its owner may: as an admin, or with asAgent as an agent of
// the bench's tenant, whose questions take the path every agent's take
// (the intake; docs/design.md, "Principals on the bus"). A NATS without
// askbridge's keys there (a cluster) is connected to as it is.
func benchConnect(url, dataDir string, asAgent bool, opts ...nats.Option) (*nats.Conn, error) {
	keys, err := principal.LoadKeys(dataDir)
	switch {
	case errors.Is(err, principal.ErrNoKeys):
		return nats.Connect(url, opts...)
	case err != nil:
		return nil, err
	}
	spec := principal.Spec{Kind: principal.KindAdmin, Name: "bench-admin"}
	if asAgent {
		spec = principal.Spec{Kind: principal.KindAgent, Name: "bench-agent", Tenant: benchTenant}
		opts = append(opts, nats.CustomInboxPrefix(principal.InboxPrefix(spec.Name)))
	}
	issued, err := keys.Mint(spec)
	if err != nil {
		return nil, err
	}
	return nats.Connect(url, append(opts, nats.UserJWTAndSeed(issued.JWT, issued.Seed))...)
}
