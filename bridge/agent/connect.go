package agent

import (
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge/principal"
)

// Connect connects to askbridge's NATS at url (one URL, or several
// separated by commas) with the agent credential in credsPath, the .creds
// file `askbridge creds agent` wrote. It presents the credential
// (nats.UserCredentials) and reads replies on the one inbox prefix the
// credential may subscribe to, _INBOX.<its name>. (nats.CustomInboxPrefix):
// on any other, every request's reply would be refused. opts come after
// these, such as nats.Name or reconnect handlers.
func Connect(url, credsPath string, opts ...nats.Option) (*nats.Conn, error) {
	name, _, err := principal.ReadCreds(credsPath)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if principal.CheckName(name) != nil {
		return nil, fmt.Errorf("agent: credentials %s: not a credential askbridge issued (its name is no inbox prefix); make one with askbridge creds agent", credsPath)
	}
	all := append([]nats.Option{nats.UserCredentials(credsPath), nats.CustomInboxPrefix(principal.InboxPrefix(name))}, opts...)
	nc, err := nats.Connect(url, all...)
	if err != nil {
		return nil, fmt.Errorf("agent: connect with credentials %s: %w", credsPath, err)
	}
	return nc, nil
}
