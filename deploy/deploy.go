// Package deploy holds the deployment files askbridge ships, for the
// tests that run what an operator runs (docs/deploy.md).
package deploy

import _ "embed"

// NATSNode is deploy/nats/node.conf.tmpl: one node of a NATS cluster,
// a text/template.
//
//go:embed nats/node.conf.tmpl
var NATSNode string
