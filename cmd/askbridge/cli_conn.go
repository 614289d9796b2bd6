package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/bridge/principal"
	"github.com/askbridge/askbridge/config"
)

// agentClient connects as connect does and makes the agent client the
// commands that act as an agent use; closeNATS closes the connection.
func (c *cli) agentClient(flagURL string) (client *agent.Client, closeNATS func(), err error) {
	nc, _, err := c.connect(flagURL)
	if err != nil {
		return nil, nil, err
	}
	if client, err = agent.New(nc); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return client, nc.Close, nil
}

// settings are the tools' settings (config.CLI: the environment, with
// the service's defaults), less what the command line or a test set on
// c: --nats, --creds, the data directory.
func (c *cli) settings() (config.CLI, error) {
	s, err := config.LoadCLI()
	if err != nil {
		return s, err
	}
	s.NATSURL = cmp.Or(c.natsURL, s.NATSURL)
	s.NATSCreds = cmp.Or(c.creds, s.NATSCreds)
	s.DataDir = cmp.Or(c.dataDir, s.DataDir)
	return s, nil
}

// connect opens NATS: the flag, then ASK_NATS_URL, then ASK_NATS_LISTEN.
func (c *cli) connect(flagURL string) (*nats.Conn, jetstream.JetStream, error) {
	s, err := c.settings()
	if err != nil {
		return nil, nil, err
	}
	s.NATSURL = cmp.Or(flagURL, s.NATSURL)
	opts, err := c.credentials()
	if err != nil {
		return nil, nil, err
	}
	url, err := s.NATSClientURL()
	if err != nil {
		return nil, nil, err
	}
	nc, err := nats.Connect(url, append(append(opts, nats.Name("askbridge-cli")), c.natsOpts...)...)
	if err != nil {
		why := err.Error()
		if ue := (*neturl.Error)(nil); errors.As(err, &ue) {
			why = "the URL cannot be read" // its text would repeat the URL, password and all
		}
		if errors.Is(err, nats.ErrAuthorization) {
			return nil, nil, fmt.Errorf("NATS at %s refused the connection: %s; an admin gives you credentials with 'askbridge creds person --as cli:%s --out FILE' (or 'creds agent'), which you pass with --creds FILE or ASK_NATS_CREDS", redactURLs(url), why, strings.TrimPrefix(c.identity, "cli:"))
		}
		return nil, nil, fmt.Errorf("cannot reach NATS at %s (is 'askbridge serve' running?): %s", redactURLs(url), why)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// credentials are the options that present the CLI's credentials:
// --creds or ASK_NATS_CREDS, read with the inbox prefix they allow; else,
// for the data directory's owner, a credential made from its keys in
// memory, an admin's unless ownerAs says otherwise (docs/contract.md,
// "Principals on the bus"); else none.
func (c *cli) credentials() ([]nats.Option, error) {
	s, err := c.settings()
	if err != nil {
		return nil, err
	}
	if path := s.NATSCreds; path != "" {
		name, kind, err := principal.ReadCreds(path)
		if err != nil {
			return nil, err
		}
		c.credKind = kind
		return []nats.Option{nats.UserCredentials(path), nats.CustomInboxPrefix(principal.InboxPrefix(name))}, nil
	}
	keys, err := principal.LoadKeys(s.DataDir)
	if err != nil {
		return nil, nil // not the owner here: try without, and say how to get them
	}
	spec := principal.Spec{Kind: principal.KindAdmin, Name: "cli-owner"}
	if c.ownerAs != nil {
		spec = *c.ownerAs
	}
	issued, err := keys.Mint(spec)
	if err != nil {
		return nil, err
	}
	c.credKind = spec.Kind
	return []nats.Option{nats.UserJWTAndSeed(issued.JWT, issued.Seed), nats.CustomInboxPrefix(principal.InboxPrefix(spec.Name))}, nil
}

// redactURLs is a comma-separated list of NATS URLs with their passwords
// and tokens hidden, for messages.
func redactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if !strings.Contains(p, "://") {
			// nats.go reads user:pw@host as nats://user:pw@host; url.Parse
			// would read "user" as the scheme and find no password.
			p = "nats://" + p
		}
		u, err := neturl.Parse(p)
		switch {
		case err != nil:
			parts[i] = "(an unreadable URL)"
		case u.User == nil:
		default:
			if _, has := u.User.Password(); !has {
				u.User = neturl.User("xxxxx") // a token alone
			}
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

func (c *cli) request(nc *nats.Conn, subject string, req, reply any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := bridge.Request(ctx, nc, subject, req, reply)
	if errors.Is(err, nats.ErrNoResponders) {
		return errors.New("no askbridge runtime answered (is 'askbridge serve' running?)")
	}
	return err
}
